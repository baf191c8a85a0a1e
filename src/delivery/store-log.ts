/**
 * The delivery log in the store, for PostgreSQL: several daemons share one database and any of
 * them may be asked to list or show a delivery another one made, so the log cannot live in one
 * daemon's files. Three tables, as svix keeps message, destination state and attempts apart:
 * - 'deliveryLog' (indexed by appId and ownerId): what a delivery is and sends, written once;
 * - 'deliveryAttempts' (indexed by deliveryId): one record per attempt, written once;
 * - 'deliveryStates': the state of each delivery, replaced by each state change (the latest wins).
 * The entries of one delivery are written in order, those gathered meanwhile in one commit; all in
 * the background (delivery never waits for the log, as with the JSON lines); until written, this
 * daemon answers gets with them applied. Bounded by deliveryLogRetentionDays and a maximum count,
 * pruned now and then by whichever daemon writes. A record an earlier appreg wrote to
 * 'deliveryLog' (the whole delivery, `rec`) is read as such.
 * Every write is announced on a channel so the live pages of every daemon hear it; when the store
 * says announcements were lost (its LISTEN connection dropped), the deliveries changed in that
 * time are read back and told as if announced.
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { INDEXED_FIELDS } from '../store/indexes.js';
import { StoreValueRefused, UNSTORABLE_CHAR, type Change, type Store } from '../store/types.js';
import { fieldOf, messageOf } from '../unknown-values.js';

const UNSTORABLE_CHARS = new RegExp(UNSTORABLE_CHAR.source, 'g');
import { applyEntry, byCreationDesc, entriesOf, listed, MAX_INDEXED, type DeliveryLog, type LogEntry } from './log.js';
import type { DeliveryRecord, StateChange, StoredAttempt, StoredHead, StoredState } from '../model/delivery.js';
import { must } from '../must.js';

const HEADS = 'deliveryLog';
const ATTEMPTS = 'deliveryAttempts';
const STATES = 'deliveryStates';
const CHANNEL = 'delivery_log';
/** How often a daemon that writes prunes deliveries past the retention or the count (ms). */
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 500;
/**
 * After lost announcements, deliveries changed this long before the loss began are read back too (other daemons' clocks
 * may differ).
 */
const GAP_MARGIN_MS = 10_000;
/** Whether the store indexes the log by owner (the console's list of all one's deliveries); else it reads the table. */
const BY_OWNER = INDEXED_FIELDS[HEADS]?.includes('ownerId') ?? false;

export interface StoreLogOptions {
  store: Store;
  retentionDays: number;
  clock: Clock;
  logger: Logger;
  /** At most this many deliveries are kept (the oldest go first). */
  maxRecords?: number;
}

/**
 * The change with withoutNul applied to its record: the same record but for characters in its
 * strings (its fields are the log's own names, none of which holds one), so of the same type.
 */
const scrubbed = <C extends Change>(c: C): C => ({ ...c, value: withoutNul(c.value) as C['value'] });

/** A copy (of JSON data) whose strings, keys too, have every NUL and unpaired surrogate replaced by U+FFFD. */
function withoutNul(v: unknown): unknown {
  const nul = (x: string) => x.replace(UNSTORABLE_CHARS, '\ufffd');
  if (typeof v === 'string') return nul(v);
  if (Array.isArray(v)) return v.map(withoutNul);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [nul(k), withoutNul(x)]));
  return v;
}

/** The delivery as stored: its beginning, its attempts (in the order made) and its state. */
function assemble(h: StoredHead, attempts: StoredAttempt[], s: StoredState | undefined): DeliveryRecord | undefined {
  if (h.rec) return h.rec;
  if (!h.head) return undefined;
  let rec = applyEntry(undefined, { id: h.id, begun: { head: h.head, payload: h.payload ?? {}, raw: '' } });
  for (const a of [...attempts].sort((x, y) => x.seq - y.seq)) rec = applyEntry(rec, { id: h.id, attempt: a.attempt });
  return s ? applyEntry(rec, { id: h.id, state: s.state }) : rec;
}

/** The log's tables in the database: what each delivery is, its attempts, its state. */
export const DELIVERY_LOG_TABLES = [HEADS, ATTEMPTS, STATES] as const;

