/**
 * The delivery worker: events. An event is durable (a pending record) before its first attempt and
 * is retried on the schedule until delivered, refused for good or out of schedule. Each attempt is
 * made once across daemons: due records are leased (store.claim); the creating daemon writes its
 * event leased to itself and attempts at once. It also drains the events outbox (outbox-drain.ts: the
 * events of every change, fanned out to the apps they go to) as soon as it is told it was written,
 * and hears from the socket-mode queue when a kept event was sent or dropped.
 *
 * An attempt runs through named stages (worker/), each a function of the worker's state
 * (worker/state.ts) and the attempt's: claim → prepare → send → classify → record → schedule.
 */
import { StoreUnavailable, type Change } from '../store/types.js';
import type { AppRecord } from '../model/identity.js';
import { applyEntry, type LogEntry, type Outgoing } from './log.js';
import type { DeliveryRecord, PendingDelivery } from '../model/delivery.js';
import { createOutboxDrain } from './outbox-drain.js';
import { createPoller } from '../poller.js';
import { PENDING_TABLE, takeOverDeadLeases } from './pending.js';
import type { AttemptResult, EnqueueOptions, EventToSend } from './types.js';
import { must } from '../must.js';
import {
  attemptNumber,
  createWorkerState,
  outgoingOf,
  settled,
  type Finished,
  type WorkerDeps,
  type WorkerState,
} from './worker/state.js';
import { claim, CLAIM_LIMIT } from './worker/claim.js';
import { createClaimPace } from './worker/claim-pace.js';
import { prepare } from './worker/prepare.js';
import { send } from './worker/send.js';
import { classify, decide } from './worker/classify.js';
import { record } from './worker/record.js';
import { schedule } from './worker/schedule.js';
import { cancel, cancelForApp, cancelPending } from './worker/cancel.js';
import { sweep } from './worker/sweep.js';
import { payloadOf, withoutBody } from './event-bodies.js';
import { replay } from './worker/replay.js';
import { messageOf } from '../unknown-values.js';

export type { WorkerDeps } from './worker/state.js';

/**
 * How often the worker looks for due events (and the outbox's) while it finds some; idle, up to POLL_MAX_MS apart
 * (poller.ts).
 */
const [TICK_MS, POLL_MAX_MS] = [200, 1000];
/** How often it looks for events of deleted apps (a fallback: cancelForApp ends them at once). */
const SWEEP_MS = 1000;
/** How often a busy worker claims due events at the most (worker/claim-pace.ts): as an idle worker polls. */
const CLAIM_EVERY_MS = POLL_MAX_MS;
/** Retry times are kept to the poller's grain (poller.ts): many retries due within it need one claim. */
const WAKE_GRAIN_MS = 50;
const DURABLE = Promise.resolve();

/**
 * One attempt of an event this daemon holds (its id is in inFlight), through the stages; releases it.
 * `given`: what enqueueEvents has at hand for a first attempt (no read on its path), and the delivery
 * as begun (`rec`) where an answer is asked for: then the answer is the delivery after the attempt
 * (otherwise, and for a retry, undefined). The outcome is recorded only once `durable` (the event's
 * own write) is.
 */
async function runAttempt(
  w: WorkerState,
  p: PendingDelivery,
  timeoutMs: number,
  durable: Promise<void> = DURABLE,
  given?: { app: AppRecord; out: Outgoing; rec?: DeliveryRecord },
): Promise<DeliveryRecord | undefined> {
  try {
    // prepare, for the app as it is now: a retry reads it again, and a deleted app's event ends
    const [app, payload] = given
      ? [given.app, undefined]
      : await Promise.all([w.deps.apps.byId(p.appId), payloadOf(w.deps.store, p)]);
    if (!app) {
      await cancelPending(w, p, 'the app was deleted', w.mine);
      return undefined;
    }
    // a shared body goes only once no record names it: this one went meanwhile, or the body was lost
    if (!given && !payload) {
      await cancelPending(w, p, 'its event body is gone', w.mine);
      return undefined;
    }
    const a = prepare(w, p, app, timeoutMs, given ? { out: given.out } : { payload: must(payload) });
    classify(w, a, await send(w, a));
    await durable;
    decide(w, a);
    let logged: LogEntry[] | undefined;
    try {
      logged = await record(w, a);
    } catch (e) {
      // the record keeps this daemon's lease: when it runs out, the claim that takes it over marks the next attempt
      w.deps.logger.warn(
        'the outcome of a delivery attempt could not be recorded; the event will be sent again as a retry',
        { deliveryId: p.id, outcome: a.result.outcome, error: messageOf(e) },
      );
      throw e;
    }
    if (logged) schedule(w, a);
    return given?.rec && logged ? logged.reduce<DeliveryRecord | undefined>(applyEntry, given.rec) : undefined;
  } finally {
    settled(w, p.id);
  }
}

