/**
 * The records of the events outbox (services/outbox-writer.ts writes them with the change that
 * causes them; delivery/outbox-drain.ts drains them): an app event, for one app and the users concerned,
 * or a workspace event, whose apps are decided when it is fanned out, except who could see what
 * happened, which is recorded at the change (`Audience`).
 */
import type { WorkspaceUserRecord } from './identity.js';

export const EVENTS_OUTBOX = 'eventsOutbox';
export type AppEventType = 'APP_UNAUTHORIZED' | 'APP_UNINSTALLED';

export type WorkspaceEventType =
  | 'NEW_MESSAGE'
  | 'UPDATED_MESSAGE'
  | 'REACTION_ADDED'
  | 'CHANNEL_CREATED'
  | 'CHANNEL_ARCHIVED'
  | 'CHANNEL_DELETED'
  | 'WORKSPACE_USER_JOINED'
  | 'WORKSPACE_USER_UPDATED'
  | 'WORKSPACE_USER_GROUP_CREATED'
  | 'WORKSPACE_USER_GROUP_UPDATED';

/**
 * Who could see what happened, as it was at the change: everyone in the workspace (a public channel,
 * a user, a group), or the members of a private or direct channel then. Recorded with the event so
 * that the apps reached do not depend on when the outbox is drained: a member removed from the
 * channel a moment after a post was one of those who saw it, one added after was not, and a channel
 * deleted by then can no longer be read.
 */
export type Audience = { everyone: true } | { members: string[] };

export interface OutboxRecordBase {
  id: string; // evt_…
  workspaceId: string;
  /** The docs/protocol.md §5 body object; the delivery worker JSON-encodes it. */
  body: Record<string, unknown>;
  createdAt: string;
  /**
   * The order records were written in (ms, above every earlier one of this daemon); the id on ties. Older records lack
   * it.
   */
  seq?: number;
}

export interface AppOutboxEvent extends OutboxRecordBase {
  appId: string;
  eventType: AppEventType;
  /** The users concerned who had authorized the app (for APP_UNAUTHORIZED, the user who unauthorized). */
  workspaceUserIds: string[];
}

export interface WorkspaceOutboxEvent extends OutboxRecordBase {
  eventType: WorkspaceEventType;
  audience: Audience;
}

export type OutboxEventRecord = AppOutboxEvent | WorkspaceOutboxEvent;

export const isAppEvent = (e: OutboxEventRecord): e is AppOutboxEvent => 'appId' in e;

/** The order the outbox is drained in: the order its records were written in, as far as the daemons' clocks tell. */
export const outboxOrder = (a: OutboxEventRecord, b: OutboxEventRecord): number =>
  (a.seq ?? 0) - (b.seq ?? 0) ||
  (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0) ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The body of WORKSPACE_USER_JOINED for a user (WORKSPACE_USER_UPDATED starts from it; docs/protocol.md §5.3), for a
 * user who joined and for deliver-test's made-up one alike. The outbox adds `rid`.
 */
export function userEventBody(
  u: Pick<WorkspaceUserRecord, 'id' | 'workspaceId' | 'name' | 'email' | 'title'>,
): Record<string, unknown> {
  return {
    uN: u.name,
    uE: u.email,
    uId: u.id,
    afp: '',
    asp: '',
    wId: u.workspaceId,
    ty: 'WORKSPACE_USER_JOINED',
    tz: 'UTC',
    sts: '',
    pt: u.title ?? '',
    pp: '',
    cs: null,
    st: 'ACTIVATED',
    ro: 'USER',
    au: '',
    ib: '',
  };
}