/** The records of the log's tables that hold `recs` (`appreg db import`), in that order (`seq`). */
export function logRecordsOf(recs: DeliveryRecord[]): Map<string, Map<string, object>> {
  const tables = new Map<string, Map<string, object>>(DELIVERY_LOG_TABLES.map((t) => [t, new Map()]));
  let seq = 0;
  for (const rec of recs) {
    for (const e of entriesOf(rec)) {
      if (e.begun)
        must(tables.get(HEADS)).set(rec.id, {
          id: rec.id,
          appId: rec.appId,
          ownerId: rec.ownerId,
          createdAt: rec.createdAt,
          seq: seq++,
          head: e.begun.head,
          payload: e.begun.payload,
        } satisfies StoredHead);
      if (e.attempt)
        must(tables.get(ATTEMPTS)).set(e.attempt.id, {
          id: e.attempt.id,
          deliveryId: rec.id,
          seq: seq++,
          attempt: e.attempt,
        } satisfies StoredAttempt);
      if (e.state) must(tables.get(STATES)).set(rec.id, { id: rec.id, state: e.state } satisfies StoredState);
    }
  }
  return tables;
}

/** The deliveries the log's tables hold (`appreg db export`), in the order they began. */
export function deliveriesOfRecords(tables: Map<string, Map<string, object>>): DeliveryRecord[] {
  const none = new Map<string, object>();
  const attemptsOf = new Map<string, StoredAttempt[]>();
  for (const a of (tables.get(ATTEMPTS) ?? none).values() as Iterable<StoredAttempt>)
    attemptsOf.set(a.deliveryId, [...(attemptsOf.get(a.deliveryId) ?? []), a]);
  const states = tables.get(STATES) ?? none;
  const heads = [...((tables.get(HEADS) ?? none).values() as Iterable<StoredHead>)].sort((a, b) => a.seq - b.seq);
  return heads.flatMap(
    (h) => assemble(h, attemptsOf.get(h.id) ?? [], states.get(h.id) as StoredState | undefined) ?? [],
  );
}