/** A kept socket-mode event was sent from the queue, or dropped there: the log says so at once. */
async function keptSettled(w: WorkerState, id: string, appId: string, result: AttemptResult): Promise<void> {
  const { store, apps, dispatcher } = w.deps;
  const { log } = dispatcher;
  if (w.inFlight.has(id)) {
    w.keptWhileInFlight.set(id, result);
    return;
  }
  w.inFlight.add(id);
  try {
    const [p, app, logged] = await Promise.all([store.get(PENDING_TABLE, id), apps.byId(appId), log.get(id)]);
    if (p && app) {
      // (a delivery the log lost, e.g. one older than what it keeps, begins again there)
      if (!logged) {
        const begun = outgoingOf(w, app, p, (await payloadOf(store, p)) ?? p.payload);
        log.append({ id, begun, state: { at: dispatcher.iso(), state: 'pending' } });
      }
      // the queue's word is final: classify's verdict on it, recorded as an attempt's would be
      const f: Finished = {
        p,
        app,
        ours: w.anyone,
        attempts: [dispatcher.entryOf(result, logged?.attempts.length ?? attemptNumber(p))],
        result,
        final: true,
        verdict: 'failed',
        retryAt: 0,
        next: undefined,
      };
      decide(w, f);
      await record(w, f);
    } else if (logged) {
      // the worker had already ended it (e.g. before a restart): only the log learns the news
      log.append({
        id,
        attempt: dispatcher.entryOf(result, logged.attempts.length),
        state: { at: dispatcher.iso(), state: result.outcome === 'acked' ? 'delivered' : 'failed' },
      });
    }
  } finally {
    settled(w, id);
  }
}

