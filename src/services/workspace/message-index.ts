/**
 * The messages table as channels and threads see it, read from the store every time (several
 * daemons write messages, so nothing is kept in memory between calls that another daemon could
 * make stale): pages of a channel in posting order, a thread's replies, and the per-channel bound.
 *
 * Posting order is (seq, id). `seq` is at least the time of posting and above every seq this
 * daemon gave (and above the newest of the channel when this daemon first posted to it, so a
 * restart with a clock behind keeps the order). Posting reads nothing of the channel: across
 * daemons the order is the order of their clocks, and two posts made in the same millisecond on
 * two daemons may get the same seq; the id settles their order, the same for every reader.
 *
 * The bound (workspaceMessagesPerChannel, thread replies included) is kept by counting: a post
 * counts the channel (the index's size; count(*) on PostgreSQL, where the composition root asks
 * for a count at every slack/4-th post of a daemon only: MessageIndexOptions) and, once it holds more than the bound
 * plus a slack of 1 % (at least 1), deletes the oldest down to the bound in one commit (a deleted thread root takes its
 * replies). Readers cut to the newest `perChannel` records, so nobody sees more than the bound while the slack waits to
 * be trimmed.
 *
 * Every change is announced on the store's 'ws_messages' channel (id, channel, thread root), so
 * that listeners (the console's live pages) in every daemon hear it and read again.
 */
import type { Clock } from '../../clock.js';
import type { Store, Transaction, TransactionOptions } from '../../store/types.js';
import { WORKSPACE_TABLES, type MessageRecord } from '../../model/workspace.js';
import type { ThreadSummary } from './message-view.js';
import { isRecord } from '../../unknown-values.js';

/** What listeners hear of a message added, changed or removed. */
export type MessageNotice = Pick<MessageRecord, 'id' | 'channelId'> & { threadRootId?: string };

const CHANNEL = 'ws_messages';
const MAX_PAYLOAD = 6_000; // the store's limit is 7,000 bytes; a notice is one line, split across payloads
/** Pages of a scan start small (most reads want a screenful) and grow up to this. */
const MAX_PAGE = 1000;

/** Posting order: seq, then id (two daemons may give the same seq to posts made at once). */
export const postingOrder = (a: MessageRecord, b: MessageRecord) =>
  a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

const noticeOf = (m: MessageRecord): MessageNotice => ({
  id: m.id,
  channelId: m.channelId,
  ...(m.threadRootId ? { threadRootId: m.threadRootId } : {}),
});

/** How far a channel may grow beyond its bound before a post trims it: 1 %, at least 1. */
const trimSlack = (perChannel: number) => Math.max(1, Math.floor(perChannel / 100));

/** What `scan` reads: a direction, where to start (exclusive), how many to find, and which. */
export interface Scan {
  /** Newest first. */
  desc: boolean;
  /** Start after this message (in the scan's direction); undefined: at the newest (desc) or oldest end. */
  from?: MessageRecord;
  want: number;
  /** The newest record readers no longer see (from `cut`): the scan never goes to it or beyond. */
  cut?: MessageRecord;
  keep: (m: MessageRecord) => boolean;
}

export interface MessageIndexOptions {
  /**
   * The trim cadence: count the channel at every post (the store counts from an index in memory),
   * or only at every slack/4-th post of this daemon (a count reads every row of the channel).
   */
  countEveryPost: boolean;
}

