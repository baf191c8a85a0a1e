/**
 * The delivery log: every delivery and each of its attempts, as svix records them: what a
 * delivery is and sends (written once, when it begins), each attempt as a new entry that is never
 * changed afterwards, and the state changes (pending, retrying, delivered, failed, cancelled) as
 * entries of their own. Nothing is read, changed and written back: a writer appends what
 * happened, and what users see of a delivery (a DeliveryRecord: the API, `deliveries show`, the
 * console) is assembled from its entries by `applyEntry`.
 *
 * Two backends behind one interface; the composition root picks one with the store:
 * - the embedded store's daemon: JSON lines under <data-dir>/deliveries/ (file-log.ts);
 * - PostgreSQL (several daemons): three tables in the database (store-log.ts), so every daemon
 *   shows every delivery.
 * Reads are async for both, so callers do not care which one they have.
 */
import type {
  AttemptRecord,
  DeliveryHead,
  DeliveryKind,
  DeliveryRecord,
  DeliveryState,
  StateChange,
} from '../model/delivery.js';

/** What a delivery is and sends; `raw` is JSON.stringify(payload), the very bytes signed and sent. */
export interface Outgoing {
  head: DeliveryHead;
  payload: Record<string, unknown>;
  raw: string;
}

/**
 * One write to the log about one delivery: any of its beginning, an attempt, a state change (applied in that order).
 */
export interface LogEntry {
  id: string;
  /** In the delivery's first entry only. */
  begun?: Outgoing;
  attempt?: AttemptRecord;
  state?: StateChange;
}

/** Which deliveries a list shows. */
export interface ListFilter {
  ownerId: string;
  appId?: string;
  /** Failed or retrying only. */
  failed?: boolean;
  kind?: DeliveryKind;
  state?: DeliveryState;
  limit?: number;
}

export interface DeliveryLog {
  /** Record what happened to a delivery (written in the background: a get right after answers it). */
  append(entry: LogEntry): void;
  /** The delivery as its entries make it. Never change what a read answers: it may be what the log holds. */
  get(id: string): Promise<DeliveryRecord | undefined>;
  /** Newest first by creation time. */
  list(filter: ListFilter): Promise<DeliveryRecord[]>;
  /**
   * Call `listener` with the delivery after every entry, by any daemon of the store (the console's live pages); returns
   * the unsubscribe.
   */
  onChange(listener: (rec: DeliveryRecord) => void): () => void;
  /** Resolves once everything appended so far is written (tests, benchmarks). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** At most this many deliveries are kept in memory (the embedded log) or in the database (PostgreSQL). */
export const MAX_INDEXED = 20_000;

/**
 * The delivery after `entry`, given what it was before (`prev`; undefined when the entry begins
 * it). An entry about a delivery not known (whose beginning was not read) makes nothing: undefined.
 * `prev` is not changed: the answer is a new object.
 */
export function applyEntry(prev: DeliveryRecord | undefined, entry: LogEntry): DeliveryRecord | undefined {
  // Object.assign, not `{ ...x }`: on Node 20 an object cloned by a spread that then gains a
  // property gets a new hidden class every time (measured: 15 % of a delivery's CPU, and its GC)
  let v: DeliveryRecord;
  if (entry.begun) {
    v = Object.assign({}, entry.begun.head) as DeliveryRecord;
    v.updatedAt = entry.begun.head.createdAt;
    v.state = 'pending';
    v.payload = entry.begun.payload;
    v.attempts = [];
  } else if (prev) v = Object.assign({}, prev);
  else return undefined;
  const a = entry.attempt;
  if (a) {
    const { response, url, ...seen } = a;
    v.attempts = [...v.attempts, seen];
    v.outcome = a.outcome;
    if (a.at > v.updatedAt) v.updatedAt = a.at;
    if (response !== undefined) v.response = response;
    if (url !== undefined) v.url = url;
  }
  const s = entry.state;
  if (s) {
    v.state = s.state;
    v.nextAttemptAt = s.nextAttemptAt;
    v.cancelReason = s.cancelReason;
    v.ephemeralMessage = s.ephemeralMessage;
    if (s.at > v.updatedAt) v.updatedAt = s.at;
  }
  return v;
}

/**
 * The entries that make `rec` (applyEntry's inverse): its beginning, each attempt (the last one
 * carrying the answer and the URL the delivery ended with), its state. For copying a log from one
 * backend to the other (`appreg db import` and `db export`).
 */
export function entriesOf(rec: DeliveryRecord): LogEntry[] {
  const {
    updatedAt,
    state,
    outcome,
    ephemeralMessage,
    response,
    payload,
    attempts,
    nextAttemptAt,
    cancelReason,
    ...head
  } = rec;
  void outcome; // the last attempt's
  const entries: LogEntry[] = [{ id: rec.id, begun: { head, payload, raw: JSON.stringify(payload) } }];
  attempts.forEach((a, i) => {
    const last = i === attempts.length - 1;
    entries.push({ id: rec.id, attempt: { ...a, ...(last && response !== undefined ? { response } : {}) } });
  });
  const change: StateChange = { at: updatedAt, state };
  if (nextAttemptAt !== undefined) change.nextAttemptAt = nextAttemptAt;
  if (cancelReason !== undefined) change.cancelReason = cancelReason;
  if (ephemeralMessage !== undefined) change.ephemeralMessage = ephemeralMessage;
  entries.push({ id: rec.id, state: change });
  return entries;
}

/**
 * Newest first by creation time (what the list shows); created in the same millisecond: the one recorded last first.
 */
export const byCreationDesc = (
  a: { rec: Pick<DeliveryRecord, 'createdAt'>; seq: number },
  b: { rec: Pick<DeliveryRecord, 'createdAt'>; seq: number },
): number => newestFirst(a.rec.createdAt, a.seq, b.rec.createdAt, b.seq);

/** byCreationDesc of two deliveries given by their creation times and order numbers. */
export const newestFirst = (aCreated: string, aSeq: number, bCreated: string, bSeq: number): number =>
  aCreated < bCreated ? 1 : aCreated > bCreated ? -1 : bSeq - aSeq;

/** Whether `r` is listed under `f`. */
export function listed(r: Pick<DeliveryRecord, 'ownerId' | 'appId' | 'kind' | 'state'>, f: ListFilter): boolean {
  if (r.ownerId !== f.ownerId) return false;
  if (f.appId && r.appId !== f.appId) return false;
  if (f.kind && r.kind !== f.kind) return false;
  if (f.state && r.state !== f.state) return false;
  return !f.failed || r.state === 'failed' || r.state === 'retrying';
}
