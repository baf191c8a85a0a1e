/**
 * A socket-mode app client that speaks docs/protocol.md §6 the way the official SDK does:
 * GET /apps/{id}/websocket-connection?appKey=… for a URL, open it, send the text frame `ping`
 * every N s, answer each `{payload, correlation_id}` with a BINARY JSON frame (or nothing, as
 * the SDK does for events and for triggers it has no handler for), and on close wait 2 s,
 * fetch a new URL and reconnect — and give up for good when that fetch fails.
 */
import { WebSocket } from 'ws';
import { systemClock, type Clock, type Timer } from '../../src/clock.js';
import { CONDITION_MS } from './until.js';
import { must } from '../../src/must.js';
import { eventChecker } from './event-schemas.js';

interface SdkReply {
  status?: number;
  message?: string;
  body?: unknown;
}

interface Delivered {
  payload: Record<string, any>;
  correlationId: string;
  at: number;
}

export interface SdkSocketClientOptions {
  baseUrl: string;
  appId: string;
  appKey: string;
  /** What to answer; undefined = no reply (the SDK's behaviour for events and unhandled triggers). */
  handler?: (payload: Record<string, any>) => SdkReply | undefined | Promise<SdkReply | undefined>;
  /** Text `ping` period (the SDK: 25 s). 0 disables. */
  pingIntervalMs?: number;
  /** Wait before reconnecting after a close (the SDK: 2 s). */
  reconnectDelayMs?: number;
  /** Reconnect after a close (the SDK always does). */
  autoReconnect?: boolean;
  /** Send replies as text frames instead of binary ones. */
  replyAsText?: boolean;
  /**
   * Check every event received against schemas/events/ (the default); false for a test that hands the transport
   * payloads of its own making.
   */
  checkEvents?: boolean;
  /**
   * The app's own timers (its pings, its reconnect delay) and the time frames are stamped with: a test's, to control
   * them.
   */
  clock?: Clock;
}

export interface SdkSocketClient {
  /** Resolves on the first open (rejects when the first URL fetch or connect fails). */
  start(): Promise<void>;
  /**
   * Stop reconnecting and close the socket (code 1000); rejects (failing the test's teardown) when an event it was
   * sent did not match its schema (schemas/events/, event-schemas.ts).
   */
  stop(): Promise<void>;
  readonly ws: WebSocket | undefined;
  readonly delivered: Delivered[];
  readonly opens: number;
  readonly closes: Array<{ code: number; reason: string }>;
  readonly pongs: number;
  /** Set when a URL fetch failed: like the SDK, the client then never tries again. */
  readonly gaveUp: boolean;
  isOpen(): boolean;
  /** Resolves once the client is open again (after `opens` exceeds `afterOpens`). */
  waitOpen(afterOpens?: number): Promise<void>;
  /**
   * Resolves once `pred` holds (what the daemon does over the network; rejects after CONDITION_MS, or when an event it
   * was sent did not match its schema).
   */
  waitFor(pred: () => boolean, what?: string): Promise<void>;
  sendRaw(data: string | Buffer, binary?: boolean): void;
  fetchUrl(): Promise<string>;
}

