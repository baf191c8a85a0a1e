/**
 * The delivery worker: events. An event is durable (a pending record) before its first attempt and
 * is retried on the schedule until delivered, refused for good or out of schedule. Each attempt is
 * made once across daemons: due records are leased (store.claim); the creating daemon writes its
 * event leased to itself and attempts at once. It also drains the events outbox (outbox-drain.ts: the
 * events of every change, fanned out to the apps they go to) as soon as it is told it was written,
 * and hears from the socket-mode queue when a kept event was sent or dropped.
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';
import { StoreUnavailable, type Change, type Store } from '../store/types.js';
import type { AppRecord } from '../model/identity.js';
import type { Dispatcher } from './dispatcher.js';
import { applyEntry, type LogEntry, type Outgoing } from './log.js';
import type { AttemptRecord, DeliveryRecord, StateChange } from '../model/delivery.js';
import { createOutboxDrain, type EventAudience } from './outbox-drain.js';
import { createPoller } from '../poller.js';
import {
  leasedElsewhere,
  mayHaveBeenSent,
  PENDING_TABLE,
  releasedAfter,
  replacePending,
  takeOverDeadLeases,
} from './pending.js';
import type { PendingDelivery } from '../model/delivery.js';
import { nextRetryDelayMs, parseSchedule, retryable } from './retry-policy.js';
import type { SocketTransport } from './socket-transport.js';
import type { AppDirectory, AttemptResult, EnqueueOptions, EventToSend } from './types.js';
import { must } from '../must.js';

/**
 * How often the worker looks for due events (and the outbox's) while it finds some; idle, up to POLL_MAX_MS apart
 * (poller.ts).
 */
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
  apps: AppDirectory;
  dispatcher: Dispatcher;
  socket: SocketTransport;
  /** This daemon, as the owner of the leases it takes. */
  instanceId: string;
  /**
   * Whether this daemon is the store's only one (the embedded store): then leases left by its earlier
   * run are void at start and taken over at once, not when they run out (pending.ts takeOverDeadLeases).
   */
  soleDaemon: boolean;
  /** Who a workspace event in the outbox goes to (services/workspace/events.ts). */
  audience: EventAudience;
  /** Told whenever the events outbox may have been written, by this daemon or another (services/outbox-writer.ts). */
  outboxWritten(listener: () => void): () => void;
}

