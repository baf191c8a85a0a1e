/** What the workspace's console routes share: the person as an actor, names, channel labels, the apps' menus. */
import type { DeliveriesService, DeliveryRecord } from '../../../services/deliveries.js';
import type { createWorkspace } from '../../../services/workspace/workspace.js';
import type { ShortcutChoice } from '../../pages/console/workspace.js';
import type { Signed } from './common.js';
import type { PersonState } from '../../person-state.js';
import type { Choice } from '../../../model/workspace.js';
import { pickOf, type Interaction } from './block-actions.js';

export type Workspace = ReturnType<typeof createWorkspace>;
type Deliveries = Pick<DeliveriesService, 'invokeSlashCommand' | 'interact' | 'appsFor'>;

export const channelHref = (c: string, rootId?: string) => `/console/channels/${encodeURIComponent(c)}${rootId ? `/threads/${encodeURIComponent(rootId)}` : ''}`;

/** What the person chose in the elements of `source` (a message, a view), for the page to show again. */
export const pickedIn = (picks: Choice[], source: string) => (onAction: string, key: string) => {
  const p = picks.find((x) => x.source === source && x.onAction === onAction && x.key === key);
  return p && (p.values ? { values: p.values } : { value: p.value ?? '' });
};

/** The names of a workspace's people (bots included), read once per page: the templates ask for them synchronously. */
export interface People {
  name(id: string): string;
  isBot(id: string): boolean;
}

export function workspaceHelpers(ws: Workspace, deliveries: Deliveries, state: PersonState) {
  const actor = (s: Signed) => ws.person(s.principal.workspaceUserId);
  async function people(s: Signed): Promise<People> {
    const byId = new Map((await ws.users.usersOf(s.principal.workspaceId)).map((u) => [u.id, u]));
    return { name: (id) => byId.get(id)?.name ?? id, isBot: (id) => !!byId.get(id)?.isBot };
  }
  const label = (ch: { channelType: string; name?: string; members: string[] }, me: string, who: People) =>
    ch.name ? `#${ch.name}` : ch.channelType === 'SELF' ? 'Notes to self' : `Direct: ${ch.members.filter((m) => m !== me).map(who.name).join(', ')}`;

  /** The channels the person sees, labelled for the navigation. */
  async function channels(s: Signed, who: People) {
    const list = (await ws.channels.list(await actor(s))) as unknown as Array<{ channel: { id: string; channelType: string; name?: string }; users?: string[] }>;
    return list.map((c) => ({ id: c.channel.id, label: label({ ...c.channel, members: c.users ?? [] }, s.principal.workspaceUserId, who) }));
  }

  /** The apps' commands, shortcuts (global, on a message) and home views, for the person's menus. */
  async function menus(s: Signed, currentHome?: string) {
    const apps = await deliveries.appsFor(s.principal);
    const me = s.principal.workspaceUserId;
    const shortcutsOf = (type: 'GLOBAL' | 'ON_MESSAGE'): ShortcutChoice[] =>
      apps.flatMap((a) => (a.manifest.shortcuts ?? []).filter((x) => x.shortcutType === type).map((x) => ({ value: JSON.stringify({ appId: a.id, name: x.name }), label: `${x.displayName} (${a.manifest.displayName})` })));
    const published = await Promise.all(apps.map((a) => (a.manifest.defaultHomeView?.enabled ? true : ws.profiles.homeView(a.id, me))));
    return {
      commands: apps.flatMap((a) => (a.manifest.slashCommands ?? []).map((c) => ({ command: c.command, hint: [c.usageHint, c.description].filter(Boolean).join(' — ') }))),
      shortcuts: shortcutsOf('GLOBAL'),
      messageShortcuts: shortcutsOf('ON_MESSAGE'),
      homes: apps.filter((_a, i) => published[i]).map((a) => ({ appId: a.id, label: a.manifest.displayName, current: a.id === currentHome })),
    };
  }

  /** What the person sees of an app's answer (see PersonState.follow); the page to go to. */
  const follow = async (s: Signed, rec: DeliveryRecord, ctx: { channelId: string; returnTo: string; rootId?: string }, closeOnAck = false) =>
    state.follow(s.principal.workspaceUserId, rec, String((await deliveries.appsFor(s.principal)).find((a) => a.id === rec.appId)?.manifest.displayName ?? rec.appName), ctx, closeOnAck);

  /**
   * A use of an element of the app's message or view: BLOCK_INTERACTION to the app; what was
   * chosen is kept first, so a page drawn while the app answers already shows it.
   */
  async function interactWith(s: Signed, appId: string, source: { sourceType: 'MESSAGE' | 'EPHEMERAL_MESSAGE' | 'VIEW'; sourceId: string; channelId: string; view?: Record<string, unknown> }, i: Interaction): Promise<DeliveryRecord> {
    const pick = pickOf(i);
    if (pick) await state.pick(s.principal.workspaceUserId, { source: source.sourceId, onAction: i.onAction, key: i.key!, ...pick });
    return deliveries.interact(s.principal, appId, 'block-interaction', { ...source, onAction: i.onAction, actionType: i.actionType, ...(i.values ? { values: i.values } : { value: i.value ?? '' }) });
  }

  return { actor, people, label, channels, menus, follow, interactWith };
}
