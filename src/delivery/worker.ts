/**
 * The delivery worker: events. An event is durable (a pending record) before its first attempt and
 * is retried on the schedule until delivered, refused for good or out of schedule. Each attempt is
 * made once across daemons: due records are leased (store.claim); the creating daemon writes its
 * event leased to itself and attempts at once. It also drains the OAuth events outbox and hears
 * from the socket-mode queue when a kept event was sent or dropped.
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';
import type { Store } from '../store/types.js';
import type { AppsService } from '../services/apps.js';
import type { AppRecord } from '../services/records.js';
import type { Dispatcher } from './dispatcher.js';
import type { DeliveryRecord } from './log.js';
import { createOutboxDrain } from './outbox.js';
import { createPoller } from './poller.js';
import { leasedElsewhere, PENDING_TABLE, released, replacePending, takeOverDeadLeases, type PendingDelivery } from './pending.js';
import { nextRetryDelayMs, parseSchedule, retryable } from './retry-policy.js';
import type { SocketTransport } from './socket-transport.js';
import type { AttemptResult } from './types.js';

export type { PendingDelivery } from './pending.js';

/** How often the worker looks for due events (and the outbox's) while it finds some; idle, up to POLL_MAX_MS apart (poller.ts). */
const [TICK_MS, POLL_MAX_MS] = [200, 1000];
/** How often it looks for events of deleted apps (a fallback: cancelForApp ends them at once). */
const SWEEP_MS = 1000;
/** Due events leased per tick. */
const CLAIM_LIMIT = 200;

export interface WorkerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'> & Partial<Pick<Config, 'deliveryLeaseMs'>>;
  apps: AppsService;
  dispatcher: Dispatcher;
  socket: SocketTransport;
  /** This daemon, as the owner of the leases it takes. */
  instanceId: string;
  /**
   * Whether this daemon is the store's only one (the embedded store): then leases left by its earlier
   * run are void at start and taken over at once, not when they run out (pending.ts takeOverDeadLeases).
   */
  soleDaemon: boolean;
}