export function createDeliveryWorker(deps: WorkerDeps) {
  const { store, clock, logger, config, dispatcher, instanceId } = deps;
  const { log } = dispatcher;
  const pace = createClaimPace(CLAIM_EVERY_MS, WAKE_GRAIN_MS);
  /** How many events the last claim leased. */
  let leased = 0;
  const w = createWorkerState(deps, (at) => {
    pace.wake(at);
    poller.wakeAt(at);
  });
  let lastSweep = 0;

  deps.socket.onKeptSettled((id, appId, result) => {
    dispatcher
      .track(keptSettled(w, id, appId, result))
      .catch((e) => logger.error('socket-mode queue update failed', { deliveryId: id, error: messageOf(e) }));
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
   * delivery after its first attempt when `answer` asks for it (deliver-test; a fan-out's drain does not
   * build a hundred records to drop them), else to undefined.
   */
  async function enqueueEvents(
    events: EventToSend[],
    opts: EnqueueOptions = {},
    answer = false,
  ): Promise<{ durable: Promise<void>; attempts: Array<Promise<DeliveryRecord | undefined>> }> {
    const now = clock.now();
    const at = dispatcher.iso();
    const made = events.map((ev) => {
      // a shared body (event-bodies.ts) is written once, beside these records: each names it instead
      const kept = ev.bodyId === undefined ? undefined : withoutBody(ev.payload);
      const p: PendingDelivery = {
        id: ev.id ?? dispatcher.nextDeliveryId(),
        appId: ev.app.id,
        workspaceId: ev.workspaceId,
        userId: ev.userId,
        eventType: ev.eventType,
        payload: kept ?? ev.payload,
        ...(kept ? { bodyId: ev.bodyId } : {}),
        retryNum: 0,
        nextAt: now + w.leaseMs,
        createdAt: at,
        leaseOwner: instanceId,
        leaseUntil: now + w.leaseMs,
        ...(ev.unrecorded ? { unrecorded: ev.unrecorded } : {}),
      };
      return { p, app: ev.app, out: outgoingOf(w, ev.app, p, ev.payload, ev.raw) };
    });
    for (const m of made) w.inFlight.add(m.p.id);
    const durable = store.commit(
      [...made.map((m): Change => ({ table: PENDING_TABLE, id: m.p.id, value: m.p })), ...(opts.extra ?? [])],
      opts.expect,
    );
    if (opts.expect && !deps.soleDaemon) {
      try {
        await durable;
      } catch (e) {
        for (const m of made) w.inFlight.delete(m.p.id);
        throw e;
      }
    }
    const attempts = made.map((m) => {
      const begun: LogEntry = { id: m.p.id, begun: m.out, state: { at, state: 'pending' } };
      log.append(begun);
      const rec = answer ? applyEntry(undefined, begun) : undefined;
      return dispatcher.track(
        runAttempt(w, m.p, opts.timeoutMs ?? config.deliveryEventTimeoutMs, durable, { app: m.app, out: m.out, rec }),
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
    const { durable, attempts } = await enqueueEvents([{ app, workspaceId, userId, eventType, payload }], opts, true);
    const attempted = must(attempts[0]);
    try {
      await durable;
    } catch (e) {
      attempted.catch(() => {}); // it fails the same way: the caller hears it once, from here
      throw e;
    }
    return attempted;
  }

  const outbox = createOutboxDrain({
    store,
    logger,
    apps: deps.apps,
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
    if (w.stopped) return;
    if (draining) {
      drainAgain = true;
      return;
    }
    draining = (async () => {
      do {
        drainAgain = false;
        await outbox.drain();
      } while (drainAgain && !w.stopped);
    })()
      .catch((e) => logger.error('draining the events outbox failed', { error: messageOf(e) }))
      .finally(() => (draining = undefined));
  }

  /**
   * One poll: lease the due events (CLAIM_EVERY_MS apart at the most) and attempt them, drain the outbox; whether it
   * found any.
   */
  async function tickOnce(): Promise<boolean> {
    const now = clock.now();
    if (pace.due(now)) {
      pace.claiming(now);
      let held: PendingDelivery[];
      try {
        ({ leased, held } = await claim(w, now));
      } catch (e) {
        pace.again(now);
        throw e;
      }
      if (leased >= CLAIM_LIMIT) pace.again(now); // more may be due
      for (const p of held)
        dispatcher
          .track(runAttempt(w, p, config.deliveryEventTimeoutMs))
          .catch((e) => logger.error('event retry failed', { error: messageOf(e) }));
    }
    if (now - lastSweep >= SWEEP_MS) {
      lastSweep = now;
      await sweep(w);
    }
    // a poll that skipped the claim keeps the pace the last claim set (events found: the minimum interval)
    return (await outbox.drain()) || leased > 0;
  }
  const poller = createPoller({
    minMs: TICK_MS,
    maxMs: POLL_MAX_MS,
    clock,
    run: tickOnce,
    // while the store is down this repeats every poll; the store logs the outage itself
    onError: (e) =>
      (e instanceof StoreUnavailable ? logger.debug : logger.error).call(logger, 'delivery worker tick failed', {
        error: messageOf(e),
      }),
  });
  let unwatch: (() => void) | undefined;

  return {
    enqueueEvent,
    cancel: (id: string, reason: string) => cancel(w, id, reason),
    cancelForApp: (appId: string, reason?: string) => cancelForApp(w, appId, reason),
    replay: (rec: DeliveryRecord, app: AppRecord) => replay(w, rec, app),
    start() {
      (deps.soleDaemon ? takeOverDeadLeases(store, instanceId, clock.now()) : Promise.resolve([]))
        // the retries an earlier run scheduled are claimed at their time too
        .then((later) => later.forEach(w.wakeAt))
        .catch((e) => logger.error('taking over pending events failed', { error: messageOf(e) }))
        .finally(() => !w.stopped && poller.start());
      unwatch = deps.outboxWritten(drainNow); // a change with events, on any daemon
    },
    /** No new attempts; resolves once those in flight have ended. */
    async stop() {
      w.stopped = true;
      unwatch?.();
      await poller.stop();
      await draining;
      await dispatcher.idle();
    },
  };
}

export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
