/**
 * The parts of the Store contract that the two in-process stores (embedded-store.ts and
 * memory-store.ts) share beyond plain reads: checking expectations, choosing what a claim
 * leases, fixed-window hit counters and in-process publish/subscribe. One process holds
 * the whole store here, so "across every daemon" is "in this process".
 */
import { isDeepStrictEqual } from 'node:util';
import { recordText, type JsonChange, type Tables } from './tables.js';
import { isRecord, recordOr } from '../unknown-values.js';
import {
  checkChannel,
  checkHit,
  checkPayload,
  StoreConflict,
  type AnyTables,
  type ClaimRequest,
  type Expectation,
  type HitCount,
  type Listener,
  type StoreEngine,
} from './types.js';

/** The reads of a Store over in-process tables: the same for the embedded store and the memory store. */
export function tableReads(
  tables: Tables,
): Pick<StoreEngine, 'get' | 'getMany' | 'find' | 'all' | 'scan' | 'count' | 'countWhere' | 'findPage'> {
  return {
    get: async (table, id) => tables.get(table, id),
    getMany: async (keys, opts) => tables.getMany(keys, opts),
    find: async (table, field, value) => tables.find(table, field, value),
    all: async (table) => tables.all(table),
    scan: async (table, visit) => {
      tables.scan(table, visit);
    },
    count: async (table) => tables.count(table),
    countWhere: async (table, field, value) => tables.countWhere(table, field, value),
    findPage: async (table, field, value, page) => tables.findPage(table, field, value, page),
  };
}

/**
 * Throws StoreConflict on the first expectation that does not hold. Equal as JSON: the caller
 * passes what it read (a parse of the stored string), so comparing strings is the fast path;
 * a differently ordered but equal object still matches (as jsonb equality does on PostgreSQL).
 */
export function checkExpectations(tables: Tables, expect: readonly Expectation<AnyTables>[] | undefined): void {
  if (!expect) return;
  for (const e of expect) {
    if (e.value === undefined) {
      if (tables.has(e.table, e.id)) throw new StoreConflict(e.table, e.id);
      continue;
    }
    // the record as read, and nothing has replaced its text since (a commit stores a new one)
    if (tables.isSource(e.value, e.table, e.id)) continue;
    const stored = tables.getJson(e.table, e.id);
    if (stored === undefined) throw new StoreConflict(e.table, e.id);
    const want = JSON.stringify(e.value);
    const text = recordText(e.id, stored);
    if (want !== text && !isDeepStrictEqual(JSON.parse(want), JSON.parse(text))) throw new StoreConflict(e.table, e.id);
  }
}

/** Throws TypeError unless `expect` is undefined or an array of {table, id, value} conditions. */
export function validateExpectations(expect: unknown): asserts expect is Expectation<AnyTables>[] | undefined {
  if (expect === undefined) return;
  if (!Array.isArray(expect)) throw new TypeError('commit: expectations must be an array');
  expect.forEach((e: unknown, i) => {
    const { table, id, value }: Record<string, unknown> = recordOr(e) ?? {};
    if (typeof table !== 'string' || typeof id !== 'string')
      throw new TypeError(`commit: expectation ${i} has no table or id`);
    if (value !== undefined && (value === null || typeof value !== 'object')) {
      throw new TypeError(`commit: expectation ${i} value must be an object or undefined`);
    }
  });
}

/**
 * What a claim leases, chosen from memory: the due records without a live lease of another
 * owner, up to `limit`, with leaseOwner/leaseUntil set (and leaseTakenFrom: ClaimRequest). The
 * caller commits `changes` in the same tick: nothing can interleave between the choice and the
 * commit, so no expectation is needed.
 */
export function chooseClaims(tables: Tables, req: ClaimRequest): { changes: JsonChange[]; records: object[] } {
  const changes: JsonChange[] = [];
  const records: object[] = [];
  if (!(req.limit > 0)) return { changes, records };
  for (const [id, json] of tables.entries(req.table)) {
    const rec: unknown = JSON.parse(recordText(id, json));
    if (!isRecord(rec)) continue; // every stored text is an object: a check that costs a typeof
    const due = rec[req.dueField];
    if (typeof due !== 'number' || due > req.now) continue;
    const until = rec.leaseUntil;
    const live = typeof until === 'number' && until > req.now;
    if (live && rec.leaseOwner !== req.owner) continue;
    const leased: Record<string, unknown> = { ...rec, leaseOwner: req.owner, leaseUntil: req.leaseUntil };
    if (!(live && rec.leaseOwner === req.owner)) {
      // not a renewal: the lease begins on this claim, and says whose it took over (one that ran out)
      if (typeof rec.leaseOwner === 'string') leased.leaseTakenFrom = rec.leaseOwner;
      else delete leased.leaseTakenFrom;
    }
    changes.push({ table: req.table, id, json: JSON.stringify(leased), value: leased });
    records.push(leased);
    if (records.length >= req.limit) break;
  }
  return { changes, records };
}

/**
 * Hit counters whose window starts at a key's first hit, swept of ended windows so the map stays
 * bounded by the keys of live windows.
 */
export class HitWindows {
  readonly #windows = new Map<string, { end: number; count: number }>();
  #sweepAt = 1024;

  hit(key: string, windowMs: number, now: number, n = 1): HitCount {
    checkHit(windowMs, n);
    const k = `${windowMs}\u0000${key}`;
    let w = this.#windows.get(k);
    if (!w || w.end <= now) this.#windows.set(k, (w = { end: now + windowMs, count: 0 }));
    w.count += n;
    if (this.#windows.size >= this.#sweepAt) this.#sweep(now);
    return { count: w.count, resetAt: w.end };
  }

  get size(): number {
    return this.#windows.size;
  }

  #sweep(now: number): void {
    for (const [k, w] of this.#windows) if (w.end <= now) this.#windows.delete(k);
    // Amortised: the next sweep waits until the map doubles again.
    this.#sweepAt = Math.max(1024, this.#windows.size * 2);
  }
}

/** In-process publish/subscribe: delivery is asynchronous and a listener's throw never reaches the publisher. */
export class LocalChannels {
  readonly #listeners = new Map<string, Set<Listener>>();

  publish(channel: string, payload: string): Promise<void> {
    try {
      checkChannel(channel);
      checkPayload(payload);
    } catch (err) {
      return Promise.reject(err);
    }
    const set = this.#listeners.get(channel);
    if (set) {
      for (const fn of [...set]) {
        queueMicrotask(() => {
          try {
            fn(payload);
          } catch {
            /* a listener's failure is its own */
          }
        });
      }
    }
    return Promise.resolve();
  }

  subscribe(channel: string, fn: Listener): () => void {
    checkChannel(channel);
    let set = this.#listeners.get(channel);
    if (!set) this.#listeners.set(channel, (set = new Set()));
    set.add(fn);
    return () => {
      const s = this.#listeners.get(channel);
      if (!s) return;
      s.delete(fn);
      if (s.size === 0) this.#listeners.delete(channel);
    };
  }
}
