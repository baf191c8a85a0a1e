/**
 * In-memory indexes over the messages table, rebuilt from the store on start and kept in step
 * by every commit the messages service makes: each channel's messages in posting order
 * (thread replies included, for the per-channel bound) and each thread's replies.
 */
import type { Change, Store } from '../../store/types.js';
import { WT, type MessageRecord } from './records.js';
import type { ThreadSummary } from './message-view.js';

export function createMessageIndex(store: Store) {
  const byChannel = new Map<string, string[]>();
  const replies = new Map<string, string[]>();
  let seq = 0;
  const listeners = new Set<(m: MessageRecord) => void>();

  const push = (m: Map<string, string[]>, k: string, v: string) => {
    const a = m.get(k);
    if (a) a.push(v);
    else m.set(k, [v]);
  };
  const drop = (m: Map<string, string[]>, k: string, v: string) => {
    const a = m.get(k);
    if (!a) return;
    const i = a.indexOf(v);
    if (i >= 0) a.splice(i, 1);
    if (a.length === 0) m.delete(k);
  };
  function add(m: MessageRecord) {
    push(byChannel, m.channelId, m.id);
    if (m.threadRootId) push(replies, m.threadRootId, m.id);
    if (m.seq >= seq) seq = m.seq + 1;
  }
  function remove(m: MessageRecord) {
    drop(byChannel, m.channelId, m.id);
    if (m.threadRootId) drop(replies, m.threadRootId, m.id);
    replies.delete(m.id);
  }

  for (const m of [...store.values<MessageRecord>(WT.messages)].sort((a, b) => a.seq - b.seq)) add(m);

  const get = (id: string) => store.get<MessageRecord>(WT.messages, id);
  const all = (ids: string[] | undefined) => (ids ?? []).map(get).filter((m): m is MessageRecord => !!m);

  return {
    nextSeq: () => seq++,
    get,
    /** Every message of the channel, oldest first. */
    inChannel: (channelId: string) => all(byChannel.get(channelId)),
    /** How many messages the channel holds, replies included. */
    count: (channelId: string) => byChannel.get(channelId)?.length ?? 0,
    /** The oldest message ids of the channel, at most n. */
    oldest: (channelId: string, n: number) => (byChannel.get(channelId) ?? []).slice(0, n),
    /** The replies of a thread, oldest first. */
    repliesOf: (rootId: string) => all(replies.get(rootId)),
    replyIds: (rootId: string) => [...(replies.get(rootId) ?? [])],
    /** Reply count, repliers and last reply time, counting what everyone sees (not ephemeral replies). */
    thread(rootId: string): ThreadSummary {
      const rs = all(replies.get(rootId)).filter((r) => !r.ephemeralTo);
      return { count: rs.length, repliers: [...new Set(rs.map((r) => r.author))], lastMilli: rs[rs.length - 1]?.timestampMilli };
    },
    /** Subscribe to every message added, changed or removed (the console's live pages); returns the unsubscribe. */
    onChange(listener: (m: MessageRecord) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** store.commit of message changes, with the indexes kept in step (memory first, as the store does). */
    commit(changes: Change[]): Promise<void> {
      const before = changes.map((c) => (c.table === WT.messages ? get(c.id) : undefined));
      const p = store.commit(changes);
      changes.forEach((c, i) => {
        if (c.table !== WT.messages) return;
        const prev = before[i];
        if (prev && !c.value) remove(prev);
        if (!prev && c.value) add(c.value as MessageRecord);
        const changed = (c.value ?? prev) as MessageRecord | undefined;
        if (changed) for (const l of listeners) l(changed);
      });
      return p;
    },
  };
}

export type MessageIndex = ReturnType<typeof createMessageIndex>;
