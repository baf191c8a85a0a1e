/**
 * The Transport for apps with `socketMode: true` (docs/protocol.md §6): one attempt is one text
 * frame `{"payload": <the §5 body>, "correlation_id": "…"}` on one of the app's open
 * connections (round robin), resolved by the app's reply with that correlation id or by the
 * budget. Events get no reply: an event attempt is acked once its frame was written.
 * The delivery worker builds the payload and logs the attempt; this module only carries it.
 *
 * Events for an app with no open connection go to the socket-mode queue (socket-queue.ts,
 * when given a store): the attempt still ends at once as `no_connection`, so the delivery
 * log says what happened, and the queue sends the event when the app connects.
 *
 * With a store several daemons share, an app connected to another daemon of the store is reached
 * through that daemon (socket-relay.ts); only when no daemon holds a connection of it does the above apply.
 */
import { performance } from 'node:perf_hooks';
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { ReplyWaiter, SocketConn, SocketConnections, SocketReply } from './socket-connections.js';
import type { AttemptResult, SendRequest, SocketSendRequest, Transport } from './types.js';
import { createSocketQueue, type SocketQueueDeps } from './socket-queue.js';
import { createSocketRelay } from './socket-relay.js';
import { Deadlines, type Due } from './socket-deadlines.js';

export interface SocketTransport extends Transport {
  /** Open connections of the app: this daemon's, and with several daemons the others' as their holder records say. */
  connections(appId: string): Promise<number>;
  /** Events kept for the app until it connects. */
  queued(appId: string): Promise<number>;
  /** Called when a kept event leaves the queue on its own: sent (acked) or dropped (no_connection). */
  onKeptSettled(cb: (deliveryId: string, appId: string, result: AttemptResult) => void): void;
  /**
   * Drop a kept event the engine gave up on (its retry schedule ran out); false if it was not kept or could not be
   * dropped (logged: never rejects).
   */
  discard(appId: string, deliveryId: string, why: string): Promise<boolean>;
  /** Stop relaying for other daemons and withdraw this daemon's holder records (at daemon stop). */
  close(): Promise<void>;
}

/** The reply of §6.5 as an attempt outcome, with the same classes as HTTP mode. */
function classifyReply(r: SocketReply): Omit<AttemptResult, 'latencyMs'> {
  // literals, not `{ ...base, outcome }`: a spread clone that gains a property costs a new hidden class on Node 20
  // (log.ts applyEntry)
  const { status, excerpt } = r;
  if (status >= 200 && status < 300) {
    if (r.hasBody) return { status, excerpt, outcome: 'response', body: r.body };
    return r.message
      ? { status, excerpt, outcome: 'acked', message: r.message, body: { message: r.message } }
      : { status, excerpt, outcome: 'acked', body: {} };
  }
  if (status >= 400)
    return r.message
      ? { status, excerpt, outcome: 'nacked', message: r.message, body: { message: r.message } }
      : { status, excerpt, outcome: 'nacked', error: `the app answered status ${status} without a message` };
  return { status, excerpt, outcome: 'http_error', error: `the app answered status ${status}` };
}

const WRITE_FAILED = 'the frame could not be written to the connection';

/** One attempt on one connection: ends by the reply, the budget, a failed write or the connection closing. */
class Attempt implements ReplyWaiter, Due {
  private readonly t0 = performance.now();
  private done = false;
  // its place among the budgets (socket-deadlines.ts)
  deadline = 0;
  prevDue: Due | undefined = undefined;
  nextDue: Due | undefined = undefined;
  listed = false;
  constructor(
    private readonly deadlines: Deadlines,
    private readonly sessions: SocketConnections,
    readonly conn: SocketConn,
    private readonly correlationId: string,
    private readonly req: SocketSendRequest,
    private readonly resolve: (r: AttemptResult) => void,
  ) {}

  start(): void {
    const { req } = this;
    this.deadlines.add(this, req.budgetMs);
    if (req.interactive) this.sessions.expectReply(this.correlationId, this);
    if (this.done) return;
    try {
      // the engine's serialised payload is reused: the frame is `{"payload": …, "correlation_id": …}` (a correlation
      // id is base64url and base36: nothing in it to escape)
      this.conn.send(
        `{"payload":${req.rawPayload ?? JSON.stringify(req.payload)},"correlation_id":"${this.correlationId}"}`,
        (err) => {
          if (err) this.finish({ outcome: 'connection_error', error: WRITE_FAILED });
          else if (!req.interactive) this.finish({ outcome: 'acked', body: {} });
        },
      );
    } catch {
      this.finish({ outcome: 'connection_error', error: WRITE_FAILED });
    }
  }

