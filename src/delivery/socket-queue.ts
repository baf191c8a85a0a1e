/**
 * The socket-mode queue: events for a socket-mode app with no open connection are kept in the
 * store, per app, in order, and sent in that order before any newer one when a connection of the
 * app opens, by whichever daemon holds it. A kept event that went out is remembered (a "sent
 * mark"), so a later retry of the same delivery by the worker is answered `acked` without sending
 * it twice. Several daemons may hold connections of one app: an event leaves the queue by a
 * commit that expects it still there, before its frame is written, so only one of them sends it.
 *
 * An event is kept as long as the worker's retry schedule runs: when the worker gives up it
 * discards it here; when the queue sends or drops it on its own it reports that through
 * `settled`, so the delivery log says at once what became of it. Beyond socketQueueMaxPerApp,
 * or older than socketQueueMaxAgeMs when that is set (0 = the retry schedule's horizon),
 * events are dropped with a warning.
 */
import { performance } from 'node:perf_hooks';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { StoreConflict, type Change, type Store } from '../store/types.js';
import type { SocketConn, SocketConnections } from './socket-connections.js';
import { retryHorizonMs } from './retry-policy.js';
import type { AttemptResult, SocketSendRequest } from './types.js';
import type { QueuedEvent, SentMark } from '../model/delivery.js';
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';

/** Tables of the socket-mode queue (their records: model/delivery.ts). */
export const SOCKET_QUEUE_TABLE = 'socketEventQueue';
const SOCKET_SENT_TABLE = 'socketEventSent';

export interface SocketQueueDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<
    Config,
    'socketQueueMaxAgeMs' | 'socketQueueMaxPerApp' | 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'
  >;
  /** This daemon, as a holder of socket-mode connections (socket-relay.ts). */
  instanceId: string;
}

/**
 * What the socket transport hands the queue: its sessions, its correlation ids and where settled events are reported.
 */
interface QueueWiring {
  sessions: SocketConnections;
  nextCorrelationId: () => string;
  settled: (deliveryId: string, appId: string, result: AttemptResult) => void;
}

const writeFrame = (conn: SocketConn, frame: string) =>
  new Promise<boolean>((resolve) => {
    try {
      conn.send(frame, (err) => resolve(!err));
    } catch {
      resolve(false);
    }
  });

