/**
 * Durable before visible, on the embedded store: a commit is applied to memory at once (so the
 * next commit checks its expectations against it, and nothing interleaves), but until its journal
 * line is written and fdatasynced it may still be undone (a full disk, an I/O error: the group's
 * write fails and journal-writer.ts rolls it back). So no read from outside a commit answers with
 * it. A read that meets a record changed by a commit not yet durable first waits for the commits
 * pending when it began to settle (at most the batch in flight and the one queued behind it: new
 * commits never make it wait longer, so a read of a table written without pause still answers),
 * then answers with what is durable: a record still pending (changed again meanwhile) is read as
 * its last durable text, kept here from the moment it was first changed.
 *
 *  - get and getMany wait only for the records they read (a pending delete counts: "absent" may
 *    be undone too). getMany looks after reading, since an idFrom key's id comes from an answer.
 *  - find, findPage, countWhere, all, scan and count wait for the commits pending in their table
 *    (a pending insert, delete or change of an indexed field changes what they answer; which
 *    index buckets a change touches is not kept: that would cost every commit a parse of the
 *    record it replaces), then read memory with the records still pending replaced by their
 *    durable texts.
 *  - claim and commit need not wait: they are commits, queued behind the pending ones, and a
 *    failed batch fails every line queued behind it (journal-writer.ts), so a claim or commit
 *    that saw a pending record is undone with it.
 *
 * When nothing is pending, the common case (the app read on every request), a read costs one
 * size check: no promise, no allocation. PostgreSQL has the property by itself: a commit is
 * visible to other sessions at COMMIT, which returns once it is durable.
 */
import { indexKey } from './indexes.js';
import { OrderedLists, pageOf } from './ordered.js';
import { checkPageQuery, type CommitUndo, type Tables } from './tables.js';
import { keyId, type StoreEngine } from './types.js';
import { must } from '../must.js';

/** A record changed by commits not yet durable. */
interface Pending {
  /** How many pending changes of it. */
  n: number;
  /** The number (PendingRecords.add) of the last pending commit that changed it. */
  last: number;
  /** Its last durable text (undefined: absent). */
  durable: string | undefined;
}

/** The records changed by commits that are applied to memory but not yet durable. */
export class PendingRecords {
  /** table → id → its pending state. */
  readonly #tables = new Map<string, Map<string, Pending>>();
  /** table → the number of the last pending commit that changed it. */
  readonly #lastIn = new Map<string, number>();
  /** Pending changes in all tables. */
  #size = 0;
  /** Commits added, and settled (acknowledged or undone; they settle in the order they were added). */
  #added = 0;
  #settled = 0;
  /** Resolved at the next settle(); made only when a read has to wait. */
  #next: { promise: Promise<void>; resolve: () => void } | null = null;

  /** 0 when no commit is pending: the only check a read makes then. */
  get size(): number {
    return this.#size;
  }

  /** A commit applied to memory (what applyWithUndo returned): its records are pending until it settles. */
  add(undo: CommitUndo): void {
    const n = ++this.#added;
    for (const { table, id, json } of undo.prev) {
      let t = this.#tables.get(table);
      if (!t) this.#tables.set(table, (t = new Map()));
      const p = t.get(id);
      if (p) {
        p.n++;
        p.last = n;
      } else t.set(id, { n: 1, last: n, durable: json });
      this.#lastIn.set(table, n);
    }
    this.#size += undo.prev.length;
  }

  /** The oldest pending commit is durable: what it wrote is each record's durable text now. */
  acknowledged(undo: CommitUndo): void {
    this.#settled++;
    for (const { table, id, json } of undo.changes) {
      const t = this.#tables.get(table);
      const p = t?.get(id);
      if (!t || !p) continue;
      p.durable = json ?? undefined;
      if (--p.n === 0) t.delete(id);
      this.#size--;
    }
  }

  /** Every pending commit was undone in memory (a failed batch fails all queued behind it). */
  undone(): void {
    this.#tables.clear();
    this.#lastIn.clear();
    this.#size = 0;
    this.#settled = this.#added;
  }

  /** A journal batch settled: wake the reads waiting. */
  settle(): void {
    const next = this.#next;
    this.#next = null;
    next?.resolve();
  }

  get(table: string, id: string): Pending | undefined {
    return this.#tables.get(table)?.get(id);
  }

  /** The records of `table` pending now, if any. */
  in(table: string): ReadonlyMap<string, Pending> | undefined {
    const t = this.#tables.get(table);
    return t?.size ? t : undefined;
  }