export function createDeliveryWorker(deps: WorkerDeps) {
  const { store, clock, logger, config, apps, dispatcher: d, socket, instanceId } = deps;
  const { log } = d;
  // How long an attempt's lease lasts (another daemon takes the event over when it runs out): never
  // shorter than an attempt can take, or a slow attempt would be made twice.
  const leaseMs = Math.max(config.deliveryLeaseMs ?? 30_000, config.deliveryEventTimeoutMs + 1000);
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  /** Events this daemon is attempting (or settling) now. */
  const inFlight = new Set<string>();
  /** How kept socket-mode events ended while an attempt of theirs was in flight (taken by that attempt). */
  const keptWhileInFlight = new Map<string, AttemptResult>();
  let stopped = false;
  let lastSweep = 0;
  /** A record this daemon holds stays its own to change while the lease is its own (our claim may renew it). */
  const mine = (cur: PendingDelivery) => cur.leaseOwner === instanceId;
  const anyone = () => true;

  /**
   * One attempt of an event this daemon holds (its id is in inFlight); releases it. `app` and
   * `rec` are given by enqueueEvent (no read on the first attempt's path).
   */
  async function runAttempt(p: PendingDelivery, timeoutMs: number, durable: Promise<void> = Promise.resolve(), given?: { app: AppRecord; rec: DeliveryRecord }): Promise<DeliveryRecord | undefined> {
    try {
      const app = given?.app ?? (await apps.byId(p.appId));
      if (!app) {
        await cancelPending(p, 'the app was deleted', mine);
        return await log.get(p.id);
      }
      const rec = given?.rec ?? (await log.get(p.id)) ?? d.newRecord(app, 'event', p, app.manifest.eventSubscriptions?.url || undefined, p.payload, p.id);
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
      await finishEvent(p, rec, r, app, final, mine);
      return rec;
    } finally {
      inFlight.delete(p.id);
    }
  }

  /** After an event's attempt: schedule the next one, or end it (delivered or failed) and forget the pending record. */
  async function finishEvent(p: PendingDelivery, rec: DeliveryRecord, r: AttemptResult, app: AppRecord, final: boolean, ours: (cur: PendingDelivery) => boolean): Promise<void> {
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const delay = !final && !delivered && retryable(r) && !stopped ? nextRetryDelayMs(schedule, p.retryNum) : undefined;
    let kept: boolean;
    let next: PendingDelivery | undefined;
    if (delay !== undefined) {
      next = { ...released(p, clock.now() + delay), retryNum: p.retryNum + 1 };
      kept = await replacePending(store, p, next, ours);
      if (kept) poller.wakeAt(next.nextAt); // the retry is made on time, whatever the idle poll's pace
    } else {
      if (!stopped || delivered || !retryable(r) || final) kept = await replacePending(store, p, null, ours);
      // stopping: the event stays pending, free for the next daemon (or this one's restart) at once
      else kept = await replacePending(store, p, released(p, clock.now()), ours);
      // The worker gave up: a socket-mode app's copy in the queue goes too, before the log says failed.
      if (kept && !delivered && !final && !stopped && app.manifest.socketMode) await socket.discard(app.id, p.id, 'the retry schedule ran out before the app connected');
    }
    // not ours any more (cancelled, or taken over after our lease ran out): whoever has it now writes the log
    if (!kept) return void logger.warn('delivery attempt outcome dropped: the event was ended or taken over meanwhile', { deliveryId: p.id, outcome: r.outcome });
    // only now: the embedded log answers a get with this very object (set before the writes above, a reader saw "failed" while the queue still held the event)
    rec.state = next ? 'retrying' : delivered ? 'delivered' : 'failed';
    rec.nextAttemptAt = next ? new Date(next.nextAt).toISOString() : undefined;
    log.put(rec);
  }

  /** A kept socket-mode event was sent from the queue, or dropped there: the log says so at once. */
  async function keptSettled(id: string, appId: string, result: AttemptResult): Promise<void> {
    if (inFlight.has(id)) {
      keptWhileInFlight.set(id, result);
      return;
    }
    inFlight.add(id);
    try {
      const [p, app, logged] = await Promise.all([store.get<PendingDelivery>(PENDING_TABLE, id), apps.byId(appId), log.get(id)]);
      const rec = logged ?? (p && app ? d.newRecord(app, 'event', p, undefined, p.payload, p.id) : undefined);
      if (!rec) return;
      d.recordAttempt(rec, result, d.nextAttemptId(), rec.attempts.length);
      if (p && app) await finishEvent(p, rec, result, app, true, anyone);
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
   * the store does not hold. The record is written leased to this daemon and due only when the
   * lease runs out, so no tick (of any daemon) starts that attempt too; should this daemon die,
   * another one makes it then. `expect`: conditions of that write (the outbox record still
   * there); with them the attempt waits for the write, so it is made only by the daemon that won.
   */
  async function enqueueEvent(
    app: AppRecord,
    workspaceId: string,
    userId: string,
    eventType: string,
    payload: Record<string, unknown>,
    opts: { extra?: Array<{ table: string; id: string; value: null }>; expect?: Array<{ table: string; id: string; value: object }>; timeoutMs?: number } = {},
  ): Promise<DeliveryRecord | undefined> {
    const now = clock.now();
    const p: PendingDelivery = { id: d.nextDeliveryId(), appId: app.id, workspaceId, userId, eventType, payload, retryNum: 0, nextAt: now + leaseMs, createdAt: d.iso(), leaseOwner: instanceId, leaseUntil: now + leaseMs };
    const rec = d.newRecord(app, 'event', { workspaceId, userId }, app.manifest.eventSubscriptions?.url || undefined, payload, p.id);
    inFlight.add(p.id);
    const durable = store.commit([{ table: PENDING_TABLE, id: p.id, value: p }, ...(opts.extra ?? [])], opts.expect);
    if (opts.expect) {
      try {
        await durable;
      } catch (e) {
        inFlight.delete(p.id);
        throw e;
      }
    }
    log.put(rec);
    const attempted = d.track(runAttempt(p, opts.timeoutMs ?? config.deliveryEventTimeoutMs, durable, { app, rec }));
    try {
      await durable;
    } catch (e) {
      attempted.catch(() => {}); // it fails the same way: the caller hears it once, from here
      throw e;
    }
    return attempted;
  }

  /** End a retrying event now: no further attempt, the log says cancelled and why. False: it was no longer ours to end. */
  async function cancelPending(p: PendingDelivery, reason: string, ours: (cur: PendingDelivery) => boolean): Promise<boolean> {
    if (!(await replacePending(store, p, null, ours))) return false;
    await socket.discard(p.appId, p.id, reason); // gone before the log says cancelled
    logger.info('delivery cancelled', { deliveryId: p.id, appId: p.appId, reason });
    const rec = await log.get(p.id);
    if (!rec) return true;
    rec.state = 'cancelled';
    rec.nextAttemptAt = undefined;
    rec.cancelReason = reason;
    rec.updatedAt = d.iso();
    log.put(rec);
    return true;
  }

  /** `deliveries cancel`: undefined when the event is not waiting for a retry (or an attempt of it runs now, here or elsewhere). */
  async function cancel(id: string, reason: string): Promise<DeliveryRecord | undefined> {
    const p = await store.get<PendingDelivery>(PENDING_TABLE, id);
    if (!p || inFlight.has(id) || leasedElsewhere(p, instanceId, clock.now())) return undefined;
    inFlight.add(id);
    try {
      // one try: a change meanwhile means an attempt started somewhere
      if (!(await cancelPending(p, reason, () => false))) return undefined;
    } finally {
      inFlight.delete(id);
    }
    return log.get(id);
  }

  /** A deleted app's waiting events end at once, as cancelled (those in flight end at their next attempt). */
  async function cancelForApp(appId: string, reason = 'the app was deleted'): Promise<void> {
    for (const p of await store.find<PendingDelivery>(PENDING_TABLE, 'appId', appId)) {
      if (inFlight.has(p.id) || leasedElsewhere(p, instanceId, clock.now())) continue;
      inFlight.add(p.id);
      try {
        await cancelPending(p, reason, () => false);
      } finally {
        inFlight.delete(p.id);
      }
    }
  }

  /** Fallback for deletions that did not call cancelForApp: apps of pending events that are gone. */
  async function sweepDeletedApps(): Promise<void> {
    const appIds = new Set((await store.all<PendingDelivery>(PENDING_TABLE)).map((p) => p.appId));
    for (const appId of appIds) if (!(await apps.byId(appId))) await cancelForApp(appId);
  }

  /**
   * A replay of an event: one attempt now, marked as a replay. A retrying event that the replay
   * delivered is done; one it did not deliver keeps its schedule. An ended event takes the
   * replay's outcome.
   */
  async function replay(rec: DeliveryRecord, app: AppRecord): Promise<DeliveryRecord> {
    const r = await d.track(d.attempt(rec, app, false, config.deliveryEventTimeoutMs, true));
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const p = await store.get<PendingDelivery>(PENDING_TABLE, rec.id);
    if (p && !inFlight.has(rec.id) && !leasedElsewhere(p, instanceId, clock.now())) {
      if (delivered && (await replacePending(store, p, null, () => false))) {
        rec.state = 'delivered';
        rec.nextAttemptAt = undefined;
      } else rec.state = 'retrying';
    } else if (!p) rec.state = delivered ? 'delivered' : 'failed';
    log.put(rec);
    return rec;
  }

  const outbox = createOutboxDrain({ store, logger, apps, enqueueEvent });

  /** One poll: lease the due events and attempt them, drain the outbox; whether it found any. */
  async function tickOnce(): Promise<boolean> {
    const now = clock.now();
    const due = await store.claim<PendingDelivery>({ table: PENDING_TABLE, dueField: 'nextAt', now, owner: instanceId, leaseUntil: now + leaseMs, limit: CLAIM_LIMIT });
    for (const p of due) {
      if (inFlight.has(p.id) || stopped) continue; // our own attempt, its lease just renewed
      inFlight.add(p.id);
      d.track(runAttempt(p, config.deliveryEventTimeoutMs)).catch((e) => logger.error('event retry failed', { error: (e as Error).message }));
    }
    if (now - lastSweep >= SWEEP_MS) {
      lastSweep = now;
      await sweepDeletedApps();
    }
    return (await outbox.drain()) || due.length > 0;
  }
  const poller = createPoller({ minMs: TICK_MS, maxMs: POLL_MAX_MS, now: () => clock.now(), run: tickOnce, onError: (e) => logger.error('delivery worker tick failed', { error: (e as Error).message }) });
  let unwatch: (() => void) | undefined;

  return {
    enqueueEvent,
    cancel,
    cancelForApp,
    replay,
    start() {
      (deps.soleDaemon ? takeOverDeadLeases(store, instanceId, clock.now()) : Promise.resolve())
        .catch((e) => logger.error('taking over pending events failed', { error: (e as Error).message }))
        .finally(() => !stopped && poller.start());
      unwatch = outbox.watch(() => poller.wakeAt(clock.now())); // an unauthorize or uninstall on any daemon
    },
    /** No new attempts; resolves once those in flight have ended. */
    async stop() {
      stopped = true;
      unwatch?.();
      await poller.stop();
      await d.idle();
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
