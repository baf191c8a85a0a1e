/**
 * A recording as the store keeps it (model/recording.ts): its head, which says whether it is on and holds what it has
 * seen, and one record per event. Every write is a transaction on the head, so the daemons of one database that hear
 * the same change append it once: the first writes it, the others find it seen. What a message's or a delivery's
 * change appends is decided here, against the head; which recordings are on and when to append is
 * server/recordings.ts's (the live side).
 */
import crypto from 'node:crypto';
import { newId } from '../crypto.js';
import type { Change, Store, Transaction } from '../store/types.js';
import { RECORDING_TABLES, recordingEventId, type RecordingRecord } from '../model/recording.js';
import type { MessageRecord } from '../model/workspace.js';
import type { DeliveryRecord } from '../model/delivery.js';
import type { Principal } from '../services/identity.js';
import { notFound } from '../errors.js';
import type { RecordedCall, RecordedEvent, SeenMessage } from '../recording-events.js';

/** At most this many events a recording keeps; later ones are counted as left out. */
const MAX_EVENTS = 5000;
/** At most this many stopped recordings are kept (the oldest go first). */
const MAX_KEPT = 50;
/** Events read (and recordings deleted) per round trip. */
const BATCH = 500;
export const RECORDINGS = RECORDING_TABLES.recordings;
const EVENTS = RECORDING_TABLES.events;

export interface RecordingInfo {
  id: string;
  workspaceId: string;
  /** The person who started it. */
  ownerId: string;
  startedAt: string;
  stoppedAt?: string;
  /** Who the console acts as while it is on (the owner only), and their name. */
  actingAs?: { id: string; name: string };
  events: number;
  /** Events left out past the limit. */
  dropped: number;
}

export const infoOf = (r: RecordingRecord): RecordingInfo => ({
  id: r.id,
  workspaceId: r.workspaceId,
  ownerId: r.ownerId,
  startedAt: r.startedAt,
  ...(r.stoppedAt ? { stoppedAt: r.stoppedAt } : {}),
  ...(r.actingAs ? { actingAs: r.actingAs } : {}),
  events: r.events,
  dropped: r.dropped,
});

/** The head of a recording the person starts now: on, nothing seen yet. */
export const newRecording = (p: Principal, now: number): RecordingRecord => ({
  id: newId('rec', 8),
  workspaceId: p.workspaceId,
  ownerId: p.workspaceUserId,
  startedAt: new Date(now).toISOString(),
  on: 'yes',
  events: 0,
  dropped: 0,
  apps: {},
  edits: {},
  seen: {},
  calls: {},
});

/** A head's change that may add events: run in the append's transaction, perhaps more than once (on fresh reads). */
export type HeadChange = (h: RecordingRecord, tx: Transaction) => RecordedEvent[] | Promise<RecordedEvent[]>;

/**
 * Change the head of recording `id` and append the events `change` returns, in one transaction, while it is on.
 * `change` may run more than once (on fresh reads): it has no effect but on the head it is given.
 */
export async function append(store: Store, id: string, change: HeadChange): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await tx.get(RECORDINGS, id);
    if (!before || before.on !== 'yes') return;
    const h = structuredClone(before);
    const untouched = JSON.stringify(h);
    for (const event of await change(h, tx)) {
      if (h.events >= MAX_EVENTS) {
        h.dropped++;
        continue;
      }
      const eid = recordingEventId(id, h.events);
      tx.put(EVENTS, eid, { id: eid, recordingId: id, seq: h.events, event });
      h.events++;
    }
    if (JSON.stringify(h) !== untouched) tx.put(RECORDINGS, id, h);
  });
}

const seenOf = (m: MessageRecord): SeenMessage => ({
  id: m.id,
  channelId: m.channelId,
  author: m.author,
  ...(m.appId ? { appId: m.appId } : {}),
  text: m.text,
  blocks: m.blocks,
  ...(m.threadRootId ? { threadRootId: m.threadRootId } : {}),
  ...(m.ephemeralTo ? { ephemeralTo: m.ephemeralTo } : {}),
});
/** What tells a message's changes apart: its text, blocks and attachments, digested (the head keeps every one seen). */
const digestOf = (m: MessageRecord) =>
  crypto
    .createHash('sha256')
    .update(JSON.stringify([m.text, m.blocks, m.attachments]))
    .digest('base64url');

