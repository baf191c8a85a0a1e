/**
 * The workspace as the console shows it to the signed-in person: themself as an actor, the names of its people, the
 * channels they see (labelled, with links), the apps' menus.
 */
import type { DeliveriesService } from '../../../services/deliveries.js';
import type { createWorkspace } from '../../../services/workspace/workspace.js';
import type { ShortcutChoice } from '../../pages/console/workspace.js';
import type { Signed } from './common.js';

export type Workspace = ReturnType<typeof createWorkspace>;
type Deliveries = Pick<DeliveriesService, 'appsFor'>;

export const channelHref = (c: string, rootId?: string) =>
  `/console/channels/${encodeURIComponent(c)}${rootId ? `/threads/${encodeURIComponent(rootId)}` : ''}`;

/** The names of a workspace's people (bots included), read once per page: the templates ask for them synchronously. */
export interface People {
  name(id: string): string;
  isBot(id: string): boolean;
}

export function workspaceView(ws: Workspace, deliveries: Deliveries) {
  const actor = (s: Signed) => ws.person(s.principal.workspaceUserId);
  async function people(s: Signed): Promise<People> {
    const byId = new Map((await ws.users.usersOf(s.principal.workspaceId)).map((u) => [u.id, u]));
    return { name: (id) => byId.get(id)?.name ?? id, isBot: (id) => !!byId.get(id)?.isBot };
  }
  const label = (ch: { channelType: string; name?: string; members: string[] }, me: string, who: People) =>
    ch.name
      ? `#${ch.name}`
      : ch.channelType === 'SELF'
        ? 'Notes to self'
        : `Direct: ${ch.members
            .filter((m) => m !== me)
            .map(who.name)
            .join(', ')}`;

  /** The channels the person sees, labelled for the navigation. */
  async function channels(s: Signed, who: People) {
    const list = await ws.channels.list(await actor(s));
    return list.map((c) => ({
      id: c.channel.id,
      label: label({ ...c.channel, members: c.users ?? [] }, s.principal.workspaceUserId, who),
      ...(c.channel.isArchived ? { archived: true } : {}),
    }));
  }

  /** The apps' commands, shortcuts (global, on a message) and home views, for the person's menus. */
  async function menus(s: Signed, currentHome?: string) {
    const apps = await deliveries.appsFor(s.principal);
    const me = s.principal.workspaceUserId;
    const shortcutsOf = (type: 'GLOBAL' | 'ON_MESSAGE'): ShortcutChoice[] =>
      apps.flatMap((a) =>
        (a.manifest.shortcuts ?? [])
          .filter((x) => x.shortcutType === type)
          .map((x) => ({
            value: JSON.stringify({ appId: a.id, name: x.name }),
            label: `${x.displayName} (${a.manifest.displayName})`,
          })),
      );
    const published = await Promise.all(
      apps.map((a) => (a.manifest.defaultHomeView?.enabled ? true : ws.profiles.homeView(a.id, me))),
    );
    return {
      commands: apps.flatMap((a) =>
        (a.manifest.slashCommands ?? []).map((c) => ({
          command: c.command,
          hint: [c.usageHint, c.description].filter(Boolean).join(' — '),
        })),
      ),
      shortcuts: shortcutsOf('GLOBAL'),
      messageShortcuts: shortcutsOf('ON_MESSAGE'),
      homes: apps
        .filter((_a, i) => published[i])
        .map((a) => ({ appId: a.id, label: a.manifest.displayName, current: a.id === currentHome })),
    };
  }

  return { actor, people, label, channels, menus };
}