export function createDeliveryWorker(deps: WorkerDeps) {
  const { store, clock, logger, config, apps, dispatcher, socket, instanceId } = deps;
  const { log } = dispatcher;
  // How long an attempt's lease lasts (another daemon takes the event over when it runs out): never
  // shorter than an attempt can take, or a slow attempt would be made twice.
  const leaseMs = Math.max(config.deliveryLeaseMs ?? 30_000, config.deliveryEventTimeoutMs + 1000);
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  /** Events this daemon is attempting (or settling) now. */
  const inFlight = new Set<string>();
  /**
   * Events that left inFlight while a claim was under way: the claim may have renewed this daemon's
   * lease on one of them just before its attempt ended (and the record went), and still return it.
   */
  let leftDuringClaim: Set<string> | undefined;
  const settled = (id: string) => {
    inFlight.delete(id);
    leftDuringClaim?.add(id);
  };
  /** How kept socket-mode events ended while an attempt of theirs was in flight (taken by that attempt). */
  const keptWhileInFlight = new Map<string, AttemptResult>();
  let stopped = false;
  let lastSweep = 0;
  /** A record this daemon holds stays its own to change while the lease is its own (our claim may renew it). */
  const mine = (cur: PendingDelivery) => cur.leaseOwner === instanceId;
  const anyone = () => true;
  /** Where an app's events go now (its manifest may change between attempts). */
  const eventUrl = (app: AppRecord) => app.manifest.eventSubscriptions?.url || undefined;
  /** The event as a delivery to send: built again from the pending record for each retry. */
  const outgoingOf = (app: AppRecord, p: PendingDelivery) =>
    dispatcher.outgoing(app, 'event', p, eventUrl(app), p.payload, { id: p.id, createdAt: p.createdAt });

  /**
   * One attempt of an event this daemon holds (its id is in inFlight); releases it. `given`: what
   * enqueueEvents has at hand for a first attempt (no read on its path), with the delivery as
   * begun, for the answer: the delivery after the attempt (undefined for a retry).
   */
  async function runAttempt(
    p: PendingDelivery,
    timeoutMs: number,
    durable: Promise<void> = Promise.resolve(),
    given?: { app: AppRecord; out: Outgoing; rec: DeliveryRecord },
  ): Promise<DeliveryRecord | undefined> {
    try {
      const app = given?.app ?? (await apps.byId(p.appId));
      if (!app) {
        await cancelPending(p, 'the app was deleted', mine);
        return undefined;
      }
      const retryNum = attemptNumber(p);
      const made = await dispatcher.attempt(given?.out ?? outgoingOf(app, p), app, {
        interactive: false,
        budgetMs: timeoutMs,
        retryNum,
      });
      const attempts = [made.entry];
      let r = made.result;
      let final = false;
      const kept = keptWhileInFlight.get(p.id);
      if (kept) {
        // The socket-mode queue sent (or dropped) this event while the attempt was under way.
        keptWhileInFlight.delete(p.id);
        if (r.outcome !== 'acked') {
          attempts.push(dispatcher.entryOf(kept, retryNum + 1));
          r = kept;
          final = true;
        }
      }
      await durable;
      let logged: LogEntry[] | undefined;
      try {
        logged = await finishEvent(p, attempts, r, app, final, mine);
      } catch (e) {
        // the record keeps this daemon's lease: when it runs out, the claim that takes it over marks the next attempt
        logger.warn(
          'the outcome of a delivery attempt could not be recorded; the event will be sent again as a retry',
          {
            deliveryId: p.id,
            outcome: r.outcome,
            error: (e as Error).message,
          },
        );
        throw e;
      }
      return given && logged ? logged.reduce<DeliveryRecord | undefined>(applyEntry, given.rec) : undefined;
    } finally {
      settled(p.id);
    }
  }

  /**
   * After an event's attempts: schedule the next one, or end it (delivered or failed) and forget the
   * pending record; then log the attempts and the state they left. Resolves to the entries logged
   * (undefined: the event was no longer ours, whoever has it logs what becomes of it).
   */
  async function finishEvent(
    p: PendingDelivery,
    attempts: AttemptRecord[],
    r: AttemptResult,
    app: AppRecord,
    final: boolean,
    ours: (cur: PendingDelivery) => boolean,
  ): Promise<LogEntry[] | undefined> {
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const delay = !final && !delivered && retryable(r) && !stopped ? nextRetryDelayMs(schedule, p.retryNum) : undefined;
    let kept: boolean;
    let next: PendingDelivery | undefined;
    if (delay !== undefined) {
      next = { ...releasedAfter(p, clock.now() + delay), retryNum: p.retryNum + 1 };
      kept = await replacePending(store, p, next, ours);
      if (kept) poller.wakeAt(next.nextAt); // the retry is made on time, whatever the idle poll's pace
    } else {
      if (!stopped || delivered || !retryable(r) || final) kept = await replacePending(store, p, null, ours);
      // stopping: the event stays pending, free for the next daemon (or this one's restart) at once; the
      // attempt just made (a timeout may have reached the app) counts, so the next one is marked a retry
      else
        kept = await replacePending(
          store,
          p,
          { ...releasedAfter(p, clock.now()), unrecorded: mayHaveBeenSent(p) + 1 },
          ours,
        );
      // The worker gave up: a socket-mode app's copy in the queue goes too, before the log says failed.
      if (kept && !delivered && !final && !stopped && app.manifest.socketMode)
        await socket.discard(app.id, p.id, 'the retry schedule ran out before the app connected');
    }
    // not ours any more (cancelled, or taken over after our lease ran out): whoever has it now writes the log
    if (!kept)
      return void logger.warn('delivery attempt outcome dropped: the event was ended or taken over meanwhile', {
        deliveryId: p.id,
        outcome: r.outcome,
      });
    // only now, once the pending record says so (a reader must not see "failed" while the queue still holds the event)
    const state: StateChange = {
      at: dispatcher.iso(),
      state: next ? 'retrying' : delivered ? 'delivered' : 'failed',
      ...(next ? { nextAttemptAt: new Date(next.nextAt).toISOString() } : {}),
    };
    const entries = attempts.map((attempt, i): LogEntry =>
      i === attempts.length - 1 ? { id: p.id, attempt, state } : { id: p.id, attempt },
    );
    for (const e of entries) log.append(e);
    return entries;
  }

  /**
   * The number of attempts made before the next one: the schedule's, the replays', and those that may
   * have reached the app unrecorded (pending.ts mayHaveBeenSent): an event that comes again is marked.
   */
  const attemptNumber = (p: PendingDelivery) => p.retryNum + (p.replays ?? 0) + mayHaveBeenSent(p);

  /** A kept socket-mode event was sent from the queue, or dropped there: the log says so at once. */
  async function keptSettled(id: string, appId: string, result: AttemptResult): Promise<void> {
    if (inFlight.has(id)) {
      keptWhileInFlight.set(id, result);
      return;
    }
    inFlight.add(id);
    try {
      const [p, app, logged] = await Promise.all([store.get(PENDING_TABLE, id), apps.byId(appId), log.get(id)]);
      if (p && app) {
        // (a delivery the log lost, e.g. one older than what it keeps, begins again there)
        if (!logged) log.append({ id, begun: outgoingOf(app, p), state: { at: dispatcher.iso(), state: 'pending' } });
        await finishEvent(
          p,
          [dispatcher.entryOf(result, logged?.attempts.length ?? attemptNumber(p))],
          result,
          app,
          true,
          anyone,
        );
      } else if (logged) {
        // the worker had already ended it (e.g. before a restart): only the log learns the news
        log.append({
          id,
          attempt: dispatcher.entryOf(result, logged.attempts.length),
          state: { at: dispatcher.iso(), state: result.outcome === 'acked' ? 'delivered' : 'failed' },
        });
      }
    } finally {
      settled(id);
    }
  }
  socket.onKeptSettled((id, appId, result) => {
    dispatcher
      .track(keptSettled(id, appId, result))
      .catch((e) => logger.error('socket-mode queue update failed', { deliveryId: id, error: (e as Error).message }));
  });

  /**
   * Queue events and make their first attempts. The pending records (one per event) and `extra` are
   * one commit. Without `expect`, the first attempts are made while that write is under way (they do
   * not wait for the disk: a fan-out to many apps is as fast as their answers), and an attempt's
   * outcome is recorded only once the write is durable, so a retry is never scheduled for an event
   * the store does not hold. With `expect` (the events outbox record still there) and daemons sharing
   * the store, the attempts wait for the write, so they are made only by the daemon whose write won;
   * a daemon alone on its store (soleDaemon) has no other daemon to lose to (and its own drains never
   * take a record twice), so its attempts start at once there too. Each record is written
   * leased to this daemon and due only when the lease runs out, so no tick (of any daemon) starts
   * that attempt too; should this daemon die, another one makes it then (or this one, restarted,
   * at once: soleDaemon). `durable` rejects when the write failed; `attempts` resolve, each, to the
   * delivery after its first attempt.
   */
  async function enqueueEvents(
    events: EventToSend[],
    opts: EnqueueOptions = {},
  ): Promise<{ durable: Promise<void>; attempts: Array<Promise<DeliveryRecord | undefined>> }> {
    const now = clock.now();
    const at = dispatcher.iso();
    const made = events.map((ev) => {
      const p: PendingDelivery = {
        id: ev.id ?? dispatcher.nextDeliveryId(),
        appId: ev.app.id,
        workspaceId: ev.workspaceId,
        userId: ev.userId,
        eventType: ev.eventType,
        payload: ev.payload,
        retryNum: 0,
        nextAt: now + leaseMs,
        createdAt: at,
        leaseOwner: instanceId,
        leaseUntil: now + leaseMs,
        ...(ev.unrecorded ? { unrecorded: ev.unrecorded } : {}),
      };
      return { p, app: ev.app, out: outgoingOf(ev.app, p) };
    });
    for (const m of made) inFlight.add(m.p.id);
    const durable = store.commit(
      [...made.map((m): Change => ({ table: PENDING_TABLE, id: m.p.id, value: m.p })), ...(opts.extra ?? [])],
      opts.expect,
    );
    if (opts.expect && !deps.soleDaemon) {
      try {
        await durable;
      } catch (e) {
        for (const m of made) inFlight.delete(m.p.id);
        throw e;
      }
    }
    const attempts = made.map((m) => {
      const begun: LogEntry = { id: m.p.id, begun: m.out, state: { at, state: 'pending' } };
      log.append(begun);
      const rec = must(applyEntry(undefined, begun));
      return dispatcher.track(
        runAttempt(m.p, opts.timeoutMs ?? config.deliveryEventTimeoutMs, durable, { app: m.app, out: m.out, rec }),
      );
    });
    return { durable, attempts };
  }

  /** One event (deliver-test): the delivery after its first attempt; rejects when it could not be queued. */
  async function enqueueEvent(
    app: AppRecord,
    workspaceId: string,
    userId: string,
    eventType: string,
    payload: Record<string, unknown>,
    opts: EnqueueOptions = {},
  ): Promise<DeliveryRecord | undefined> {
    const { durable, attempts } = await enqueueEvents([{ app, workspaceId, userId, eventType, payload }], opts);
    const attempted = must(attempts[0]);
    try {
      await durable;
    } catch (e) {
      attempted.catch(() => {}); // it fails the same way: the caller hears it once, from here
      throw e;
    }
    return attempted;
  }

  /**
   * End a retrying event now: no further attempt, the log says cancelled and why. False: it was no longer ours to end.
   */
  async function cancelPending(
    p: PendingDelivery,
    reason: string,
    ours: (cur: PendingDelivery) => boolean,
  ): Promise<boolean> {
    if (!(await replacePending(store, p, null, ours))) return false;
    await socket.discard(p.appId, p.id, reason); // gone before the log says cancelled
    logger.info('delivery cancelled', { deliveryId: p.id, appId: p.appId, reason });
    log.append({ id: p.id, state: { at: dispatcher.iso(), state: 'cancelled', cancelReason: reason } });
    return true;
  }

  /**
   * `deliveries cancel`: undefined when the event is not waiting for a retry (or an attempt of it runs now, here or
   * elsewhere).
   */
  async function cancel(id: string, reason: string): Promise<DeliveryRecord | undefined> {
    const p = await store.get(PENDING_TABLE, id);
    if (!p || inFlight.has(id) || leasedElsewhere(p, instanceId, clock.now())) return undefined;
    inFlight.add(id);
    try {
      // one try: a change meanwhile means an attempt started somewhere
      if (!(await cancelPending(p, reason, () => false))) return undefined;
    } finally {
      settled(id);
    }
    return log.get(id);
  }

  /** A deleted app's waiting events end at once, as cancelled (those in flight end at their next attempt). */
  async function cancelForApp(appId: string, reason = 'the app was deleted'): Promise<void> {
    for (const p of await store.find(PENDING_TABLE, 'appId', appId)) {
      if (inFlight.has(p.id) || leasedElsewhere(p, instanceId, clock.now())) continue;
      inFlight.add(p.id);
      try {
        await cancelPending(p, reason, () => false);
      } finally {
        settled(p.id);
      }
    }
  }

  /** Fallback for deletions that did not call cancelForApp: apps of pending events that are gone. */
  async function sweepDeletedApps(): Promise<void> {
    const appIds = new Set((await store.all(PENDING_TABLE)).map((p) => p.appId));
    for (const appId of appIds) if (!(await apps.byId(appId))) await cancelForApp(appId);
  }

  /**
   * A replay of an event (`rec`, as logged): one attempt now, marked as a replay. A retrying event
   * that the replay delivered is done; one it did not deliver keeps its schedule (its next attempt
   * counts the replay). An ended event takes the replay's outcome.
   */
  async function replay(rec: DeliveryRecord, app: AppRecord): Promise<DeliveryRecord> {
    const { result: r, entry } = await dispatcher.track(
      dispatcher.attempt(dispatcher.resend(rec), app, {
        interactive: false,
        budgetMs: config.deliveryEventTimeoutMs,
        retryNum: rec.attempts.length,
        replay: true,
      }),
    );
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const p = await store.get(PENDING_TABLE, rec.id);
    const at = dispatcher.iso();
    let state: StateChange;
    if (p && !inFlight.has(rec.id) && !leasedElsewhere(p, instanceId, clock.now())) {
      if (delivered && (await replacePending(store, p, null, () => false))) state = { at, state: 'delivered' };
      else {
        state = { at, state: 'retrying', nextAttemptAt: new Date(p.nextAt).toISOString() };
        // one try: only a number in a header
        if (!delivered) await replacePending(store, p, { ...p, replays: (p.replays ?? 0) + 1 }, () => false);
      }
    } else if (!p) state = { at, state: delivered ? 'delivered' : 'failed' };
    // an attempt of it runs now: it decides
    else state = { at, state: rec.state, ...(rec.nextAttemptAt ? { nextAttemptAt: rec.nextAttemptAt } : {}) };
    const e: LogEntry = { id: rec.id, attempt: entry, state };
    log.append(e);
    return must(applyEntry(rec, e));
  }

  const outbox = createOutboxDrain({
    store,
    logger,
    apps,
    audience: deps.audience,
    enqueueEvents,
    attemptsBeforeDurable: deps.soleDaemon,
  });
  let draining: Promise<void> | undefined;
  let drainAgain = false;
  /**
   * Drain the outbox now (not at the next poll): a change was just committed with its events. One drain at a time; a
   * hint during one runs another after it.
   */
  function drainNow(): void {
    if (stopped) return;
    if (draining) {
      drainAgain = true;
      return;
    }
    draining = (async () => {
      do {
        drainAgain = false;
        await outbox.drain();
      } while (drainAgain && !stopped);
    })()
      .catch((e) => logger.error('draining the events outbox failed', { error: (e as Error).message }))
      .finally(() => (draining = undefined));
  }

  /** One poll: lease the due events and attempt them, drain the outbox; whether it found any. */
  async function tickOnce(): Promise<boolean> {
    const now = clock.now();
    const left = (leftDuringClaim = new Set());
    let due: PendingDelivery[];
    try {
      due = await store.claim({
        table: PENDING_TABLE,
        dueField: 'nextAt',
        now,
        owner: instanceId,
        leaseUntil: now + leaseMs,
        limit: CLAIM_LIMIT,
      });
    } finally {
      leftDuringClaim = undefined;
    }
    for (const p of due) {
      // our own attempt, its lease just renewed (or since ended)
      if (inFlight.has(p.id) || left.has(p.id) || stopped) continue;
      inFlight.add(p.id);
      dispatcher
        .track(runAttempt(p, config.deliveryEventTimeoutMs))
        .catch((e) => logger.error('event retry failed', { error: (e as Error).message }));
    }
    if (now - lastSweep >= SWEEP_MS) {
      lastSweep = now;
      await sweepDeletedApps();
    }
    return (await outbox.drain()) || due.length > 0;
  }
  const poller = createPoller({
    minMs: TICK_MS,
    maxMs: POLL_MAX_MS,
    clock,
    run: tickOnce,
    // while the store is down this repeats every poll; the store logs the outage itself
    onError: (e) =>
      (e instanceof StoreUnavailable ? logger.debug : logger.error).call(logger, 'delivery worker tick failed', {
        error: (e as Error).message,
      }),
  });
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
      unwatch = deps.outboxWritten(drainNow); // a change with events, on any daemon
    },
    /** No new attempts; resolves once those in flight have ended. */
    async stop() {
      stopped = true;
      unwatch?.();
      await poller.stop();
      await draining;
      await dispatcher.idle();
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
