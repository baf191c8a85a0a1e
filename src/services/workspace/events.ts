/**
 * Workspace activity → events (docs/protocol.md §5.3). A change (a message posted or edited, a
 * reaction, a channel made, archived or deleted, a user joined or changed, a group made or
 * changed) writes its event to the events outbox in the same commit (outbox-writer.ts), with who
 * could see it then (`audienceOf`). When the delivery worker drains the outbox, `recipientsOf`
 * decides which apps get it: one copy per app installed in the workspace that subscribes to the
 * event and has an authorized user who could see it and for whom the app holds the event's scope
 * (as its bot, or through that user's own grant), listing those users.
 *
 * Installations, authorizations and scopes are read when the event is fanned out, not when the
 * change is made: an app uninstalled or a user who revoked meanwhile is sent nothing (its token
 * no longer works, and APP_UNINSTALLED or APP_UNAUTHORIZED was its last event), and the post that
 * caused the event did not wait for those reads. The reads are the same few whatever the number
 * of apps: per workspace, its installations and authorizations (two finds), and the apps (one read).
 */
import type { Store } from '../../store/types.js';
import { EVENT_SCOPES } from '../../validation/manifest.js';
import type { OutboxWriter } from '../outbox-writer.js';
import type { Audience, WorkspaceOutboxEvent } from '../../model/events.js';
import type { AppRecord } from '../../model/identity.js';
import { IDENTITY_TABLES } from '../../model/identity.js';
import { OAUTH_TABLES, type AuthorizationRecord } from '../../model/oauth.js';
import type { ChannelRecord } from '../../model/workspace.js';
import { must } from '../../must.js';

/** What the workspace services need of the outbox: an event's record for their commit, and the hint after it. */
export type WorkspaceEvents = Pick<OutboxWriter, 'workspaceEvent' | 'written'>;

/**
 * Who can see what happens in the channel, as it is now (channels.ts canSee: a public one, everyone in the workspace).
 */
export const audienceOf = (ch: ChannelRecord): Audience =>
  ch.channelType === 'PUBLIC' || ch.everyone ? { everyone: true } : { members: [...ch.members] };

/** Everyone in the workspace sees its users and groups. */
export const EVERYONE: Audience = { everyone: true };

/**
 * An app to send an event to, and the users it concerns (the payload's workspaceUserIds; the first is the delivery's
 * user).
 */
export interface Recipient {
  app: AppRecord;
  workspaceUserIds: string[];
}

/** The order records were made in (the store answers in no order). */
const byCreation = (x: { createdAt: string; id: string }, y: { createdAt: string; id: string }) =>
  x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0;

export function createEventRecipients(deps: { store: Store }) {
  const { store } = deps;
  /** What the fan-out of a workspace's events reads, once for all of them. */
  async function grantsIn(workspaceId: string) {
    const [installs, azs] = await Promise.all([
      store.find(OAUTH_TABLES.installations, 'workspaceId', workspaceId),
      store.find(OAUTH_TABLES.authorizations, 'workspaceId', workspaceId),
    ]);
    installs.sort(byCreation);
    const apps = installs.length
      ? await store.getMany(
          installs.map((i) => ({ table: IDENTITY_TABLES.apps, id: i.appId })),
          { shared: true },
        )
      : [];
    const byApp = new Map<string, AuthorizationRecord[]>();
    for (const az of azs.sort(byCreation)) byApp.set(az.appId, [...(byApp.get(az.appId) ?? []), az]);
    return installs.map((inst, i) => ({ inst, app: apps[i], azs: byApp.get(inst.appId) ?? [] }));
  }

  /** For each event (in the order given), the apps it goes to. */
  async function recipientsOf(events: readonly WorkspaceOutboxEvent[]): Promise<Recipient[][]> {
    const read = new Map<string, ReturnType<typeof grantsIn>>();
    for (const ev of events) if (!read.has(ev.workspaceId)) read.set(ev.workspaceId, grantsIn(ev.workspaceId));
    const out: Recipient[][] = [];
    for (const ev of events) {
      const need = EVENT_SCOPES[ev.eventType] ?? null;
      const sees = 'members' in ev.audience ? new Set(ev.audience.members) : undefined;
      const to: Recipient[] = [];
      for (const { inst, app, azs } of await must(read.get(ev.workspaceId))) {
        if (!app || !app.manifest.eventSubscriptions?.events?.includes(ev.eventType)) continue;
        const botHas = !need || (!!inst.botTokenId && inst.botScopes.includes(need));
        // an authorization is a user of this workspace: everyone there sees what everyone sees
        const users = azs
          .filter((az) => (!sees || sees.has(az.workspaceUserId)) && (botHas || az.userScopes.includes(must(need))))
          .map((az) => az.workspaceUserId);
        if (users.length) to.push({ app, workspaceUserIds: users });
      }
      out.push(to);
    }
    return out;
  }

  return { recipientsOf };
}