export function createMessageIndex(store: Store, clock: Clock, opts: MessageIndexOptions) {
  const listeners = new Set<(m: MessageNotice) => void>();
  /** Told when notices may have been lost (the store's LISTEN connection dropped): anything may have changed. */
  const lostListeners = new Set<() => void>();
  let unsubscribe: (() => void) | undefined;
  let lastSeq = 0;
  /** Channels whose newest seq this daemon has read (once: it only raises lastSeq). */
  const seeded = new Set<string>();
  /**
   * Posts of this daemon per channel since it last counted the channel. Where a count reads every row
   * of the channel (PostgreSQL), a daemon counts at every slack/4-th post of its own only: the store
   * may hold up to that many more per daemon beyond bound and slack until the next count (readers
   * cut to the bound all the same). Where it counts from an index in memory, at every post.
   */
  const uncounted = new Map<string, number>();
  /**
   * Trims this daemon runs, per channel: posts arriving meanwhile leave it to the one running (it counts again when
   * done).
   */
  const trimming = new Map<string, Promise<void>>();

  const get = (id: string) => store.get(WORKSPACE_TABLES.messages, id);
  const inChannel = async (channelId: string) =>
    (await store.find(WORKSPACE_TABLES.messages, 'channelId', channelId)).sort(postingOrder);
  const repliesOf = async (rootId: string) =>
    (await store.find(WORKSPACE_TABLES.messages, 'threadRootId', rootId)).sort(postingOrder);
  const held = (channelId: string) => store.countWhere(WORKSPACE_TABLES.messages, 'channelId', channelId);
  const page = (channelId: string, desc: boolean, limit: number, after?: MessageRecord) =>
    store.findPage(WORKSPACE_TABLES.messages, 'channelId', channelId, {
      orderBy: 'seq',
      desc,
      limit,
      ...(after ? { after: { value: after.seq, id: after.id } } : {}),
    });

  /**
   * The newest record of the channel that readers no longer see (the oldest beyond the newest
   * `perChannel`, waiting to be trimmed), or undefined when the channel is within its bound.
   * Counted again after the read: a trim in between would make the page cut too deep.
   */
  async function cut(channelId: string, perChannel: number): Promise<MessageRecord | undefined> {
    let n = await held(channelId);
    for (let attempt = 0; n > perChannel; attempt++) {
      const oldest = await page(channelId, false, n - perChannel);
      // posts made meanwhile only leave the cut a little shallow; a trim or deletion would leave it too deep
      const again = await held(channelId);
      if (again >= n || attempt >= 3)
        return again > perChannel ? oldest[Math.min(oldest.length, again - perChannel) - 1] : undefined;
      n = again;
    }
    return undefined;
  }

  /** Up to `want` messages that pass `keep`, page by page from `from` (see Scan). */
  async function scan(channelId: string, s: Scan): Promise<MessageRecord[]> {
    const out: MessageRecord[] = [];
    let from = s.from;
    if (!s.desc && s.cut && (!from || postingOrder(from, s.cut) < 0)) from = s.cut;
    for (let size = Math.min(MAX_PAGE, Math.max(20, s.want + 1)); ; size = Math.min(MAX_PAGE, size * 4)) {
      const got = await page(channelId, s.desc, size, from);
      for (const m of got) {
        if (s.desc && s.cut && postingOrder(m, s.cut) <= 0) return out;
        if (!s.keep(m)) continue;
        out.push(m);
        if (out.length >= s.want) return out;
      }
      if (got.length < size) return out;
      from = got[got.length - 1];
    }
  }

  function announce(notices: MessageNotice[]): void {
    if (notices.length === 0) return;
    const send = (lines: string[]) => void store.publish(CHANNEL, lines.join('\n')).catch(() => {}); // a missed notice only delays a live page
    let batch: string[] = [];
    let size = 0;
    for (const n of notices) {
      const line = JSON.stringify([n.id, n.channelId, n.threadRootId ?? '']);
      if (size + line.length + 1 > MAX_PAYLOAD && batch.length) {
        send(batch);
        batch = [];
        size = 0;
      }
      batch.push(line);
      size += line.length + 1;
    }
    send(batch);
  }

  function heard(payload: string): void {
    for (const line of payload.split('\n')) {
      try {
        const parsed: unknown = JSON.parse(line);
        const fields: unknown[] = Array.isArray(parsed) ? parsed : [];
        const [id, channelId, root] = fields;
        if (typeof id !== 'string' || typeof channelId !== 'string' || (root !== undefined && typeof root !== 'string'))
          continue; // not one of ours
        const n: MessageNotice = { id, channelId, ...(root ? { threadRootId: root } : {}) };
        for (const l of listeners) l(n);
      } catch {
        // not one of ours
      }
    }
  }

  /**
   * store.transaction, then the notice of each message it wrote: a message put, or one deleted that
   * it read (its record tells the channel and thread). Only the run that committed is announced.
   */
  async function transaction<T>(work: (tx: Transaction) => Promise<T>, opts?: TransactionOptions): Promise<T> {
    let run: Noticing | undefined;
    const result = await store.transaction((tx) => work((run = new Noticing(tx))), opts);
    if (run) announce(run.notices());
    return result;
  }

  /** This daemon's next seq for the channel (see the top of this file). */
  async function nextSeq(channelId: string): Promise<number> {
    if (!seeded.has(channelId)) {
      const [newest] = await page(channelId, true, 1);
      if (newest) lastSeq = Math.max(lastSeq, newest.seq);
      seeded.add(channelId);
    }
    lastSeq = Math.max(clock.now(), lastSeq + 1);
    return lastSeq;
  }

  /**
   * Delete the channel's oldest records down to `perChannel` once it holds more than the bound and
   * its slack; again while it is over (posts went on meanwhile). Each deletion is a transaction on
   * its records: when another daemon trimmed them first, nothing is deleted and the next post tries
   * again; when it trimmed between this count and the page read, the channel is counted afresh
   * before anything is deleted. Failures are left to the next post too: the post itself is made.
   */
  async function trim(channelId: string, perChannel: number): Promise<void> {
    if (trimming.has(channelId)) return;
    const run = (async () => {
      for (let round = 0; round < 5; round++) {
        const n = await held(channelId);
        if (n <= perChannel + trimSlack(perChannel)) return;
        const oldest = await page(channelId, false, n - perChannel);
        // Another daemon's trim between the count and the page makes the page the oldest of fewer
        // records: deleting it would cut below the bound. So count again; if fewer, start over.
        if ((await held(channelId)) < n) continue;
        // read again in the transaction: when another daemon trimmed one first, nothing is deleted (the
        // next post tries again); a change of one meanwhile (a reaction) runs it again
        const trimmed = await transaction(async (tx) => {
          const now = await tx.getMany(oldest.map((m) => ({ table: WORKSPACE_TABLES.messages, id: m.id })));
          if (now.some((m) => !m)) return false;
          for (const m of now) {
            if (!m) continue;
            tx.delete(WORKSPACE_TABLES.messages, m.id);
            if (!m.threadRootId)
              for (const r of await tx.find(WORKSPACE_TABLES.messages, 'threadRootId', m.id))
                tx.delete(WORKSPACE_TABLES.messages, r.id);
          }
          return true;
        });
        if (!trimmed) return;
      }
    })();
    trimming.set(channelId, run);
    try {
      await run;
    } catch {
      // the next post over the bound tries again
    } finally {
      trimming.delete(channelId);
    }
  }

  /**
   * Add a new message (its seq given here) to its channel in a transaction, with what `within` reads
   * and writes in it (the post's event; a scheduled post's record); `within` answering false posts
   * nothing (undefined). Then trim the channel if it grew beyond `perChannel` and its slack.
   */
  async function add(
    draft: Omit<MessageRecord, 'seq'>,
    perChannel: number,
    within?: (tx: Transaction, m: MessageRecord) => Promise<boolean | void>,
    txOpts?: TransactionOptions,
  ): Promise<MessageRecord | undefined> {
    const m: MessageRecord = { ...draft, seq: await nextSeq(draft.channelId) };
    const posted = await transaction(async (tx) => {
      if ((await within?.(tx, m)) === false) return false;
      tx.put(WORKSPACE_TABLES.messages, m.id, m);
      return true;
    }, txOpts);
    if (!posted) return undefined;
    const every = opts.countEveryPost ? 1 : Math.max(1, Math.floor(trimSlack(perChannel) / 4));
    const since = (uncounted.get(m.channelId) ?? 0) + 1;
    if (since < every) uncounted.set(m.channelId, since);
    else {
      uncounted.delete(m.channelId);
      await trim(m.channelId, perChannel);
    }
    return m;
  }

  return {
    get,
    /** Every record of the channel (hidden ones too), oldest first: for deleting the channel, and search. */
    inChannel,
    cut,
    scan,
    /** The replies of a thread, oldest first. */
    repliesOf,
    replyIds: async (rootId: string) => (await repliesOf(rootId)).map((r) => r.id),
    /** Reply count, repliers and last reply time, counting what everyone sees (not ephemeral replies). */
    async thread(rootId: string): Promise<ThreadSummary> {
      const rs = (await repliesOf(rootId)).filter((r) => !r.ephemeralTo);
      return {
        count: rs.length,
        repliers: [...new Set(rs.map((r) => r.author))],
        lastMilli: rs[rs.length - 1]?.timestampMilli,
      };
    },
    /**
     * Subscribe to every message added, changed or removed by any daemon (the console's live pages);
     * `onLost` is called instead when notices may have been lost (then any message may have changed).
     * Returns the unsubscribe.
     */
    onChange(listener: (m: MessageNotice) => void, onLost?: () => void): () => void {
      const entry = (m: MessageNotice) => listener(m);
      const lost = onLost && (() => onLost());
      listeners.add(entry);
      if (lost) lostListeners.add(lost);
      unsubscribe ??= store.subscribe(CHANNEL, heard, () => {
        for (const l of [...lostListeners]) l();
      });
      return () => {
        listeners.delete(entry);
        if (lost) lostListeners.delete(lost);
        if (listeners.size === 0 && unsubscribe) {
          unsubscribe();
          unsubscribe = undefined;
        }
      };
    },
    add,
    transaction,
  };
}