export function openStoreDeliveryLog(opts: StoreLogOptions): DeliveryLog {
  const { store, clock, logger } = opts;
  const maxRecords = opts.maxRecords ?? MAX_INDEXED;
  const retentionMs = opts.retentionDays * 86_400_000;
  // who this log is on the channel: its own notices were already told to its listeners
  const origin = newId('dlog', 9);
  let seqNo = 0;
  const nextSeq = () => clock.now() * 1024 + (seqNo++ & 1023);

  /**
   * Per delivery with entries not yet written: those entries (queued, and the batch being written)
   * and, when this daemon knows it (it began the delivery, or read it), the delivery with them applied.
   */
  const unwritten = new Map<string, { queued: LogEntry[]; writing: LogEntry[]; rec?: DeliveryRecord }>();
  const loops = new Set<Promise<void>>();
  const listeners = new Set<(rec: DeliveryRecord) => void>();
  let lastPrune = clock.now();
  let pruning: Promise<void> | undefined;

  function tell(rec: DeliveryRecord) {
    for (const l of listeners) {
      try {
        l(rec);
      } catch (e) {
        logger.error('delivery log listener failed', { error: messageOf(e) });
      }
    }
  }

  /**
   * The records that write `batch` (entries of one delivery, in order): its beginning, its attempts, its latest state.
   */
  function changesOf(id: string, batch: LogEntry[]): Change[] {
    const changes: Change[] = [];
    let state: StateChange | undefined;
    for (const e of batch) {
      if (e.begun) {
        const { head, payload } = e.begun;
        changes.push({
          table: HEADS,
          id,
          value: {
            id,
            appId: head.appId,
            ownerId: head.ownerId,
            createdAt: head.createdAt,
            seq: nextSeq(),
            head,
            payload,
          } satisfies StoredHead,
        });
      }
      if (e.attempt)
        changes.push({
          table: ATTEMPTS,
          id: e.attempt.id,
          value: { id: e.attempt.id, deliveryId: id, seq: nextSeq(), attempt: e.attempt } satisfies StoredAttempt,
        });
      if (e.state) state = e.state;
    }
    if (state) changes.push({ table: STATES, id, value: { id, state } satisfies StoredState });
    return changes;
  }

  /** Writes the entries of one delivery in order, those gathered meanwhile in one commit each time. */
  async function writeLoop(id: string): Promise<void> {
    const u = must(unwritten.get(id));
    while (u.queued.length) {
      u.writing = u.queued;
      u.queued = [];
      try {
        const changes = changesOf(id, u.writing);
        await store.commit(changes).catch((e: unknown) => {
          // a NUL or an unpaired surrogate in what was sent or answered (the store keeps none): the log keeps it as
          // U+FFFD
          if (!(e instanceof StoreValueRefused)) throw e;
          return store.commit(changes.map(scrubbed));
        });
        await store.publish(CHANNEL, JSON.stringify({ id, from: origin }));
      } catch (e) {
        logger.error('delivery log write failed', { deliveryId: id, error: messageOf(e) });
      }
      // an entry about a delivery this daemon did not know: its listeners hear it once it is written
      if (!u.rec && listeners.size) void readBack(id);
    }
    unwritten.delete(id);
    if (clock.now() - lastPrune >= PRUNE_EVERY_MS && !pruning) {
      lastPrune = clock.now();
      pruning = prune()
        .catch((e) => logger.error('delivery log prune failed', { error: messageOf(e) }))
        .finally(() => (pruning = undefined));
    }
  }

  /**
   * The delivery as written (undefined when its beginning is not in the store). The state is read
   * before the attempts, never beside them: an attempt is committed with the state it left, so the
   * attempts read afterwards hold at least those of that state (read side by side, a state could be
   * newer than the attempts read, and a failed delivery show one attempt fewer than it made).
   */
  async function stored(id: string): Promise<DeliveryRecord | undefined> {
    const [h, s] = await store.getMany([
      { table: HEADS, id },
      { table: STATES, id },
    ]);
    if (!h) return undefined;
    return assemble(h, await store.find(ATTEMPTS, 'deliveryId', id), s);
  }

  /** This daemon's entries about `id` not yet written (or being written), in order. */
  const pendingOf = (id: string): LogEntry[] => {
    const u = unwritten.get(id);
    return u ? [...u.writing, ...u.queued] : [];
  };

  /**
   * `rec` (as read) with `entries` applied that it does not hold yet: an entry written while it was
   * read may be in it already (an attempt is known by its id; a beginning once there is a delivery).
   */
  function withPending(rec: DeliveryRecord | undefined, entries: LogEntry[]): DeliveryRecord | undefined {
    for (const e of entries) {
      const has = rec && e.attempt && rec.attempts.some((x) => x.id === must(e.attempt).id);
      rec = applyEntry(rec, { ...e, ...(rec ? { begun: undefined } : {}), ...(has ? { attempt: undefined } : {}) });
    }
    return rec;
  }

  /** The delivery as written, with this daemon's entries not yet written applied. */
  async function current(id: string): Promise<DeliveryRecord | undefined> {
    const u = unwritten.get(id);
    if (u?.rec) return u.rec;
    const before = pendingOf(id);
    const rec = await stored(id);
    // entries written meanwhile may be in what was read, or not; those made meanwhile are not
    const after = pendingOf(id);
    return withPending(rec, [...before.filter((e) => !after.includes(e)), ...after]);
  }

  function readBack(id: string): Promise<void> {
    return current(id)
      .then((rec) => rec && tell(rec))
      .catch((e) => logger.error('delivery log read failed', { error: messageOf(e) }));
  }

  /**
   * Remove deliveries past the retention (by their last change), then the oldest past the count, with
   * their attempts and states; and attempts and states left without a delivery. The beginnings are read
   * after the attempts and states, not beside them: the reads are not one snapshot, and a delivery's
   * beginning is committed with or before its attempts and states, so every one read has its beginning
   * in what is read after it unless it is gone. (Read side by side, a delivery written between the
   * read of the beginnings and that of its attempts had its attempts pruned as orphans.)
   */
  async function prune(): Promise<void> {
    const [states, attempts] = await Promise.all([store.all(STATES), store.all(ATTEMPTS)]);
    const heads = await store.all(HEADS);
    const stateOf = new Map(states.map((s) => [s.id, s]));
    const changedAt = (h: StoredHead) => Date.parse(h.rec?.updatedAt ?? stateOf.get(h.id)?.state.at ?? h.createdAt);
    const cutoff = clock.now() - retentionMs;
    const keep = heads.filter((h) => changedAt(h) >= cutoff);
    const gone = new Set(heads.filter((h) => changedAt(h) < cutoff).map((h) => h.id));
    if (keep.length > maxRecords) {
      const created = (h: StoredHead) => ({ rec: { createdAt: h.createdAt }, seq: h.seq });
      keep.sort((a, b) => byCreationDesc(created(a), created(b)));
      for (const h of keep.slice(maxRecords)) gone.add(h.id);
    }
    const known = new Set(heads.map((h) => h.id));
    const orphan = (deliveryId: string) => !known.has(deliveryId) && !unwritten.has(deliveryId);
    const changes: Change[] = [
      ...[...gone].map((id): Change => ({ table: HEADS, id, value: null })),
      ...states
        .filter((s) => gone.has(s.id) || orphan(s.id))
        .map((s): Change => ({ table: STATES, id: s.id, value: null })),
      ...attempts
        .filter((a) => gone.has(a.deliveryId) || orphan(a.deliveryId))
        .map((a): Change => ({ table: ATTEMPTS, id: a.id, value: null })),
    ];
    for (let i = 0; i < changes.length; i += PRUNE_BATCH) await store.commit(changes.slice(i, i + PRUNE_BATCH));
  }

  const unsubscribe = store.subscribe(
    CHANNEL,
    (payload) => {
      if (!listeners.size) return;
      let notice: unknown;
      try {
        notice = JSON.parse(payload);
      } catch {
        return;
      }
      const id = fieldOf(notice, 'id');
      if (fieldOf(notice, 'from') === origin || typeof id !== 'string') return;
      void readBack(id); // another daemon's write: the notice is small, the delivery is read back
    },
    (lostMs) => {
      if (!listeners.size) return;
      // announcements of the last lostMs were not heard: what changed since then is told now, oldest first
      const since = clock.now() - lostMs - GAP_MARGIN_MS;
      store
        .all(STATES)
        .then(async (all) => {
          const missed = all
            .filter((s) => Date.parse(s.state.at) >= since)
            .sort((a, b) => (a.state.at < b.state.at ? -1 : a.state.at > b.state.at ? 1 : 0));
          for (const s of missed) await readBack(s.id);
        })
        .catch((e) => logger.error('delivery log read failed', { error: messageOf(e) }));
    },
  );

  async function flush() {
    while (loops.size) await Promise.all([...loops]);
    await pruning;
  }

  return {
    append(e) {
      let u = unwritten.get(e.id);
      const fresh = !u;
      u ??= { queued: [], writing: [] };
      u.rec = applyEntry(u.rec, e);
      u.queued.push(e);
      if (fresh) {
        unwritten.set(e.id, u);
        const loop = writeLoop(e.id).finally(() => loops.delete(loop));
        loops.add(loop);
      }
      if (u.rec) tell(u.rec);
    },
    get: current,
    async list(filter) {
      const heads = filter.appId
        ? await store.find(HEADS, 'appId', filter.appId)
        : BY_OWNER
          ? await store.find(HEADS, 'ownerId', filter.ownerId)
          : await store.all(HEADS);
      // what the list filters and sorts on is in the beginnings and the states: attempts are read only for those shown
      const states = heads.length ? await store.getMany(heads.map((h) => ({ table: STATES, id: h.id }))) : [];
      const rows = new Map<
        string,
        { rec: DeliveryRecord; seq: number; read?: { h: StoredHead; s: StoredState | undefined } }
      >();
      heads.forEach((h, i) => {
        const rec = assemble(h, [], states[i]);
        if (rec) rows.set(h.id, { rec, seq: h.seq, read: { h, s: states[i] } });
      });
      for (const [id, u] of unwritten) {
        const row = rows.get(id);
        if (u.rec)
          rows.set(id, { rec: u.rec, seq: row?.seq ?? Number.MAX_SAFE_INTEGER }); // known here: as this daemon has it
        else if (row) row.rec = withPending(row.rec, pendingOf(id)) ?? row.rec;
      }
      const shown = [...rows.values()]
        .filter((r) => listed(r.rec, filter))
        .sort(byCreationDesc)
        .slice(0, filter.limit ?? 50);
      return Promise.all(
        shown.map(async (r) => {
          if (!r.read || r.read.h.rec) return r.rec;
          const attempts = await store.find(ATTEMPTS, 'deliveryId', r.rec.id);
          return withPending(assemble(r.read.h, attempts, r.read.s), pendingOf(r.rec.id)) ?? r.rec;
        }),
      );
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    flush,
    async close() {
      await flush();
      unsubscribe();
    },
  };
}
