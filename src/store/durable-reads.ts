/**
 * Durable before visible, on the embedded store: a commit is applied to memory at once (so the
 * next commit checks its expectations against it, and nothing interleaves), but until its journal
 * line is written and fdatasynced it may still be undone (a full disk, an I/O error: the group's
 * write fails and journal-writer.ts rolls it back). So no read from outside a commit may answer
 * with it: a read that meets a record changed by a commit not yet durable waits for the next
 * journal batch to settle and looks again, then answers with what is true by then (the new
 * record, or the old one if the group was undone).
 *
 *  - get and getMany wait only for the records they read (a pending delete counts: "absent" may
 *    be undone too). getMany looks after reading, since an idFrom key's id comes from an answer.
 *  - find, findPage, countWhere, all, scan and count wait while any commit of their table is
 *    pending: a pending insert, delete or change of an indexed field changes what they answer,
 *    and knowing which index buckets a change touches would cost every commit a parse of the
 *    record it replaces. A pending commit lasts one journal write, so such a read waits at most
 *    for the batch in flight and the one after it.
 *  - claim and commit need not wait: they are commits, queued behind the pending ones, and a
 *    failed batch fails every line queued behind it (journal-writer.ts), so a claim or commit
 *    that saw a pending record is undone with it.
 *
 * The cost when nothing is pending, the common case (the app read on every request), is one
 * size check per read: no promise, no allocation. PostgreSQL has the property by itself: a commit
 * is visible to other sessions at COMMIT, which returns once it is durable.
 */
import type { Tables } from './tables.js';
import type { StoreEngine } from './types.js';

/** The records changed by commits that are applied to memory but not yet durable. */
export class PendingRecords {
  /** table → id → how many pending commits change it. */
  readonly #tables = new Map<string, Map<string, number>>();
  /** Pending changes in all tables. */
  #size = 0;
  /** Resolved at the next settle(); made only when a read has to wait. */
  #next: { promise: Promise<void>; resolve: () => void } | null = null;

  /** 0 when no commit is pending: the only check a read makes then. */
  get size(): number {
    return this.#size;
  }

  /** A commit applied to memory: its records are pending until it is done(). */
  add(changes: readonly { table: string; id: string }[]): void {
    for (const { table, id } of changes) {
      let t = this.#tables.get(table);
      if (!t) this.#tables.set(table, (t = new Map()));
      t.set(id, (t.get(id) ?? 0) + 1);
    }
    this.#size += changes.length;
  }

  /** A commit durable, or undone in memory: the same changes add() was given. */
  done(changes: readonly { table: string; id: string }[]): void {
    for (const { table, id } of changes) {
      const t = this.#tables.get(table);
      const n = t?.get(id);
      if (!t || n === undefined) continue;
      if (n > 1) t.set(id, n - 1);
      else t.delete(id);
      this.#size--;
    }
  }

  has(table: string, id: string): boolean {
    return this.#tables.get(table)?.has(id) ?? false;
  }

  /** Whether any commit of `table` is pending. */
  busy(table: string): boolean {
    return (this.#tables.get(table)?.size ?? 0) > 0;
  }

  /** A journal batch settled (acknowledged, or failed and rolled back): wake the reads waiting. */
  settle(): void {
    const next = this.#next;
    this.#next = null;
    next?.resolve();
  }

  /** Resolves at the next settle(). */
  settled(): Promise<void> {
    if (!this.#next) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#next = { promise, resolve };
    }
    return this.#next.promise;
  }

  /** Resolves once no commit of `table` is pending. */
  async untilIdle(table: string): Promise<void> {
    while (this.busy(table)) await this.settled();
  }
}

type Reads = Pick<StoreEngine, 'get' | 'getMany' | 'find' | 'all' | 'scan' | 'count' | 'countWhere' | 'findPage'>;

/** The reads of the embedded store: tables' reads, each waiting while it would meet a pending record. */
export function durableReads(tables: Tables, pending: PendingRecords): Reads {
  return {
    async get(table, id) {
      if (pending.size !== 0) while (pending.has(table, id)) await pending.settled();
      return tables.get(table, id);
    },
    async getMany(keys, opts) {
      for (;;) {
        const out = tables.getMany(keys, opts);
        if (pending.size === 0 || !meetsPending(pending, keys, out)) return out;
        await pending.settled();
      }
    },
    async find(table, field, value) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.find(table, field, value);
    },
    async all(table) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.all(table);
    },
    async scan(table, visit) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.scan(table, visit);
    },
    async count(table) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.count(table);
    },
    async countWhere(table, field, value) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.countWhere(table, field, value);
    },
    async findPage(table, field, value, page) {
      if (pending.size !== 0) await pending.untilIdle(table);
      return tables.findPage(table, field, value, page);
    },
  };
}

/** Whether any record getMany answered for (found or not) is pending; an idFrom key's id is the one it resolved to. */
function meetsPending(
  pending: PendingRecords,
  keys: Parameters<Reads['getMany']>[0],
  out: readonly (object | undefined)[],
): boolean {
  for (const k of keys) {
    const id = 'idFrom' in k ? (out[k.idFrom.key] as Record<string, unknown> | undefined)?.[k.idFrom.field] : k.id;
    if (typeof id === 'string' && pending.has(k.table, id)) return true;
  }
  return false;
}