/** What message `id`'s change appends: `m` as it is now (undefined: deleted), against what the head has seen of it. */
export const messageChange =
  (id: string, m: MessageRecord | undefined): HeadChange =>
  (h) => {
    const was = h.seen[id];
    if (!m) {
      if (!was) return [];
      delete h.seen[id];
      return [{ type: 'message-deleted', id }];
    }
    const digest = digestOf(m);
    h.seen[m.id] = { digest, reactions: m.reactions.map((r) => `${r.user} ${r.code}`), channelId: m.channelId };
    // a message older than the recording is known from its first change on
    if (!was)
      return m.timestampMilli >= Date.parse(h.startedAt)
        ? [{ type: 'message', message: seenOf(m) }]
        : m.edited
          ? [{ type: 'message-changed', message: seenOf(m) }]
          : [];
    const out: RecordedEvent[] = [];
    if (was.digest !== digest) out.push({ type: 'message-changed', message: seenOf(m) });
    const had = new Set(was.reactions);
    for (const r of m.reactions)
      if (!had.has(`${r.user} ${r.code}`)) out.push({ type: 'reaction', user: r.user, messageId: m.id, code: r.code });
    return out;
  };

/** A delivery as a recorded call; `was`: the call as recorded before (its body, when the change carries none). */
const callOf = (d: DeliveryRecord, was?: RecordedCall): RecordedCall => ({
  id: d.id,
  kind: d.kind,
  appId: d.appId,
  user: d.userId,
  transport: d.transport,
  ...(d.subject ? { subject: d.subject } : {}),
  payload: d.payload ?? was?.payload ?? {},
  ...(d.outcome ? { outcome: d.outcome } : {}),
  ...(d.response !== undefined ? { response: d.response } : {}),
  ...(d.ephemeralMessage ? { ephemeralMessage: d.ephemeralMessage } : {}),
});

/** What delivery `d`'s change appends to recording `id`: the call when it is new, else its event updated in place. */
export const deliveryChange =
  (id: string, d: DeliveryRecord): HeadChange =>
  async (h, tx) => {
    h.apps[d.appId] = d.appName;
    const seq = h.calls[d.id];
    if (seq !== undefined) {
      // its answer came: the call's event is updated in place
      const known = await tx.get(EVENTS, recordingEventId(id, seq));
      if (known?.event.type === 'call')
        tx.put(EVENTS, known.id, { ...known, event: { type: 'call', call: callOf(d, known.event.call) } });
      return [];
    }
    // a delivery that began before the recording is not part of it
    if (Date.parse(d.createdAt) < Date.parse(h.startedAt)) return [];
    if (h.events < MAX_EVENTS) h.calls[d.id] = h.events;
    return [{ type: 'call', call: callOf(d) }];
  };

/** The recording `id`, when it is the person's (anyone else's is not found: its id says nothing). */
export async function ownRecording(store: Store, p: Principal, id: string): Promise<RecordingRecord> {
  const r = await store.get(RECORDINGS, id);
  if (!r || r.ownerId !== p.workspaceUserId) throw notFound('Recording');
  return r;
}

/** Change the head of the person's recording `id`; the head as changed. */
export async function changeHead(
  store: Store,
  p: Principal,
  id: string,
  fn: (h: RecordingRecord) => void,
): Promise<RecordingRecord> {
  await ownRecording(store, p, id);
  return store.transaction(async (tx) => {
    const before = await tx.get(RECORDINGS, id);
    if (!before) throw notFound('Recording');
    const h = structuredClone(before);
    fn(h);
    tx.put(RECORDINGS, id, h);
    return h;
  });
}

/** Every recording that is on. */
export const recordingsOn = (store: Store) => store.find(RECORDINGS, 'on', 'yes');

/** The person's recording that is on, if any. */
export const recordingOnOf = async (store: Store, userId: string) =>
  (await recordingsOn(store)).find((r) => r.ownerId === userId);

/** The oldest stopped recordings past MAX_KEPT go, with their events. */
export async function pruneStopped(store: Store): Promise<void> {
  const stopped = (await store.all(RECORDINGS)).filter((r) => r.stoppedAt);
  stopped.sort((a, b) => (String(a.stoppedAt) < String(b.stoppedAt) ? -1 : 1));
  const gone = stopped.slice(0, Math.max(0, stopped.length - MAX_KEPT));
  const changes: Change[] = gone.flatMap((r): Change[] => [
    { table: RECORDINGS, id: r.id, value: null },
    ...Array.from({ length: r.events }, (_x, i): Change => ({
      table: EVENTS,
      id: recordingEventId(r.id, i),
      value: null,
    })),
  ]);
  for (let i = 0; i < changes.length; i += BATCH) await store.commit(changes.slice(i, i + BATCH));
}

/** Every event of recording `r`, in order. */
export async function eventsOf(store: Store, r: RecordingRecord): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for (let from = 0; from < r.events; from += BATCH) {
    const keys = Array.from({ length: Math.min(BATCH, r.events - from) }, (_x, i) => ({
      table: EVENTS,
      id: recordingEventId(r.id, from + i),
    }));
    for (const e of await store.getMany(keys)) if (e) out.push(e.event);
  }
  return out;
}