  /** Resolves once the commits up to number `n` have settled. */
  async until(n: number): Promise<void> {
    while (this.#settled < n) await this.#nextSettle();
  }

  /** Resolves once the commits pending in `table` now have settled. */
  untilTable(table: string): Promise<void> | undefined {
    const n = this.#lastIn.get(table);
    return n !== undefined && this.#settled < n ? this.until(n) : undefined;
  }

  #nextSettle(): Promise<void> {
    if (!this.#next) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#next = { promise, resolve };
    }
    return this.#next.promise;
  }
}

type Reads = Pick<StoreEngine, 'get' | 'getMany' | 'find' | 'all' | 'scan' | 'count' | 'countWhere' | 'findPage'>;
type Keys = Parameters<Reads['getMany']>[0];

/** The reads of the embedded store: tables' reads, answering with durable records only. */
export function durableReads(tables: Tables, pending: PendingRecords): Reads {
  /** A record as durable: from memory unless it is pending, else its durable text. */
  const readOf = (table: string, id: string, shared?: boolean) => {
    const p = pending.get(table, id);
    if (!p) return tables.read(table, id, shared);
    return p.durable === undefined ? undefined : tables.parse(id, p.durable, shared);
  };

  /** getMany over durable texts. */
  const resolve = (keys: Keys, shared: boolean | undefined) => {
    const out: (object | undefined)[] = [];
    for (const k of keys) {
      const id = keyId(k, out);
      out.push(id === undefined ? undefined : readOf(k.table, id, shared));
    }
    return out;
  };
  /** The latest pending commit among the records `out` answered for `keys` (0: none). */
  const lastPending = (keys: Keys, out: readonly (object | undefined)[]) => {
    let last = 0;
    for (const k of keys) {
      const id = keyId(k, out);
      const p = id === undefined ? undefined : pending.get(k.table, id);
      if (p && p.last > last) last = p.last;
    }
    return last;
  };

  /** The durable records of `table` under `field` = `value`, with their ids (for a pending table). */
  function durableFind(table: string, field: string, value: string, during: ReadonlyMap<string, Pending>) {
    const out: [string, object][] = [];
    for (const id of tables.idsWhere(table, field, value) ?? [])
      if (!during.has(id)) out.push([id, must(tables.get(table, id))]);
    for (const [id, p] of during) {
      if (p.durable === undefined) continue;
      const rec = tables.parse(id, p.durable);
      if (indexKey(rec, field) === value) out.push([id, rec]);
    }
    return out;
  }

  return {
    async get(table, id) {
      const p = pending.size !== 0 ? pending.get(table, id) : undefined;
      if (!p) return tables.get(table, id);
      await pending.until(p.last);
      return readOf(table, id);
    },
    async getMany(keys, opts) {
      // memory first: when none of the records it answered is pending, memory is what is durable (the common case,
      // even while commits are under way: measured, reading durable texts first made an exchange 13 % dearer)
      const out = tables.getMany(keys, opts);
      if (pending.size === 0) return out;
      const last = lastPending(keys, out);
      if (last === 0) return out;
      await pending.until(last);
      return resolve(keys, opts?.shared);
    },
    async find(table, field, value) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      if (!during) return tables.find(table, field, value);
      return durableFind(table, field, value, during).map(([, rec]) => rec);
    },
    async countWhere(table, field, value) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      if (!during) return tables.countWhere(table, field, value);
      return durableFind(table, field, value, during).length;
    },
    async findPage(table, field, value, page) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      if (!during) return tables.findPage(table, field, value, page);
      checkPageQuery(page);
      const found = durableFind(table, field, value, during);
      const byId = new Map(found);
      const list = new OrderedLists().list(page.orderBy, field, value, () => found);
      const after = page.after && { k: page.after.value, id: page.after.id };
      return pageOf(list, !!page.desc, page.limit, after).map((p) => must(byId.get(p.id)));
    },
    async all(table) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      if (!during) return tables.all(table);
      const out: object[] = [];
      scanDurable(table, during, (rec) => void out.push(rec));
      return out;
    },
    async scan(table, visit) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      if (!during) tables.scan(table, visit);
      else scanDurable(table, during, visit);
    },
    async count(table) {
      if (pending.size !== 0) await pending.untilTable(table);
      const during = pending.in(table);
      let n = tables.count(table);
      if (during)
        for (const [id, p] of during) n += (p.durable !== undefined ? 1 : 0) - (tables.has(table, id) ? 1 : 0);
      return n;
    },
  };

  /** Each durable record of a pending table until `visit` returns true (a pending one as its durable text). */
  function scanDurable(table: string, during: ReadonlyMap<string, Pending>, visit: (rec: object) => boolean | void) {
    if (tables.scan(table, visit, during)) return;
    for (const [id, p] of during) if (p.durable !== undefined && visit(tables.parse(id, p.durable)) === true) return;
  }
}