  reply(r: SocketReply): void {
    this.finish(classifyReply(r), true);
  }

  gone(why: string): void {
    this.finish({ outcome: 'connection_error', error: why });
  }

  expire(): void {
    this.finish({ outcome: 'timeout', error: `no answer within ${this.req.budgetMs} ms` });
  }

  /** `replied`: the sessions handed the reply over and await nothing more for this correlation id. */
  private finish(r: Omit<AttemptResult, 'latencyMs'>, replied = false): void {
    if (this.done) return;
    this.done = true;
    this.deadlines.remove(this);
    if (this.req.interactive && !replied) this.sessions.forget(this.correlationId);
    this.resolve(Object.assign(r, { latencyMs: Math.round((performance.now() - this.t0) * 10) / 10 }));
  }
}

export interface SocketTransportDeps {
  /** This daemon's app websockets. */
  sessions: SocketConnections;
  /** The attempts' budgets, and the queue's and the relay's timers. */
  clock: Clock;
  /**
   * The store and what the queue needs (without it, no queue: an attempt without a connection
   * fails). `relay`: other daemons share the store, so an app connected to one of them is reached
   * through it (the composition root decides; one daemon alone has nobody to relay to, and no
   * holder records to keep written).
   */
  queue?: Omit<SocketQueueDeps, 'clock'> & { relay: boolean };
}

export function createSocketTransport(deps: SocketTransportDeps): SocketTransport {
  const { sessions, clock } = deps;
  const queueDeps = deps.queue && { ...deps.queue, clock };
  // Correlation ids need to be unique, not secret (the connection is already authenticated):
  // a random per-daemon prefix and a counter, cheaper than CSPRNG bytes per frame. Only base64url characters.
  const prefix = newId('cor', 9) + '_';
  let seq = 0;
  const nextCorrelationId = () => prefix + (++seq).toString(36);
  const deadlines = new Deadlines(clock);
  let keptSettled: ((deliveryId: string, appId: string, result: AttemptResult) => void) | undefined;
  const queue = queueDeps
    ? createSocketQueue({
        ...queueDeps,
        sessions,
        nextCorrelationId,
        settled: (id, appId, r) => keptSettled?.(id, appId, r),
      })
    : undefined;

  function sendNow(req: SocketSendRequest): Promise<AttemptResult> {
    const conn = sessions.pick(req.app.id);
    if (!conn)
      return Promise.resolve({
        outcome: 'no_connection',
        latencyMs: 0,
        error: 'the app has no open socket-mode connection',
      });
    return new Promise<AttemptResult>((resolve) =>
      new Attempt(deadlines, sessions, conn, nextCorrelationId(), req, resolve).start(),
    );
  }

  // sendLocal and send are not async functions: an interactive attempt on this daemon goes straight to sendNow's
  // promise, without two more promises and their turns per attempt

  /** An attempt on this daemon's connections: events through the queue (kept ones go first). */
  function sendLocal(req: SocketSendRequest): Promise<AttemptResult> {
    if (queue && !req.interactive) return queue.handle(req).then((queued) => queued ?? sendNow(req));
    return sendNow(req);
  }

  const relay = queueDeps?.relay
    ? createSocketRelay({ ...queueDeps, sessions, sendLocal, onHeld: (appId) => queue?.flush(appId) })
    : undefined;

  function send(req: SendRequest): Promise<AttemptResult> {
    if (relay && sessions.openCount(req.app.id) === 0)
      return relay.relay(req).then((relayed) => relayed ?? sendLocal(req));
    return sendLocal(req);
  }

  return {
    send,
    connections: async (appId) => (relay ? relay.connections(appId) : sessions.count(appId)),
    queued: async (appId) => (queue ? queue.size(appId) : 0),
    onKeptSettled(cb) {
      keptSettled = cb;
    },
    discard: async (appId, deliveryId, why) => (queue ? queue.discard(appId, deliveryId, why) : false),
    close: async () => relay?.close(),
  };
}