export function createSdkSocketClient(opts: SdkSocketClientOptions): SdkSocketClient {
  const pingEvery = opts.pingIntervalMs ?? 25_000;
  const delay = opts.reconnectDelayMs ?? 2000;
  const autoReconnect = opts.autoReconnect ?? true;
  const clock = opts.clock ?? systemClock;
  const events = eventChecker();
  let ws: WebSocket | undefined;
  let stopped = false;
  let pingTimer: Timer | undefined;
  let reconnectTimer: Timer | undefined;
  const state = {
    opens: 0,
    pongs: 0,
    gaveUp: false,
    delivered: [] as Delivered[],
    closes: [] as Array<{ code: number; reason: string }>,
  };

  async function fetchUrl(): Promise<string> {
    const u = new URL(`/apps/${encodeURIComponent(opts.appId)}/websocket-connection`, opts.baseUrl);
    u.searchParams.set('appKey', opts.appKey);
    const res = await fetch(u);
    if (res.status !== 200) throw new Error(`websocket-connection answered ${res.status}`);
    const { url } = (await res.json()) as { url: string };
    return url;
  }

  function connect(url: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const sock = new WebSocket(url);
      ws = sock;
      let opened = false;
      sock.on('open', () => {
        opened = true;
        state.opens++;
        if (pingEvery > 0) {
          clock.clear(pingTimer);
          pingTimer = clock.setInterval(() => sock.readyState === WebSocket.OPEN && sock.send('ping'), pingEvery);
        }
        resolve();
      });
      sock.on('message', (data, isBinary) => {
        const text = data.toString();
        if (!isBinary && text === 'pong') {
          state.pongs++;
          return;
        }
        let frame: { payload: Record<string, any>; correlation_id: string };
        try {
          frame = JSON.parse(text);
        } catch {
          return;
        }
        state.delivered.push({ payload: frame.payload, correlationId: frame.correlation_id, at: clock.now() });
        if (opts.checkEvents !== false) events.see(frame.payload);
        void Promise.resolve(opts.handler?.(frame.payload)).then((reply) => {
          if (!reply || sock.readyState !== WebSocket.OPEN) return;
          const out = JSON.stringify({
            correlation_id: frame.correlation_id,
            status: reply.status ?? 200,
            ...(reply.message !== undefined ? { message: reply.message } : {}),
            ...(reply.body !== undefined ? { body: reply.body } : {}),
          });
          if (opts.replyAsText) sock.send(out);
          else sock.send(Buffer.from(out), { binary: true });
        });
      });
      sock.on('error', (e) => {
        if (!opened) reject(e);
      });
      sock.on('close', (code, reason) => {
        clock.clear(pingTimer);
        state.closes.push({ code, reason: reason.toString() });
        if (ws === sock) ws = undefined;
        if (!opened) reject(new Error(`closed before open: ${code}`));
        if (stopped || !autoReconnect) return;
        reconnectTimer = clock.setTimeout(reconnect, delay);
      });
    });
  }

  async function reconnect(): Promise<void> {
    if (stopped) return;
    let url: string;
    try {
      url = await fetchUrl();
    } catch {
      state.gaveUp = true; // the SDK never tries again after a failed fetch
      return;
    }
    if (stopped) return;
    await connect(url).catch(() => {}); // a failed connect closes, and the close handler schedules the next try
  }

  async function waitFor(pred: () => boolean, what = 'condition'): Promise<void> {
    const end = Date.now() + CONDITION_MS;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    events.assert();
  }

  return {
    async start() {
      await connect(await fetchUrl());
    },
    async stop() {
      stopped = true;
      clock.clear(reconnectTimer);
      clock.clear(pingTimer);
      const s = ws;
      if (s && s.readyState !== WebSocket.CLOSED) {
        await new Promise<void>((r) => {
          s.once('close', () => r());
          if (s.readyState === WebSocket.CONNECTING) s.terminate();
          else s.close(1000, 'bye');
          setTimeout(() => {
            s.terminate();
            r();
          }, 1000).unref();
        });
      }
      events.assert();
    },
    get ws() {
      return ws;
    },
    get delivered() {
      return state.delivered;
    },
    get opens() {
      return state.opens;
    },
    get closes() {
      return state.closes;
    },
    get pongs() {
      return state.pongs;
    },
    get gaveUp() {
      return state.gaveUp;
    },
    isOpen: () => ws?.readyState === WebSocket.OPEN,
    waitOpen(afterOpens = 0) {
      return waitFor(() => state.opens > afterOpens && ws?.readyState === WebSocket.OPEN, 'the socket to open');
    },
    waitFor,
    sendRaw(data, binary = false) {
      must(ws).send(data, { binary });
    },
    fetchUrl,
  };
}

/** A client for `app` on a test daemon, fast to reconnect and without pings, stopped at teardown. */
export function connectTestClient(
  t: { teardown(fn: () => unknown): void },
  d: { url: string },
  app: { id: string; appKey: string },
  over: Partial<SdkSocketClientOptions> = {},
): SdkSocketClient {
  const c = createSdkSocketClient({
    baseUrl: d.url,
    appId: app.id,
    appKey: app.appKey,
    reconnectDelayMs: 50,
    pingIntervalMs: 0,
    ...over,
  });
  t.teardown(() => c.stop());
  return c;
}