/** The ordered, durable queue of events for apps without an open connection. */
export function createSocketQueue(q: Omit<SocketQueueDeps, 'instanceId'> & QueueWiring) {
  const { store, clock, config, sessions, nextCorrelationId } = q;
  const log = q.logger.child({ component: 'socket-queue' });
  // Order across daemons: the time of queueing, then a per-daemon counter (same millisecond).
  let counter = 0;
  const nextSeq = () => clock.now() * 1024 + (counter++ & 1023);
  const waiters = new Map<string, Array<(r: AttemptResult) => void>>();
  const flushing = new Set<string>();
  const rerun = new Set<string>();
  /** Keeps being written, per app: a flush waits for them before it tells waiters their event stays kept. */
  const keeping = new Map<string, Set<Promise<void>>>();
  let lastSweep = 0;
  // A kept event waits as long as the engine would go on retrying it (plus a minute's slack:
  // the engine's own give-up normally discards it first), unless the operator set a shorter age.
  const maxAgeMs = config.socketQueueMaxAgeMs > 0 ? config.socketQueueMaxAgeMs : retryHorizonMs(config) + 60_000;
  const ageRule =
    config.socketQueueMaxAgeMs > 0
      ? `older than socketQueueMaxAgeMs (${config.socketQueueMaxAgeMs} ms)`
      : `older than the retry schedule's horizon (${Math.round(maxAgeMs / 1000)} s)`;

  /** The app's kept events, oldest first. */
  const kept = async (appId: string) =>
    (await store.find(SOCKET_QUEUE_TABLE, 'appId', appId)).sort((a, b) => a.seq - b.seq);

  async function sweepSent(now: number) {
    if (now - lastSweep < 60_000) return;
    lastSweep = now;
    const gone = (await store.all(SOCKET_SENT_TABLE)).filter((m) => m.expiresAt <= now);
    if (gone.length) await store.commit(gone.map((m) => ({ table: SOCKET_SENT_TABLE, id: m.id, value: null })));
  }

  /**
   * Take `e` out of the queue (with `extra` changes) if it is still there as read; false when another daemon or call
   * did.
   */
  async function remove(e: QueuedEvent, extra: Change[] = []): Promise<boolean> {
    try {
      await store.commit(
        [{ table: SOCKET_QUEUE_TABLE, id: e.id, value: null }, ...extra],
        [{ table: SOCKET_QUEUE_TABLE, id: e.id, value: e }],
      );
      return true;
    } catch (err) {
      if (!(err instanceof StoreConflict))
        log.error('socket-mode queue write failed', { deliveryId: e.id, error: messageOf(err) });
      return false;
    }
  }

  async function drop(e: QueuedEvent, why: string, tellEngine = true): Promise<boolean> {
    if (!(await remove(e))) return false;
    log.warn('socket-mode event dropped from the queue', {
      appId: e.appId,
      deliveryId: e.id,
      why,
      queuedAt: new Date(e.queuedAt).toISOString(),
    });
    settle(
      e,
      { outcome: 'no_connection', latencyMs: 0, error: `dropped from the socket-mode queue: ${why}` },
      tellEngine,
    );
    return true;
  }

  /** The event left the queue: whoever awaits it hears how, and the engine too (unless it asked). */
  function settle(e: QueuedEvent, r: AttemptResult, tellEngine = true) {
    const ws = waiters.get(e.id);
    waiters.delete(e.id);
    for (const w of ws ?? []) w(r);
    if (tellEngine) {
      try {
        q.settled(e.id, e.appId, r);
      } catch (err) {
        log.error('socket-mode queue listener failed', { error: messageOf(err) });
      }
    }
  }

  /** Drop a kept event the engine gave up on; false when it was not kept, or could not be dropped (logged). */
  async function discard(appId: string, id: string, why: string): Promise<boolean> {
    try {
      const e = await store.get(SOCKET_QUEUE_TABLE, id);
      if (!e || e.appId !== appId) return false;
      return await drop(e, why, false);
    } catch (err) {
      log.warn('socket-mode event could not be dropped from the queue', {
        appId,
        deliveryId: id,
        why,
        error: messageOf(err),
      });
      return false;
    }
  }

  /** Keep the event (after `list`, the app's kept events as read), then apply the per-app cap. */
  async function enqueue(req: SocketSendRequest, list: QueuedEvent[]): Promise<void> {
    if (list.some((e) => e.id === req.deliveryId)) return; // an engine retry of a kept event
    const now = clock.now();
    // after every event already kept for the app, whatever the clocks of the daemons that kept them
    const seq = Math.max(nextSeq(), (list.at(-1)?.seq ?? 0) + 1);
    const e: QueuedEvent = {
      id: req.deliveryId,
      appId: req.app.id,
      seq,
      payload: req.payload,
      queuedAt: now,
      expiresAt: now + maxAgeMs,
    };
    try {
      await store.commit(
        [{ table: SOCKET_QUEUE_TABLE, id: e.id, value: e }],
        [{ table: SOCKET_QUEUE_TABLE, id: e.id, value: undefined }],
      );
    } catch (err) {
      if (err instanceof StoreConflict) return; // kept meanwhile by another attempt of it
      throw err;
    }
    const all = [...list, e];
    while (all.length > config.socketQueueMaxPerApp)
      await drop(must(all.shift()), `more than ${config.socketQueueMaxPerApp} events kept for the app`);
  }

  /**
   * Send the app's kept events in order, while it has an open connection here. An event kept while a flush runs is
   * sent by that flush, even when its keep was written after the flush's last read: its keep, once written, asks for
   * another round (keep), and the last look waits for the keeps under way. Otherwise it stayed kept (its sender told
   * so) while the app was connected, until a flush that comes only with the next connection or a relay heartbeat.
   */
  async function flush(appId: string): Promise<void> {
    if (flushing.has(appId)) {
      rerun.add(appId); // kept during this flush, maybe after its last read: it goes round again
      return;
    }
    flushing.add(appId);
    try {
      for (;;) {
        await sendKept(appId);
        const under = keeping.get(appId);
        if (under) {
          await Promise.allSettled([...under]); // kept meanwhile: the next round sends them
          continue;
        }
        const left = await kept(appId);
        if (rerun.delete(appId) || keeping.has(appId)) continue; // kept during that read
        // Whatever is still kept waits for the next connection.
        for (const e of left)
          if (waiters.has(e.id))
            settle(
              e,
              {
                outcome: 'no_connection',
                latencyMs: 0,
                error: 'kept in the socket-mode queue; sent in order when the app reconnects',
              },
              false,
            );
        break;
      }
    } finally {
      flushing.delete(appId);
    }
    await sweepSent(clock.now());
  }

  /** One pass of a flush: the kept events in order, while a connection is open, and those kept meanwhile. */
  async function sendKept(appId: string): Promise<void> {
    let more = true;
    while (more || rerun.delete(appId)) {
      more = false;
      for (const e of await kept(appId)) {
        if (e.expiresAt <= clock.now()) {
          await drop(e, ageRule);
          continue;
        }
        const conn = sessions.pick(appId);
        if (!conn) break;
        const sentAt = clock.now();
        // out of the queue before the frame is written: of two daemons holding the app's connections, one sends it
        if (
          !(await remove(e, [
            {
              table: SOCKET_SENT_TABLE,
              id: e.id,
              value: { id: e.id, appId, sentAt, expiresAt: e.expiresAt } satisfies SentMark,
            },
          ]))
        )
          continue;
        const t0 = performance.now();
        if (!(await writeFrame(conn, JSON.stringify({ payload: e.payload, correlation_id: nextCorrelationId() })))) {
          // the connection is going: the event goes back to its place; the next connection to open resumes here
          await store
            .commit([
              { table: SOCKET_QUEUE_TABLE, id: e.id, value: e },
              { table: SOCKET_SENT_TABLE, id: e.id, value: null },
            ])
            .catch((err) => log.error('socket-mode queue write failed', { deliveryId: e.id, error: messageOf(err) }));
          more = false;
          break;
        }
        log.info('socket-mode event sent from the queue', { appId, deliveryId: e.id, keptMs: sentAt - e.queuedAt });
        settle(e, {
          outcome: 'acked',
          latencyMs: Math.round((performance.now() - t0) * 10) / 10,
          body: {},
          excerpt: 'sent from the socket-mode queue',
        });
        more = true; // events kept meanwhile go out in the same flush
      }
    }
  }

  const flushLogged = (appId: string): void =>
    void flush(appId).catch((e) => log.error('socket-mode queue flush failed', { appId, error: messageOf(e) }));
  sessions.onAnyConnect(flushLogged);

  /**
   * Keep the event (enqueue), counted as under way until written; then, in the same turn, a flush when its sender
   * waits for it (`waited`) or the app has an open connection here (one may have opened meanwhile, its flush's reads
   * done before this keep was written).
   */
  async function keep(req: SocketSendRequest, list: QueuedEvent[], waited: boolean): Promise<void> {
    const appId = req.app.id;
    const under = keeping.get(appId) ?? new Set<Promise<void>>();
    keeping.set(appId, under);
    const written = enqueue(req, list);
    under.add(written);
    try {
      await written;
    } finally {
      under.delete(written);
      if (!under.size) keeping.delete(appId);
    }
    if (waited || sessions.openCount(appId) > 0) flushLogged(appId);
  }

  /** Events only. undefined = nothing kept for the app and it is connected here: send directly. */
  async function handle(req: SocketSendRequest): Promise<AttemptResult | undefined> {
    // a first attempt cannot have been sent from the queue yet: no read for a mark then
    const [mark, list] = await Promise.all([
      req.retryNum > 0 ? store.get(SOCKET_SENT_TABLE, req.deliveryId) : undefined,
      kept(req.app.id),
    ]);
    if (mark && mark.appId === req.app.id) {
      return {
        outcome: 'acked',
        latencyMs: 0,
        body: {},
        excerpt: `sent from the socket-mode queue at ${new Date(mark.sentAt).toISOString()}`,
      };
    }
    const open = sessions.openCount(req.app.id) > 0;
    // (while a flush runs here, an event taken out of the queue may still be on its way: this one waits its turn)
    if (!list.length && open && !flushing.has(req.app.id)) return undefined;
    if (!open) {
      await keep(req, list, false);
      return {
        outcome: 'no_connection',
        latencyMs: 0,
        error: 'the app has no open socket-mode connection; the event is kept and sent in order when it reconnects',
      } satisfies AttemptResult;
    }
    // Connected, but older events are still kept: this one goes after them (waited for before it is
    // kept, so a flush already running cannot send it unheard).
    const result = new Promise<AttemptResult>((resolve) =>
      waiters.set(req.deliveryId, [...(waiters.get(req.deliveryId) ?? []), resolve]),
    );
    await keep(req, list, true);
    return result;
  }

  return { handle, discard, flush: flushLogged, size: async (appId: string) => (await kept(appId)).length };
}
