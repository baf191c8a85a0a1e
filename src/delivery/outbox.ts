/**
 * The events outbox the OAuth service writes (APP_UNAUTHORIZED, APP_UNINSTALLED): each record
 * becomes one event, exactly once across every daemon of the store. The outbox record is removed
 * in the same commit that writes the event's pending record, on condition that it is still there
 * as read: of two daemons draining at once one commit wins, the other conflicts and moves on.
 */
import type { Logger } from '../logger.js';
import { StoreConflict, type Store } from '../store/types.js';
import type { AppsService } from '../services/apps.js';
import { EVENTS_OUTBOX, OUTBOX_CHANNEL, type OutboxEventRecord } from '../services/oauth/records.js';
import { eventPayload } from './payloads.js';
import type { EnqueueOptions, EventToSend } from './worker.js';

interface OutboxDeps {
  store: Store;
  logger: Logger;
  apps: AppsService;
  enqueueEvents(events: EventToSend[], opts: EnqueueOptions): Promise<unknown>;
}

export function createOutboxDrain(deps: OutboxDeps) {
  const { store, logger, apps, enqueueEvents } = deps;
  /** Outbox records this daemon is turning into events now (the next drain leaves them). */
  const taking = new Set<string>();

  async function take(ev: OutboxEventRecord): Promise<void> {
    const gone = [{ table: EVENTS_OUTBOX, id: ev.id, value: null }];
    const still = [{ table: EVENTS_OUTBOX, id: ev.id, value: ev }];
    try {
      const app = await apps.byId(ev.appId);
      const subscribed = app?.manifest.eventSubscriptions?.events?.includes(ev.eventType);
      if (!app || !subscribed) return await store.commit(gone, still);
      const payload = eventPayload(ev.eventType, ev.workspaceId, ev.workspaceUserIds, ev.body);
      await enqueueEvents([{ app, workspaceId: ev.workspaceId, userId: ev.workspaceUserIds[0] ?? '', eventType: ev.eventType, payload }], { extra: gone, expect: still });
    } catch (e) {
      if (e instanceof StoreConflict) return; // another daemon took it
      logger.error('event delivery failed', { error: (e as Error).message });
    }
  }

  /** Start turning every outbox record into its event; resolves (to whether there were any) once each was taken (not delivered). */
  async function drain(): Promise<boolean> {
    const evs = await store.all<OutboxEventRecord>(EVENTS_OUTBOX);
    for (const ev of evs) {
      if (taking.has(ev.id)) continue;
      taking.add(ev.id);
      void take(ev).finally(() => taking.delete(ev.id));
    }
    return evs.length > 0;
  }

  /** Call `wake` whenever the outbox may have been written (a hint, or hints lost); returns the unsubscribe. */
  const watch = (wake: () => void) => store.subscribe(OUTBOX_CHANNEL, wake, wake);

  return { drain, watch };
}
