/**
 * publish/subscribe over LISTEN/NOTIFY. LISTEN needs a connection of its own that stays open
 * (a pooled one would be handed to queries and released), so the notifier keeps one dedicated
 * client, made when the store opens: a subscribe then sends its LISTEN at once, so it is in
 * place before anything another daemon does after it. When the connection drops it is made
 * again (with a growing delay) and LISTENs again on every channel; messages sent while it was
 * down are lost, so listeners must treat a message as a hint to look at the store, never as
 * the only copy of anything. Once the LISTENs are back, each subscription's gap handler is told
 * how long the connection was down, so it can look at the store for what it missed.
 */
import pg from 'pg';
import type { Clock, Timer } from '../../clock.js';
import { checkChannel, type Gap, type Listener, type StoreLogger } from '../types.js';
import { messageOf } from '../../unknown-values.js';

/** Channel names are spelled into LISTEN as quoted identifiers: prefixed, and of checkChannel's characters only. */
export function pgChannel(channel: string): string {
  checkChannel(channel);
  return `appreg_${channel}`;
}

interface NotifierOptions {
  client: () => pg.Client;
  logger: StoreLogger;
  /** After a drop, the first reconnect waits this long (ms; default 250), doubling up to 5 s. */
  retryMs?: number;
  /** The reconnect's timer, and how long the connection was down. */
  clock: Clock;
}

export class Notifier {
  readonly #opts: NotifierOptions;
  readonly #listeners = new Map<string, Set<Listener>>();
  /** Each subscription's gap handler (keyed by its entry in #listeners). */
  readonly #gaps = new Map<Listener, Gap>();
  /** When the connection dropped (the clock's time), until it is back and the gaps are told. */
  #droppedAt: number | null = null;
  #client: pg.Client | null = null;
  /** The connection being made (and the LISTENs after it); publish waits for it so its own listeners hear it. */
  #ready: Promise<void> | null = null;
  /** LISTEN/UNLISTEN statements, in order, on the current client. */
  #queue: Promise<void> = Promise.resolve();
  readonly #firstRetryMs: number;
  #retryMs: number;
  #timer: Timer | null = null;
  #closed = false;

  constructor(opts: NotifierOptions) {
    this.#opts = opts;
    this.#firstRetryMs = this.#retryMs = opts.retryMs ?? 250;
  }

  /** Connect now (the store's open waits for it: a database that takes no second connection fails the open). */
  async start(): Promise<void> {
    this.#connect();
    await this.#ready;
  }

  subscribe(channel: string, fn: Listener, onGap?: Gap): () => void {
    const name = pgChannel(channel);
    if (this.#closed) throw new Error('store is closed');
    let set = this.#listeners.get(name);
    if (!set) {
      set = new Set();
      this.#listeners.set(name, set);
      if (this.#client) this.#run(`LISTEN "${name}"`);
      else this.#connect();
    }
    // A function subscribed twice gets each message twice: wrap it so each subscription is its own entry.
    const entry: Listener = (p) => fn(p);
    set.add(entry);
    if (onGap) this.#gaps.set(entry, onGap);
    return () => {
      this.#gaps.delete(entry);
      const s = this.#listeners.get(name);
      if (!s?.delete(entry) || s.size) return;
      this.#listeners.delete(name);
      if (this.#client) this.#run(`UNLISTEN "${name}"`);
    };
  }

  /** Resolves once every LISTEN asked for so far is in place (or failed: then the reconnect redoes them). */
  async settled(): Promise<void> {
    if (this.#ready) await this.#ready.catch(() => {});
    await this.#queue;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#opts.clock.clear(this.#timer);
    this.#listeners.clear();
    this.#gaps.clear();
    await this.settled();
    const c = this.#client;
    this.#client = null;
    if (c) await c.end().catch(() => {});
  }

  #run(sql: string): void {
    const c = this.#client;
    if (!c) return;
    // One at a time, in order, each after the one before answered (pg deprecates queueing a query on a
    // client that is still running one); a failed one means the connection broke, and its
    // 'error'/'end' handler reconnects and LISTENs again.
    this.#queue = this.#queue
      .then(() => c.query(sql))
      .then(
        () => {},
        () => {},
      );
  }

  #connect(): void {
    if (this.#ready || this.#client || this.#closed) return;
    const c = this.#opts.client();
    let gone = false;
    const lost = (err?: Error) => {
      if (gone) return; // 'error' and 'end' both come for one drop
      gone = true;
      if (this.#client === c) this.#client = null;
      c.removeAllListeners('notification');
      c.end().catch(() => {});
      if (this.#closed) return;
      this.#droppedAt ??= this.#opts.clock.now();
      this.#opts.logger.warn('store: the LISTEN connection to PostgreSQL dropped; reconnecting', {
        error: err?.message,
        retryMs: this.#retryMs,
      });
      this.#scheduleReconnect();
    };
    c.on('notification', (msg) => {
      const set = this.#listeners.get(msg.channel);
      if (!set) return;
      for (const fn of [...set]) {
        try {
          fn(msg.payload ?? '');
        } catch (err) {
          this.#opts.logger.warn('store: a subscriber threw', { channel: msg.channel, error: messageOf(err) });
        }
      }
    });
    c.on('error', lost);
    c.on('end', () => lost());
    this.#ready = (async () => {
      await c.connect();
      if (this.#closed) {
        await c.end().catch(() => {});
        return;
      }
      for (const name of this.#listeners.keys()) await c.query(`LISTEN "${name}"`);
      this.#client = c;
      this.#retryMs = this.#firstRetryMs;
      this.#tellGaps();
    })();
    this.#ready.then(
      () => {
        this.#ready = null;
      },
      (err: Error) => {
        this.#ready = null;
        lost(err);
      },
    );
  }

  /** After a reconnect: every subscription may have missed messages while the connection was down. */
  #tellGaps(): void {
    if (this.#droppedAt === null) return;
    const lostMs = Math.max(0, Math.ceil(this.#opts.clock.now() - this.#droppedAt));
    this.#droppedAt = null;
    for (const gap of [...this.#gaps.values()]) {
      try {
        gap(lostMs);
      } catch (err) {
        this.#opts.logger.warn('store: a gap handler threw', { error: messageOf(err) });
      }
    }
  }

  #scheduleReconnect(): void {
    if (this.#timer || this.#closed) return;
    const wait = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, 5000);
    this.#timer = this.#opts.clock.setTimeout(() => {
      this.#timer = null;
      this.#connect();
      return this.#ready?.catch(() => {}); // the reconnection, for a test clock to wait for
    }, wait);
  }
}
