/**
 * Socket mode sessions (docs/protocol.md §6), free of any websocket library: the single-use
 * tickets handed out by `websocket-connection`, the registry of open connections per app
 * (capped, picked round robin), the replies awaited by correlation id, and the judgement of
 * every frame an app sends (ping, reply, or a bad frame counted towards the flood limit).
 * The server layer owns the sockets and calls in here; the socket transport sends through it.
 */
import { tooDeep } from '../json-depth.js';
import { ACK_ID_START, ackStatus, plainAckEnd } from './socket-ack.js';
import { newSecret, PREFIX, sha256 } from '../crypto.js';
import type { ServiceContext } from './context.js';
import type { ReplyWaiter, SocketConn } from '../delivery/socket-connections.js';
import type { TicketRecord } from '../model/delivery.js';
import { must } from '../must.js';
import { isRecord, stackOf } from '../unknown-values.js';

export type FrameVerdict =
  | { kind: 'pong' }
  | { kind: 'reply' }
  | { kind: 'ignored'; why: 'malformed' | 'unknown_correlation_id' | 'late_reply' | 'wrong_connection' }
  /** Too many bad frames in the window: the caller closes the connection with 1008. */
  | { kind: 'flood' };

interface ConnState {
  conn: SocketConn;
  badFrames: number[];
  openedAt: number;
}

const EXCERPT_CHARS = 1000;
const PONG: FrameVerdict = Object.freeze({ kind: 'pong' });
const REPLY: FrameVerdict = Object.freeze({ kind: 'reply' });
/** How long a correlation id is remembered after its budget ran out, to tell "late" from "unknown". */
const LATE_MEMORY_MS = 10 * 60_000;
const LATE_MEMORY_MAX = 10_000;

export type SocketSessionsContext = Pick<ServiceContext, 'store' | 'clock' | 'logger' | 'config'>;

/** Websocket tickets handed out and not yet redeemed; `id` is the ticket's sha256 digest. */
const TICKETS = 'socketTickets';

