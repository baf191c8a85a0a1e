/**
 * The events outbox: every event an app is sent because something happened (docs/protocol.md
 * §5.3) is first a record of this table, written in the same commit as the change that caused it,
 * so that nothing acknowledged can lose its events. The delivery worker drains it (delivery/outbox-drain.ts):
 * each record becomes its events exactly once across every daemon of the store.
 *
 * Two kinds of record:
 * - an app event (APP_UNAUTHORIZED, APP_UNINSTALLED: services/oauth/revocation.ts), for one app and
 *   the users concerned, decided when the revocation is made;
 * - a workspace event (messages, reactions, channels, users, groups: services/workspace/), for every
 *   app that qualifies, decided when the worker fans it out (services/workspace/events.ts), except who
 *   could see what happened, which is decided here, at the change (`Audience`).
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Change, Store } from '../store/types.js';
import {
  EVENTS_OUTBOX,
  type AppEventType,
  type AppOutboxEvent,
  type Audience,
  type OutboxEventRecord,
  type OutboxRecordBase,
  type WorkspaceEventType,
  type WorkspaceOutboxEvent,
} from '../model/events.js';

/**
 * A hint on this store channel says the outbox was written: every daemon's worker drains it now, not at its next poll.
 */
const OUTBOX_CHANNEL = 'events_outbox';

export interface OutboxWriterDeps {
  store: Store;
  clock: Clock;
  /** This daemon among those sharing the store: its own hints are heard directly, not through the store. */
  instanceId: string;
}

export function createOutboxWriter(deps: OutboxWriterDeps) {
  const { store, clock, instanceId } = deps;
  const local = new Set<() => void>();
  let lastSeq = 0;

  function record(
    fields:
      | Omit<AppOutboxEvent, keyof OutboxRecordBase | 'body'>
      | Omit<WorkspaceOutboxEvent, keyof OutboxRecordBase | 'body'>,
    workspaceId: string,
    body: Record<string, unknown>,
  ): Change {
    const now = clock.now();
    lastSeq = Math.max(now, lastSeq + 1);
    const ev: OutboxEventRecord = {
      id: newId('evt'),
      ...fields,
      workspaceId,
      body,
      createdAt: new Date(now).toISOString(),
      seq: lastSeq,
    };
    return { table: EVENTS_OUTBOX, id: ev.id, value: ev };
  }

  return {
    /** The outbox record of an app event, to commit with the revocation that causes it. */
    appEvent: (
      appId: string,
      workspaceId: string,
      eventType: AppEventType,
      workspaceUserIds: string[],
      body: Record<string, unknown>,
    ): Change => record({ appId, eventType, workspaceUserIds }, workspaceId, body),
    /**
     * The outbox record of a workspace event, to commit with the change that causes it. Its body gets the platform's
     * `rid` (the request that caused it): an id of this change, made here, so every copy and retry carries the same.
     */
    workspaceEvent: (
      eventType: WorkspaceEventType,
      workspaceId: string,
      audience: Audience,
      body: Record<string, unknown>,
    ): Change => record({ eventType, audience }, workspaceId, { ...body, rid: newId('req', 12) }),
    /**
     * After a commit that wrote to the outbox: a hint only (a worker that misses it drains at its
     * next poll). This daemon's worker hears it at once; the others through the store.
     */
    written(): void {
      for (const fn of local) queueMicrotask(fn);
      void store.publish(OUTBOX_CHANNEL, instanceId).catch(() => {});
    },
    /**
     * Call `fn` whenever the outbox may have been written (a hint from any daemon, or hints lost); returns the
     * unsubscribe.
     */
    onWritten(fn: () => void): () => void {
      local.add(fn);
      const stop = store.subscribe(OUTBOX_CHANNEL, (from) => from !== instanceId && fn(), fn);
      return () => {
        local.delete(fn);
        stop();
      };
    },
  };
}

export type OutboxWriter = ReturnType<typeof createOutboxWriter>;
