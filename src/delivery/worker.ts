/**
 * The delivery worker: events. An event is durable (a pending record in the store) before its
 * first attempt, and is tried again on the retry schedule until it is delivered, refused for
 * good or the schedule runs out; pending records survive restarts. The worker also drains the
 * events outbox the OAuth service writes (APP_UNAUTHORIZED, APP_UNINSTALLED), and hears from
 * the socket-mode queue when a kept event was sent or dropped there.
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';
import type { Store } from '../store/types.js';
import type { AppsService } from '../services/apps.js';
import type { AppRecord } from '../services/records.js';
import { EVENTS_OUTBOX, type OutboxEventRecord } from '../services/oauth/records.js';
import type { Dispatcher } from './dispatcher.js';
import type { DeliveryRecord } from './log.js';
import { eventPayload } from './payloads.js';
import { nextRetryDelayMs, parseSchedule, retryable } from './retry-policy.js';
import type { SocketTransport } from './socket-transport.js';
import type { AttemptResult } from './types.js';

/** Events waiting for their next attempt; in the main store so they survive a restart. */
const PENDING_TABLE = 'pendingDeliveries';

export interface PendingDelivery {
  id: string;
  appId: string;
  workspaceId: string;
  userId: string;
  eventType: string;
  payload: Record<string, unknown>;
  /** Number of the next attempt (0 = first). */
  retryNum: number;
  nextAt: number;
  createdAt: string;
}

/** How often the worker looks for events whose next attempt is due. */
const TICK_MS = 200;

export interface WorkerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'>;
  apps: AppsService;
  dispatcher: Dispatcher;
  socket: SocketTransport;
}