export function createSocketSessions(ctx: SocketSessionsContext) {
  const { store, clock, config } = ctx;
  const log = ctx.logger.child({ component: 'socket' });

  // ---- tickets: single-use, short-lived, kept only as a digest, in the store: the websocket may ----
  // ---- reach another daemon (behind a balancer) than the call that handed the ticket out      ----
  /** Expired tickets, swept now and then by whoever issues one (they are refused by expiry anyway). */
  let nextSweep = 0;
  async function sweepTickets(now: number): Promise<void> {
    nextSweep = now + 60_000;
    const gone = (await store.all(TICKETS)).filter((t) => t.exp <= now);
    if (gone.length)
      await store.transaction(async (tx) => {
        for (const t of gone) tx.delete(TICKETS, t.id);
      });
  }
  async function issueTicket(appId: string): Promise<{ ticket: string; expiresAt: number }> {
    const now = clock.now();
    if (now >= nextSweep)
      await sweepTickets(now).catch((e: unknown) => log.warn('socket ticket sweep failed', { error: String(e) }));
    const ticket = newSecret(PREFIX.wsTicket);
    const rec: TicketRecord = { id: sha256(ticket), appId, exp: now + config.socketTicketTtlMs };
    await store.transaction(async (tx) => tx.put(TICKETS, rec.id, rec));
    return { ticket, expiresAt: rec.exp };
  }
  /**
   * The app id the ticket was issued for, once across every daemon (a transaction that deletes it: a
   * redemption at the same moment runs again and finds none): a second redemption, or an expired
   * ticket, gets undefined.
   */
  async function redeemTicket(ticket: string | null | undefined): Promise<string | undefined> {
    if (typeof ticket !== 'string' || ticket.length === 0 || ticket.length > 200) return undefined;
    const id = sha256(ticket);
    const t = await store.transaction(async (tx) => {
      const t = await tx.get(TICKETS, id);
      if (t) tx.delete(TICKETS, t.id);
      return t;
    });
    return t && t.exp > clock.now() ? t.appId : undefined;
  }

  // ---- the registry ----
  const byApp = new Map<string, ConnState[]>();
  const byConn = new Map<string, ConnState>();
  const rr = new Map<string, number>();
  const connectListeners = new Map<string, Set<() => void>>();
  const anyConnectListeners = new Set<(appId: string) => void>();
  const anyCloseListeners = new Set<(appId: string) => void>();

  /** Register an open connection; refused (with a close reason) above the per-app cap. */
  function add(conn: SocketConn): { ok: true } | { ok: false; code: number; reason: string } {
    const list = byApp.get(conn.appId) ?? [];
    const cap = config.socketMaxConnectionsPerApp;
    if (list.length >= cap) {
      log.warn('socket connection refused: per-app cap reached', { appId: conn.appId, connId: conn.id, cap });
      return { ok: false, code: 1008, reason: `connection limit reached: at most ${cap} open connections per app` };
    }
    const st: ConnState = { conn, badFrames: [], openedAt: clock.now() };
    list.push(st);
    byApp.set(conn.appId, list);
    byConn.set(conn.id, st);
    log.info('socket connected', { appId: conn.appId, connId: conn.id, open: list.length });
    for (const cb of [...(connectListeners.get(conn.appId) ?? [])]) safeCall(() => cb());
    for (const cb of [...anyConnectListeners]) safeCall(() => cb(conn.appId));
    return { ok: true };
  }

  function safeCall(fn: () => void) {
    try {
      fn();
    } catch (e) {
      log.error('socket connect listener failed', { error: stackOf(e) });
    }
  }

  /** Forget a closed connection; every reply still awaited on it fails at once ("gone"). */
  function remove(conn: SocketConn, why = 'the connection closed before the app answered'): void {
    const st = byConn.get(conn.id);
    if (!st) return;
    byConn.delete(conn.id);
    const list = (byApp.get(conn.appId) ?? []).filter((s) => s !== st);
    if (list.length) byApp.set(conn.appId, list);
    else byApp.delete(conn.appId);
    log.info('socket disconnected', { appId: conn.appId, connId: conn.id, open: list.length });
    for (const cb of [...anyCloseListeners]) safeCall(() => cb(conn.appId));
    // Closes are rare next to replies: a scan here keeps the per-frame path free of bookkeeping.
    for (const [cid, w] of waiters) {
      if (w.conn !== conn) continue;
      waiters.delete(cid);
      rememberLate(cid);
      w.gone(why);
    }
  }

  const count = (appId: string): number => byApp.get(appId)?.length ?? 0;
  /** Connections of the app that can take a frame now (not closing). */
  const openCount = (appId: string): number =>
    (byApp.get(appId) ?? []).reduce((n, s) => (s.conn.isOpen?.() === false ? n : n + 1), 0);

  /** The next connection of the app, round robin; undefined when it has none. */
  function pick(appId: string): SocketConn | undefined {
    const list = byApp.get(appId);
    if (!list?.length) return undefined;
    const start = rr.get(appId) ?? 0;
    for (let k = 0; k < list.length; k++) {
      const i = (start + k) % list.length;
      const conn = must(list[i]).conn;
      if (conn.isOpen?.() === false) continue; // closing: a frame sent now would be lost
      rr.set(appId, i + 1);
      return conn;
    }
    return undefined;
  }

  /** Called each time a connection of `appId` opens (after it is registered, so pick() finds it). */
  function onConnect(appId: string, cb: () => void): () => void {
    const set = connectListeners.get(appId) ?? new Set();
    set.add(cb);
    connectListeners.set(appId, set);
    return () => {
      set.delete(cb);
      if (!set.size) connectListeners.delete(appId);
    };
  }
  /** Called each time any app's connection opens (onAnyClose: is forgotten). */
  function onAnyConnect(cb: (appId: string) => void): () => void {
    anyConnectListeners.add(cb);
    return () => anyConnectListeners.delete(cb);
  }
  function onAnyClose(cb: (appId: string) => void): () => void {
    anyCloseListeners.add(cb);
    return () => anyCloseListeners.delete(cb);
  }

  /**
   * Work that must be done before an app's websocket is accepted (the socket server awaits
   * `prepare` before it answers the upgrade): with several daemons, the record that says this one
   * holds the app's connections, so that the others can reach it from the moment the app is
   * connected. A hook that fails refuses the connection.
   */
  const preparers = new Set<(appId: string) => Promise<void>>();
  function beforeAccept(cb: (appId: string) => Promise<void>): () => void {
    preparers.add(cb);
    return () => preparers.delete(cb);
  }
  const prepare = async (appId: string): Promise<void> => {
    await Promise.all([...preparers].map((cb) => cb(appId)));
  };

  // ---- replies awaited by correlation id ----
  const waiters = new Map<string, ReplyWaiter>();
  const late = new Map<string, number>();
  /** Remember an id whose wait ended without a reply; oldest first out (insertion order = expiry order). */
  function rememberLate(cid: string) {
    const now = clock.now();
    late.set(cid, now + LATE_MEMORY_MS);
    for (const [k, exp] of late) {
      if (exp > now && late.size <= LATE_MEMORY_MAX) break;
      late.delete(k);
    }
  }

  /** Await the reply to `correlationId` on `waiter.conn`; a connection that is already gone fails at once. */
  function expectReply(correlationId: string, waiter: ReplyWaiter): void {
    if (!byConn.has(waiter.conn.id)) return waiter.gone('the connection closed before the frame was sent');
    waiters.set(correlationId, waiter);
  }
  /** Stop waiting (the budget ran out): a reply that still comes is logged as late and ignored. */
  function forget(correlationId: string): void {
    if (waiters.delete(correlationId)) rememberLate(correlationId);
  }

  function bad(
    conn: SocketConn,
    why: 'malformed' | 'unknown_correlation_id' | 'wrong_connection',
    bytes: number,
  ): FrameVerdict {
    log.warn('socket frame ignored', { appId: conn.appId, connId: conn.id, why, bytes });
    const st = byConn.get(conn.id);
    if (!st) return { kind: 'ignored', why };
    const now = clock.now();
    const since = now - config.socketBadFrameWindowMs;
    st.badFrames.push(now);
    while (st.badFrames.length && must(st.badFrames[0]) <= since) st.badFrames.shift();
    if (st.badFrames.length > config.socketBadFrameLimit) {
      log.warn('socket closed: flood of bad frames', {
        appId: conn.appId,
        connId: conn.id,
        badFrames: st.badFrames.length,
        windowMs: config.socketBadFrameWindowMs,
      });
      return { kind: 'flood' };
    }
    return { kind: 'ignored', why };
  }

  /** Judge one frame from the app: `ping` → pong; a reply → its waiter; anything else is logged and ignored. */
  function handleFrame(conn: SocketConn, text: string): FrameVerdict {
    if (text === 'ping') return PONG;
    // most replies are a plain ack, read without a parse (socket-ack.ts)
    const ackEnd = plainAckEnd(text);
    if (ackEnd > 0) return settle(conn, text, text.slice(ACK_ID_START, ackEnd), ackStatus(text), undefined, undefined);
    let msg: unknown;
    try {
      if (tooDeep(text)) return bad(conn, 'malformed', text.length);
      msg = JSON.parse(text);
    } catch {
      return bad(conn, 'malformed', text.length);
    }
    if (!isRecord(msg)) return bad(conn, 'malformed', text.length);
    const m = msg;
    const cid = m.correlation_id;
    const status = m.status === undefined ? 200 : m.status;
    if (
      typeof cid !== 'string' ||
      cid.length === 0 ||
      typeof status !== 'number' ||
      !Number.isInteger(status) ||
      (m.message !== undefined && m.message !== null && typeof m.message !== 'string')
    ) {
      return bad(conn, 'malformed', text.length);
    }
    return settle(conn, text, cid, status, typeof m.message === 'string' ? m.message : undefined, m.body);
  }

  /** A well-formed reply: to the attempt awaiting its correlation id, or ignored (late, unknown, another app's). */
  function settle(
    conn: SocketConn,
    text: string,
    cid: string,
    status: number,
    message: string | undefined,
    body: unknown,
  ): FrameVerdict {
    const w = waiters.get(cid);
    if (!w) {
      if (late.has(cid)) {
        log.info('socket reply ignored: it came after the budget ran out or the delivery ended', {
          appId: conn.appId,
          connId: conn.id,
        });
        return { kind: 'ignored', why: 'late_reply' };
      }
      return bad(conn, 'unknown_correlation_id', text.length);
    }
    if (w.conn.appId !== conn.appId) return bad(conn, 'wrong_connection', text.length);
    waiters.delete(cid);
    const excerpt = text.length > EXCERPT_CHARS ? text.slice(0, EXCERPT_CHARS) + '…' : text;
    w.reply({
      correlationId: cid,
      status,
      message,
      body,
      hasBody: body !== undefined && body !== null,
      excerpt,
    });
    return REPLY;
  }

  /** Every open connection (for shutdown and the ping loop). */
  const all = (): SocketConn[] => [...byConn.values()].map((s) => s.conn);

  /** Open connections per app id. */
  function counts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of byApp) out[k] = v.length;
    return out;
  }

  return {
    issueTicket,
    redeemTicket,
    add,
    remove,
    count,
    openCount,
    counts,
    pick,
    all,
    onConnect,
    onAnyConnect,
    onAnyClose,
    beforeAccept,
    prepare,
    expectReply,
    forget,
    handleFrame,
  };
}

export type SocketSessions = ReturnType<typeof createSocketSessions>;
