/**
 * The messages table as channels and threads see it, read from the store every time (several
 * daemons write messages, so nothing is kept in memory between calls): a channel's messages in
 * posting order (thread replies included, for the per-channel bound) and a thread's replies.
 *
 * Posting order is (seq, id). `seq` is a hybrid clock: at least the time of posting, above every
 * seq of the channel as read, and above every seq this daemon gave. So a post that follows another
 * (whichever daemon took either) sorts after it; two posts made at once on two daemons may get the
 * same seq, and the id settles their order, the same for every reader.
 *
 * Every change is announced on the store's 'ws_messages' channel (id, channel, thread root), so
 * that listeners (the console's live pages) in every daemon hear it and read again.
 */
import type { Clock } from '../../clock.js';
import type { Change, Expectation, Store } from '../../store/types.js';
import { WT, type MessageRecord } from './records.js';
import type { ThreadSummary } from './message-view.js';

/** What listeners hear of a message added, changed or removed. */
export type MessageNotice = Pick<MessageRecord, 'id' | 'channelId'> & { threadRootId?: string };

const CHANNEL = 'ws_messages';
const MAX_PAYLOAD = 6_000; // the store's limit is 7,000 bytes; a notice is one line, split across payloads

/** Posting order: seq, then id (two daemons may give the same seq to posts made at once). */
export const postingOrder = (a: MessageRecord, b: MessageRecord) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function createMessageIndex(store: Store, clock: Clock) {
  const listeners = new Set<(m: MessageNotice) => void>();
  let unsubscribe: (() => void) | undefined;
  let lastSeq = 0;
  // Posts of this daemon under way, per channel: what they add and what they remove for the bound,
  // so that posts made at once neither count the channel short nor remove the same message twice.
  // A post whose commit ended while a read of the channel was running stays counted (`done`) until
  // no read is running: that read may have started before the commit.
  interface Flight {
    adds: Set<string>;
    victims: Set<string>;
    doneAdds: Set<string>;
    doneVictims: Set<string>;
    reads: number;
  }
  const inFlight = new Map<string, Flight>();
  // A read of a channel for posting, shared by the posts that arrive while it runs (a full channel is
  // 10,000 records: one read per wave of posts, not one per post). Safe with `Flight`: what a post sees
  // is the store at some moment after it began, or before plus every commit of this daemon since.
  interface Snapshot {
    all: MessageRecord[];
    ids: Set<string>;
    replies: Map<string, MessageRecord[]>;
  }
  const reading = new Map<string, Promise<Snapshot>>();
  function snapshot(channelId: string): Promise<Snapshot> {
    let p = reading.get(channelId);
    if (!p) {
      p = inChannel(channelId).then((all) => {
        const replies = new Map<string, MessageRecord[]>();
        for (const m of all) {
          if (!m.threadRootId) continue;
          const rs = replies.get(m.threadRootId);
          if (rs) rs.push(m);
          else replies.set(m.threadRootId, [m]);
        }
        return { all, ids: new Set(all.map((m) => m.id)), replies };
      });
      const mine = p;
      reading.set(channelId, mine);
      void mine.finally(() => {
        if (reading.get(channelId) === mine) reading.delete(channelId);
      }).catch(() => {});
    }
    return p;
  }
  function flightOf(channelId: string): Flight {
    let f = inFlight.get(channelId);
    if (!f) inFlight.set(channelId, (f = { adds: new Set(), victims: new Set(), doneAdds: new Set(), doneVictims: new Set(), reads: 0 }));
    return f;
  }
  function settle(channelId: string, f: Flight): void {
    if (f.reads === 0) {
      f.doneAdds.clear();
      f.doneVictims.clear();
    }
    if (f.reads === 0 && f.adds.size === 0 && f.victims.size === 0) inFlight.delete(channelId);
  }

  const get = (id: string) => store.get<MessageRecord>(WT.messages, id);
  const inChannel = async (channelId: string) => (await store.find<MessageRecord>(WT.messages, 'channelId', channelId)).sort(postingOrder);
  const repliesOf = async (rootId: string) => (await store.find<MessageRecord>(WT.messages, 'threadRootId', rootId)).sort(postingOrder);

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
        const [id, channelId, root] = JSON.parse(line) as [string, string, string];
        const n: MessageNotice = { id, channelId, ...(root ? { threadRootId: root } : {}) };
        for (const l of listeners) l(n);
      } catch {
        // not one of ours
      }
    }
  }

  const notice = (m: MessageRecord): MessageNotice => ({ id: m.id, channelId: m.channelId, ...(m.threadRootId ? { threadRootId: m.threadRootId } : {}) });

  /**
   * store.commit of message changes, then the notice of each. `removed` are the records of the
   * messages it deletes (as read), for their notices.
   */
  async function commit(changes: Change[], expect: Expectation[] = [], removed: readonly MessageRecord[] = []): Promise<void> {
    await store.commit(changes, expect.length ? expect : undefined);
    const was = new Map(removed.map((m) => [m.id, m]));
    const notices: MessageNotice[] = [];
    for (const c of changes) {
      if (c.table !== WT.messages) continue;
      const m = (c.value as MessageRecord | null) ?? was.get(c.id);
      if (m) notices.push(notice(m));
    }
    announce(notices);
  }

  /**
   * Add a new message (its seq given here) to its channel, removing the channel's oldest messages
   * (and their threads) beyond `perChannel`, with `extra` changes and `expect` in the same commit.
   */
  async function add(draft: Omit<MessageRecord, 'seq'>, perChannel: number, extra: Change[] = [], expect: Expectation[] = []): Promise<MessageRecord> {
    const flight = flightOf(draft.channelId);
    flight.reads++;
    let snap: Snapshot;
    try {
      snap = await snapshot(draft.channelId);
    } finally {
      flight.reads--;
    }
    const { all, ids, replies } = snap;
    const seq = Math.max(clock.now(), (all[all.length - 1]?.seq ?? -1) + 1, lastSeq + 1);
    lastSeq = seq;
    const m = { ...draft, seq } as MessageRecord;
    const removing = (id: string) => flight.victims.has(id) || flight.doneVictims.has(id);
    let removed = 0;
    for (const id of new Set([...flight.victims, ...flight.doneVictims])) if (ids.has(id)) removed++;
    let pending = 0;
    for (const id of new Set([...flight.adds, ...flight.doneAdds])) if (!ids.has(id)) pending++;
    let over = all.length - removed + pending + 1 - perChannel;
    const gone = new Map<string, MessageRecord>();
    for (let i = 0; over > 0 && i < all.length; i++) {
      const old = all[i]!;
      if (removing(old.id)) continue;
      over--;
      gone.set(old.id, old);
      for (const r of replies.get(old.id) ?? []) if (!removing(r.id)) gone.set(r.id, r);
    }
    if (m.threadRootId) gone.delete(m.threadRootId);
    flight.adds.add(m.id);
    for (const id of gone.keys()) flight.victims.add(id);
    settle(draft.channelId, flight); // this read is over: what ended before it is in the store now
    try {
      await commit([{ table: WT.messages, id: m.id, value: m }, ...[...gone.keys()].map((id) => ({ table: WT.messages, id, value: null })), ...extra], expect, [...gone.values()]);
    } finally {
      flight.adds.delete(m.id);
      for (const id of gone.keys()) flight.victims.delete(id);
      if (flight.reads > 0) {
        flight.doneAdds.add(m.id);
        for (const id of gone.keys()) flight.doneVictims.add(id);
      }
      settle(draft.channelId, flight);
    }
    return m;
  }

  return {
    get,
    /** Every message of the channel, oldest first. */
    inChannel,
    /** The replies of a thread, oldest first. */
    repliesOf,
    replyIds: async (rootId: string) => (await repliesOf(rootId)).map((r) => r.id),
    /** Reply count, repliers and last reply time, counting what everyone sees (not ephemeral replies). */
    async thread(rootId: string): Promise<ThreadSummary> {
      const rs = (await repliesOf(rootId)).filter((r) => !r.ephemeralTo);
      return { count: rs.length, repliers: [...new Set(rs.map((r) => r.author))], lastMilli: rs[rs.length - 1]?.timestampMilli };
    },
    /** Subscribe to every message added, changed or removed by any daemon (the console's live pages); returns the unsubscribe. */
    onChange(listener: (m: MessageNotice) => void): () => void {
      listeners.add(listener);
      unsubscribe ??= store.subscribe(CHANNEL, heard);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0 && unsubscribe) {
          unsubscribe();
          unsubscribe = undefined;
        }
      };
    },
    add,
    commit,
  };
}

export type MessageIndex = ReturnType<typeof createMessageIndex>;
