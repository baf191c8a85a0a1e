/**
 * The socket-mode queue: events for a socket-mode app with no open connection are kept on
 * disk, per app, in order, and sent in that order before any newer one when a connection of
 * the app opens. A kept event that went out is remembered (a "sent mark"), so a later retry of
 * the same delivery by the worker is answered `acked` without sending it twice.
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
import type { Store } from '../store/types.js';
import type { SocketConn, SocketSessions } from '../services/socket-sessions.js';
import { retryHorizonMs } from './retry-policy.js';
import type { AttemptResult, SendRequest } from './types.js';

/** Tables of the socket-mode queue (kept out of records.ts: they belong to this module). */
export const SOCKET_QUEUE_TABLE = 'socketEventQueue';
const SOCKET_SENT_TABLE = 'socketEventSent';

export interface QueuedEvent { id: string; appId: string; seq: number; payload: Record<string, unknown>; queuedAt: number; expiresAt: number }
/** A kept event that went out: a later engine retry of the same delivery id is acked without resending. */
export interface SentMark { id: string; appId: string; sentAt: number; expiresAt: number }


export interface SocketQueueDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'socketQueueMaxAgeMs' | 'socketQueueMaxPerApp' | 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'>;
}

/** What the socket transport hands the queue: its sessions, its correlation ids and where settled events are reported. */
interface QueueWiring {
  sessions: SocketSessions;
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
export function createSocketQueue(q: SocketQueueDeps & QueueWiring) {
  const { store, clock, config, sessions, nextCorrelationId } = q;
  const log = q.logger.child({ component: 'socket-queue' });
  const byApp = new Map<string, QueuedEvent[]>();
  let nextSeq = 1;
  for (const e of store.values<QueuedEvent>(SOCKET_QUEUE_TABLE)) {
    const list = byApp.get(e.appId) ?? [];
    list.push(e);
    byApp.set(e.appId, list);
    nextSeq = Math.max(nextSeq, e.seq + 1);
  }
  for (const list of byApp.values()) list.sort((a, b) => a.seq - b.seq);
  const waiters = new Map<string, Array<(r: AttemptResult) => void>>();
  const flushing = new Set<string>();
  let lastSweep = 0;
  // A kept event waits as long as the engine would go on retrying it (plus a minute's slack:
  // the engine's own give-up normally discards it first), unless the operator set a shorter age.
  const maxAgeMs = config.socketQueueMaxAgeMs > 0 ? config.socketQueueMaxAgeMs : retryHorizonMs(config) + 60_000;
  const ageRule = config.socketQueueMaxAgeMs > 0 ? `older than socketQueueMaxAgeMs (${config.socketQueueMaxAgeMs} ms)` : `older than the retry schedule's horizon (${Math.round(maxAgeMs / 1000)} s)`;

  function sweepSent(now: number) {
    if (now - lastSweep < 60_000) return;
    lastSweep = now;
    const gone = [...store.values<SentMark>(SOCKET_SENT_TABLE)].filter((m) => m.expiresAt <= now);
    if (gone.length) void store.commit(gone.map((m) => ({ table: SOCKET_SENT_TABLE, id: m.id, value: null })));
  }

  function drop(e: QueuedEvent, why: string, tellEngine = true) {
    log.warn('socket-mode event dropped from the queue', { appId: e.appId, deliveryId: e.id, why, queuedAt: new Date(e.queuedAt).toISOString() });
    void store.commit([{ table: SOCKET_QUEUE_TABLE, id: e.id, value: null }]);
    settle(e, { outcome: 'no_connection', latencyMs: 0, error: `dropped from the socket-mode queue: ${why}` }, tellEngine);
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
        log.error('socket-mode queue listener failed', { error: (err as Error).message });
      }
    }
  }

  function discard(appId: string, id: string, why: string): boolean {
    const list = byApp.get(appId);
    const at = list?.findIndex((e) => e.id === id) ?? -1;
    if (!list || at === -1) return false;
    const [e] = list.splice(at, 1);
    if (!list.length && !flushing.has(appId)) byApp.delete(appId);
    drop(e!, why, false);
    return true;
  }

  async function enqueue(req: SendRequest): Promise<void> {
    const list = byApp.get(req.app.id) ?? [];
    if (list.some((e) => e.id === req.deliveryId)) return; // an engine retry of a kept event
    const now = clock.now();
    const e: QueuedEvent = { id: req.deliveryId, appId: req.app.id, seq: nextSeq++, payload: req.payload, queuedAt: now, expiresAt: now + maxAgeMs };
    list.push(e);
    byApp.set(req.app.id, list);
    while (list.length > config.socketQueueMaxPerApp) drop(list.shift()!, `more than ${config.socketQueueMaxPerApp} events kept for the app`);
    await store.commit([{ table: SOCKET_QUEUE_TABLE, id: e.id, value: e }]);
  }

  /** Send the app's kept events in order, while it has an open connection. */
  async function flush(appId: string): Promise<void> {
    if (flushing.has(appId)) return;
    flushing.add(appId);
    try {
      const list = byApp.get(appId) ?? [];
      while (list.length) {
        const e = list[0]!;
        const now = clock.now();
        if (e.expiresAt <= now) {
          list.shift();
          drop(e, ageRule);
          continue;
        }
        const conn = sessions.pick(appId);
        if (!conn) break;
        const t0 = performance.now();
        const ok = await writeFrame(conn, JSON.stringify({ payload: e.payload, correlation_id: nextCorrelationId() }));
        if (!ok) break; // the connection is going; the next one to open resumes here
        // (by identity: the cap or a discard may have changed the list while the frame was written)
        const at = list.indexOf(e);
        if (at !== -1) list.splice(at, 1);
        const sentAt = clock.now();
        void store.commit([
          { table: SOCKET_QUEUE_TABLE, id: e.id, value: null },
          { table: SOCKET_SENT_TABLE, id: e.id, value: { id: e.id, appId, sentAt, expiresAt: e.expiresAt } satisfies SentMark },
        ]);
        log.info('socket-mode event sent from the queue', { appId, deliveryId: e.id, keptMs: sentAt - e.queuedAt });
        settle(e, { outcome: 'acked', latencyMs: Math.round((performance.now() - t0) * 10) / 10, body: {}, excerpt: 'sent from the socket-mode queue' });
      }
      if (!list.length) byApp.delete(appId);
      // Whatever is still kept waits for the next connection.
      for (const e of list) settle(e, { outcome: 'no_connection', latencyMs: 0, error: 'kept in the socket-mode queue; sent in order when the app reconnects' }, false);
    } finally {
      flushing.delete(appId);
    }
    sweepSent(clock.now());
  }

  sessions.onAnyConnect((appId) => {
    if (byApp.get(appId)?.length) void flush(appId);
  });

  /** Events only. undefined = nothing kept for the app and it is connected: send directly. */
  function handle(req: SendRequest): Promise<AttemptResult> | undefined {
    const mark = store.get<SentMark>(SOCKET_SENT_TABLE, req.deliveryId);
    if (mark && mark.appId === req.app.id) {
      return Promise.resolve({ outcome: 'acked', latencyMs: 0, body: {}, excerpt: `sent from the socket-mode queue at ${new Date(mark.sentAt).toISOString()}` });
    }
    const kept = byApp.get(req.app.id)?.length ?? 0;
    const open = sessions.openCount(req.app.id) > 0;
    if (!kept && open) return undefined;
    return (async () => {
      await enqueue(req);
      if (!open) return { outcome: 'no_connection', latencyMs: 0, error: 'the app has no open socket-mode connection; the event is kept and sent in order when it reconnects' } satisfies AttemptResult;
      // Connected, but older events are still kept: this one goes after them.
      const result = new Promise<AttemptResult>((resolve) => waiters.set(req.deliveryId, [...(waiters.get(req.deliveryId) ?? []), resolve]));
      void flush(req.app.id);
      return result;
    })();
  }

  return { handle, discard, size: (appId: string) => byApp.get(appId)?.length ?? 0 };
}
