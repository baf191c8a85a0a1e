/**
 * The delivery log in the store, for PostgreSQL: several daemons share one database and any of
 * them may be asked to list or show a delivery another one made, so the log cannot live in one
 * daemon's files. One record per delivery in table 'deliveryLog' (indexed by appId), replaced on
 * every put; bounded by deliveryLogRetentionDays and a maximum count, pruned now and then by
 * whichever daemon writes. A put is written in the background (delivery never waits for the log,
 * as with the JSON lines); until it is written, this daemon answers gets from what it holds.
 * Every written put is announced on a channel so the live pages of every daemon hear it; when the
 * store says announcements were lost (its LISTEN connection dropped), the deliveries changed in
 * that time are read back and told as if announced.
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { INDEXED_FIELDS } from '../store/indexes.js';
import { StoreValueRefused, type Store } from '../store/types.js';
import { byCreationDesc, listed, MAX_INDEXED, type DeliveryLog, type DeliveryRecord } from './log.js';

export const DELIVERY_LOG_TABLE = 'deliveryLog';
const CHANNEL = 'delivery_log';
/** How often a daemon that writes prunes records past the retention or the count (ms). */
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 500;
/** After lost announcements, deliveries changed this long before the loss began are read back too (other daemons' clocks may differ). */
const GAP_MARGIN_MS = 10_000;
/** Whether the store indexes the log by owner (the console's list of all one's deliveries); else it reads the table. */
const BY_OWNER = INDEXED_FIELDS[DELIVERY_LOG_TABLE]?.includes('ownerId') ?? false;

/** What is stored: the delivery, plus what lists and prunes need at the top level. */
export interface StoredDelivery {
  id: string;
  appId: string;
  ownerId: string;
  createdAt: string;
  updatedAt: string;
  /** Order of puts (the later put of two created in the same millisecond lists first). */
  seq: number;
  rec: DeliveryRecord;
}

export interface StoreLogOptions {
  store: Store;
  retentionDays: number;
  clock: Clock;
  logger: Logger;
  /** At most this many deliveries are kept (the oldest go first). */
  maxRecords?: number;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
/** A copy (of JSON data) whose strings, keys too, have every NUL replaced by U+FFFD. */
function withoutNul<T>(v: T): T {
  const nul = (x: string) => x.replace(/\u0000/g, '\ufffd');
  if (typeof v === 'string') return nul(v) as T;
  if (Array.isArray(v)) return v.map(withoutNul) as T;
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [nul(k), withoutNul(x)])) as T;
  return v;
}