export type MessageIndex = ReturnType<typeof createMessageIndex>;

/** A record of the messages table (what a generic read or write of one hands over). */
const isMessage = (v: unknown): v is MessageRecord =>
  isRecord(v) && typeof v.id === 'string' && typeof v.channelId === 'string';

/**
 * A transaction as the message index hands it out: the same, and it keeps what it read and wrote
 * of the messages table, for the notices of its changes.
 */
class Noticing implements Transaction {
  private readonly read = new Map<string, MessageRecord>();
  private readonly written = new Map<string, MessageRecord | null>();

  constructor(private readonly tx: Transaction) {}

  /** A record read of any table (the store's reads are generic): kept when it is a message. */
  private saw(m: unknown): void {
    if (isMessage(m)) this.read.set(m.id, m);
  }

  get: Transaction['get'] = async (table, id, opts) => {
    const r = await this.tx.get(table, id, opts);
    if (table === WORKSPACE_TABLES.messages) this.saw(r);
    return r;
  };

  getMany: Transaction['getMany'] = async (keys, opts) => {
    const r = await this.tx.getMany(keys, opts);
    keys.forEach((k, i) => k.table === WORKSPACE_TABLES.messages && this.saw(r[i]));
    return r;
  };

  find: Transaction['find'] = async (table, field, value, opts) => {
    const r = await this.tx.find(table, field, value, opts);
    if (table === WORKSPACE_TABLES.messages) r.forEach((m) => this.saw(m));
    return r;
  };

  put: Transaction['put'] = (table, id, value) => {
    this.tx.put(table, id, value);
    if (table === WORKSPACE_TABLES.messages && isMessage(value)) this.written.set(id, value);
  };

  delete: Transaction['delete'] = (table, id) => {
    this.tx.delete(table, id);
    if (table === WORKSPACE_TABLES.messages) this.written.set(id, null);
  };

  apply: Transaction['apply'] = (c) => {
    this.tx.apply(c);
    if (c.table === WORKSPACE_TABLES.messages) this.written.set(c.id, c.value);
  };

  /** The notices of the messages written. */
  notices(): MessageNotice[] {
    const out: MessageNotice[] = [];
    for (const [id, m] of this.written) {
      const rec = m ?? this.read.get(id);
      if (rec) out.push(noticeOf(rec));
    }
    return out;
  }
}