export function createDeliveryWorker(deps: WorkerDeps) {
  const { store, clock, logger, config, apps, dispatcher: d, socket } = deps;
  const { log } = d;
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  const inFlight = new Set<string>();
  /** How kept socket-mode events ended while an attempt of theirs was in flight (taken by that attempt). */
  const keptWhileInFlight = new Map<string, AttemptResult>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** An attempt the tick found due; skipped while another attempt of the same event runs. */
  function attemptEvent(p: PendingDelivery): Promise<DeliveryRecord | undefined> {
    if (inFlight.has(p.id)) return Promise.resolve(log.get(p.id));
    inFlight.add(p.id);
    return runAttempt(p, config.deliveryEventTimeoutMs);
  }

  /** One attempt of an event the caller has claimed (its id is in inFlight); releases the claim. */
  async function runAttempt(p: PendingDelivery, timeoutMs: number, durable: Promise<void> = Promise.resolve()): Promise<DeliveryRecord | undefined> {
    try {
      const app = apps.byId(p.appId);
      if (!app) {
        await cancelPending(p, 'the app was deleted');
        return log.get(p.id);
      }
      const rec = log.get(p.id) ?? d.newRecord(app, 'event', p, app.manifest.eventSubscriptions?.url || undefined, p.payload, p.id);
      if (!app.manifest.socketMode) rec.url = app.manifest.eventSubscriptions?.url || undefined;
      let r = await d.attempt(rec, app, false, timeoutMs);
      let final = false;
      const kept = keptWhileInFlight.get(p.id);
      if (kept) {
        // The socket-mode queue sent (or dropped) this event while the attempt was under way.
        keptWhileInFlight.delete(p.id);
        if (r.outcome !== 'acked') {
          d.recordAttempt(rec, kept, d.nextAttemptId(), rec.attempts.length);
          r = kept;
          final = true;
        }
      }
      await durable;
      await finishEvent(p, rec, r, app, final);
      return rec;
    } finally {
      inFlight.delete(p.id);
    }
  }

  /** After an event's attempt: schedule the next one, or end it (delivered or failed) and forget the pending record. */
  async function finishEvent(p: PendingDelivery, rec: DeliveryRecord, r: AttemptResult, app: AppRecord, final: boolean): Promise<void> {
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const delay = !final && !delivered && retryable(r) && !stopped ? nextRetryDelayMs(schedule, p.retryNum) : undefined;
    if (delay !== undefined) {
      const next: PendingDelivery = { ...p, retryNum: p.retryNum + 1, nextAt: clock.now() + delay };
      rec.state = 'retrying';
      rec.nextAttemptAt = new Date(next.nextAt).toISOString();
      await store.commit([{ table: PENDING_TABLE, id: p.id, value: next }]);
    } else {
      rec.state = delivered ? 'delivered' : 'failed';
      rec.nextAttemptAt = undefined;
      if (!stopped || delivered || !retryable(r) || final) await store.commit([{ table: PENDING_TABLE, id: p.id, value: null }]);
      // The worker gave up: a socket-mode app's copy in the queue goes too (the queue is bounded by this schedule).
      if (!delivered && !final && !stopped && app.manifest.socketMode) socket.discard(app.id, p.id, 'the retry schedule ran out before the app connected');
    }
    log.put(rec);
  }

  /** A kept socket-mode event was sent from the queue, or dropped there: the log says so at once. */
  async function keptSettled(id: string, appId: string, result: AttemptResult): Promise<void> {
    if (inFlight.has(id)) {
      keptWhileInFlight.set(id, result);
      return;
    }
    const p = store.get<PendingDelivery>(PENDING_TABLE, id);
    const app = apps.byId(appId);
    const rec = log.get(id) ?? (p && app ? d.newRecord(app, 'event', p, undefined, p.payload, p.id) : undefined);
    if (!rec) return;
    inFlight.add(id);
    try {
      d.recordAttempt(rec, result, d.nextAttemptId(), rec.attempts.length);
      if (p && app) await finishEvent(p, rec, result, app, true);
      else {
        // the worker had already ended it (e.g. before a restart): only the log learns the news
        rec.state = result.outcome === 'acked' ? 'delivered' : 'failed';
        log.put(rec);
      }
    } finally {
      inFlight.delete(id);
    }
  }
  socket.onKeptSettled((id, appId, result) => {
    d.track(keptSettled(id, appId, result)).catch((e) => logger.error('socket-mode queue update failed', { deliveryId: id, error: (e as Error).message }));
  });

  /**
   * Queue an event for one app and make the first attempt, whose outcome the caller gets. The
   * pending record is written while the first attempt is under way (the attempt does not wait
   * for the disk: a fan-out to many apps is as fast as their answers), and the attempt's outcome
   * is recorded only once the record is durable, so a retry is never scheduled for an event
   * the store does not hold. The event is claimed before anything else, so the tick cannot
   * start that attempt first.
   */
  async function enqueueEvent(
    app: AppRecord,
    workspaceId: string,
    userId: string,
    eventType: string,
    payload: Record<string, unknown>,
    opts: { extra?: Array<{ table: string; id: string; value: null }>; timeoutMs?: number } = {},
  ): Promise<DeliveryRecord | undefined> {
    const p: PendingDelivery = { id: d.nextDeliveryId(), appId: app.id, workspaceId, userId, eventType, payload, retryNum: 0, nextAt: clock.now(), createdAt: d.iso() };
    const rec = d.newRecord(app, 'event', { workspaceId, userId }, app.manifest.eventSubscriptions?.url || undefined, payload, p.id);
    log.put(rec);
    inFlight.add(p.id);
    const durable = store.commit([{ table: PENDING_TABLE, id: p.id, value: p }, ...(opts.extra ?? [])]);
    const attempted = d.track(runAttempt(p, opts.timeoutMs ?? config.deliveryEventTimeoutMs, durable));
    try {
      await durable;
    } catch (e) {
      attempted.catch(() => {}); // it fails the same way: the caller hears it once, from here
      throw e;
    }
    return attempted;
  }

  /** End a retrying event now: no further attempt, the log says cancelled and why. */
  async function cancelPending(p: PendingDelivery, reason: string): Promise<void> {
    await store.commit([{ table: PENDING_TABLE, id: p.id, value: null }]);
    socket.discard(p.appId, p.id, reason);
    const rec = log.get(p.id);
    if (!rec) return;
    rec.state = 'cancelled';
    rec.nextAttemptAt = undefined;
    rec.cancelReason = reason;
    rec.updatedAt = d.iso();
    log.put(rec);
    logger.info('delivery cancelled', { deliveryId: p.id, appId: p.appId, reason });
  }

  /** `deliveries cancel`: undefined when the event is not waiting for a retry (or an attempt of it runs now). */
  async function cancel(id: string, reason: string): Promise<DeliveryRecord | undefined> {
    const p = store.get<PendingDelivery>(PENDING_TABLE, id);
    if (!p || inFlight.has(id)) return undefined;
    inFlight.add(id);
    try {
      await cancelPending(p, reason);
    } finally {
      inFlight.delete(id);
    }
    return log.get(id);
  }

  /**
   * A replay of an event: one attempt now, marked as a replay. A retrying event that the replay
   * delivered is done; one it did not deliver keeps its schedule. An ended event takes the
   * replay's outcome.
   */
  async function replay(rec: DeliveryRecord, app: AppRecord): Promise<DeliveryRecord> {
    const r = await d.track(d.attempt(rec, app, false, config.deliveryEventTimeoutMs, true));
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const p = store.get<PendingDelivery>(PENDING_TABLE, rec.id);
    if (p && !inFlight.has(rec.id)) {
      if (delivered) {
        await store.commit([{ table: PENDING_TABLE, id: p.id, value: null }]);
        rec.state = 'delivered';
        rec.nextAttemptAt = undefined;
      } else rec.state = 'retrying';
    } else if (!p) rec.state = delivered ? 'delivered' : 'failed';
    log.put(rec);
    return rec;
  }

  /** APP_UNAUTHORIZED / APP_UNINSTALLED written by the OAuth service: deliver and remove them. */
  async function drainOutbox(): Promise<void> {
    for (const ev of [...store.values<OutboxEventRecord>(EVENTS_OUTBOX)]) {
      if (inFlight.has(ev.id)) continue;
      const app = apps.byId(ev.appId);
      const subscribed = app?.manifest.eventSubscriptions?.events?.includes(ev.eventType);
      if (!app || !subscribed) {
        await store.commit([{ table: EVENTS_OUTBOX, id: ev.id, value: null }]);
        continue;
      }
      inFlight.add(ev.id);
      try {
        const payload = eventPayload(ev.eventType, ev.workspaceId, ev.workspaceUserIds, ev.body);
        void enqueueEvent(app, ev.workspaceId, ev.workspaceUserIds[0] ?? '', ev.eventType, payload, { extra: [{ table: EVENTS_OUTBOX, id: ev.id, value: null }] }).catch((e) =>
          logger.error('event delivery failed', { error: (e as Error).message }),
        );
      } finally {
        inFlight.delete(ev.id);
      }
    }
  }

  function tick() {
    if (stopped) return;
    const now = clock.now();
    for (const p of store.values<PendingDelivery>(PENDING_TABLE)) {
      if (inFlight.has(p.id)) continue;
      const due = p.nextAt <= now;
      // a deleted app's events end at once, not at their next scheduled attempt
      if (due || !apps.byId(p.appId)) d.track(attemptEvent(p)).catch((e) => logger.error('event retry failed', { error: (e as Error).message }));
    }
    drainOutbox().catch((e) => logger.error('outbox drain failed', { error: (e as Error).message }));
  }

  return {
    enqueueEvent,
    cancel,
    replay,
    start() {
      timer = setInterval(tick, TICK_MS);
      timer.unref();
      tick();
    },
    /** No new attempts; resolves once those in flight have ended. */
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await d.idle();
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