export function openStoreDeliveryLog(opts: StoreLogOptions): DeliveryLog {
  const { store, clock, logger } = opts;
  const maxRecords = opts.maxRecords ?? MAX_INDEXED;
  const retentionMs = opts.retentionDays * 86_400_000;
  // who this log is on the channel: its own notices were already told to its listeners at put
  const origin = newId('dlog', 9);
  let seqNo = 0;
  const nextSeq = () => clock.now() * 1024 + (seqNo++ & 1023);

  /** Puts not yet written (latest per id), and the one being written per id: gets answer these first. */
  const queued = new Map<string, StoredDelivery>();
  const writing = new Map<string, StoredDelivery>();
  const loops = new Set<Promise<void>>();
  const listeners = new Set<(rec: DeliveryRecord) => void>();
  let lastPrune = clock.now();
  let pruning: Promise<void> | undefined;

  function tell(rec: DeliveryRecord) {
    for (const l of listeners) {
      try {
        l(rec);
      } catch (e) {
        logger.error('delivery log listener failed', { error: (e as Error).message });
      }
    }
  }

  /** Writes the puts of one id in order, one commit at a time (the latest put wins). */
  async function writeLoop(id: string): Promise<void> {
    for (let v = queued.get(id); v; v = queued.get(id)) {
      queued.delete(id);
      writing.set(id, v);
      try {
        await store.commit([{ table: DELIVERY_LOG_TABLE, id, value: v }]).catch((e: unknown) => {
          // a NUL in what was sent or answered (the store keeps none): the log keeps it as U+FFFD
          if (!(e instanceof StoreValueRefused)) throw e;
          return store.commit([{ table: DELIVERY_LOG_TABLE, id, value: withoutNul(v) }]);
        });
        await store.publish(CHANNEL, JSON.stringify({ id, from: origin }));
      } catch (e) {
        logger.error('delivery log write failed', { deliveryId: id, error: (e as Error).message });
      }
    }
    writing.delete(id);
    if (clock.now() - lastPrune >= PRUNE_EVERY_MS && !pruning) {
      lastPrune = clock.now();
      pruning = prune()
        .catch((e) => logger.error('delivery log prune failed', { error: (e as Error).message }))
        .finally(() => (pruning = undefined));
    }
  }

  /** Remove deliveries past the retention, then the oldest past the count. */
  async function prune(): Promise<void> {
    const all = await store.all<StoredDelivery>(DELIVERY_LOG_TABLE);
    const cutoff = clock.now() - retentionMs;
    const keep = all.filter((s) => Date.parse(s.updatedAt) >= cutoff);
    const gone = all.filter((s) => Date.parse(s.updatedAt) < cutoff);
    if (keep.length > maxRecords) {
      keep.sort((a, b) => byCreationDesc({ rec: a.rec, seq: a.seq }, { rec: b.rec, seq: b.seq }));
      gone.push(...keep.slice(maxRecords));
    }
    for (let i = 0; i < gone.length; i += PRUNE_BATCH) {
      await store.commit(gone.slice(i, i + PRUNE_BATCH).map((s) => ({ table: DELIVERY_LOG_TABLE, id: s.id, value: null })));
    }
  }

  const unsubscribe = store.subscribe(CHANNEL, (payload) => {
    if (!listeners.size) return;
    let notice: { id?: unknown; from?: unknown };
    try {
      notice = JSON.parse(payload) as typeof notice;
    } catch {
      return;
    }
    if (notice.from === origin || typeof notice.id !== 'string') return;
    // another daemon's put: the notice is small, the record is read back
    store
      .get<StoredDelivery>(DELIVERY_LOG_TABLE, notice.id)
      .then((s) => s && tell(s.rec))
      .catch((e) => logger.error('delivery log read failed', { error: (e as Error).message }));
  }, (lostMs) => {
    if (!listeners.size) return;
    // announcements of the last lostMs were not heard: what changed since then is told now, oldest first
    const since = clock.now() - lostMs - GAP_MARGIN_MS;
    store
      .all<StoredDelivery>(DELIVERY_LOG_TABLE)
      .then((all) => {
        const missed = all.filter((s) => Date.parse(s.updatedAt) >= since).sort((a, b) => a.seq - b.seq);
        for (const s of missed) tell(s.rec);
      })
      .catch((e) => logger.error('delivery log read failed', { error: (e as Error).message }));
  });

  const local = (id: string) => queued.get(id) ?? writing.get(id);

  async function flush() {
    while (loops.size) await Promise.all([...loops]);
    await pruning;
  }

  return {
    put(rec) {
      // a snapshot: the caller goes on changing its record (the next attempt) before this is written
      const v: StoredDelivery = { id: rec.id, appId: rec.appId, ownerId: rec.ownerId, createdAt: rec.createdAt, updatedAt: rec.updatedAt, seq: nextSeq(), rec: clone(rec) };
      queued.set(rec.id, v);
      if (!writing.has(rec.id)) {
        const loop = writeLoop(rec.id).finally(() => loops.delete(loop));
        loops.add(loop);
      }
      tell(rec);
    },
    async get(id) {
      const mine = local(id);
      if (mine) return clone(mine.rec);
      return (await store.get<StoredDelivery>(DELIVERY_LOG_TABLE, id))?.rec;
    },
    async list(filter) {
      const rows = filter.appId
        ? await store.find<StoredDelivery>(DELIVERY_LOG_TABLE, 'appId', filter.appId)
        : BY_OWNER
          ? await store.find<StoredDelivery>(DELIVERY_LOG_TABLE, 'ownerId', filter.ownerId)
          : await store.all<StoredDelivery>(DELIVERY_LOG_TABLE);
      const byId = new Map(rows.map((s) => [s.id, s]));
      for (const m of [...writing.values(), ...queued.values()]) byId.set(m.id, clone(m));
      const out: Array<{ rec: DeliveryRecord; seq: number }> = [];
      for (const s of byId.values()) if (listed(s.rec, filter)) out.push({ rec: s.rec, seq: s.seq });
      out.sort(byCreationDesc);
      return out.slice(0, filter.limit ?? 50).map((e) => e.rec);
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
