/**
 * The in-memory table set shared by the lowdb store and the memory store:
 * Map<table, Map<id, record>>, plus validation of a commit's changes.
 */
import type { Change, RecordObserver } from './types.js';

export type TableSnapshot = Record<string, Record<string, object>>;

/** Throws TypeError unless `changes` is an array of well-formed Change objects. */
export function validateChanges(changes: unknown): asserts changes is Change[] {
  if (!Array.isArray(changes)) throw new TypeError('commit: changes must be an array');
  changes.forEach((c: unknown, i) => {
    if (c === null || typeof c !== 'object') throw new TypeError(`commit: change ${i} is not an object`);
    const { table, id, value } = c as Record<string, unknown>;
    if (typeof table !== 'string' || table === '') throw new TypeError(`commit: change ${i} has no table name`);
    if (typeof id !== 'string' || id === '') throw new TypeError(`commit: change ${i} has no id`);
    if (value !== null && typeof value !== 'object') {
      throw new TypeError(`commit: change ${i} value must be an object or null`);
    }
  });
}

export class Tables {
  readonly #tables = new Map<string, Map<string, object>>();

  get<T extends object>(table: string, id: string): T | undefined {
    return this.#tables.get(table)?.get(id) as T | undefined;
  }

  values<T extends object>(table: string): IterableIterator<T> {
    const t = this.#tables.get(table);
    return (t ? t.values() : [][Symbol.iterator]()) as IterableIterator<T>;
  }

  count(table: string): number {
    return this.#tables.get(table)?.size ?? 0;
  }

  /** Told of every record change applied to memory, rollbacks included (see Store.observe). */
  readonly #observers: RecordObserver[] = [];

  observe(fn: RecordObserver): void {
    this.#observers.push(fn);
  }

  apply(changes: readonly Change[]): void {
    if (this.#observers.length) {
      for (const { table, id, value } of changes) {
        const before = this.get(table, id);
        this.#applyOne(table, id, value);
        for (const fn of this.#observers) fn(table, id, before, value ?? undefined);
      }
      return;
    }
    for (const { table, id, value } of changes) this.#applyOne(table, id, value);
  }

  #applyOne(table: string, id: string, value: object | null): void {
    if (value === null) {
      const t = this.#tables.get(table);
      if (t) {
        t.delete(id);
        if (t.size === 0) this.#tables.delete(table);
      }
    } else {
      let t = this.#tables.get(table);
      if (!t) this.#tables.set(table, (t = new Map()));
      t.set(id, value);
    }
  }

  /** Apply `changes`, returning what undoes them (see restore). */
  applyWithUndo(seq: number, changes: readonly Change[]): CommitUndo {
    const prev = changes.map(({ table, id }) => ({ table, id, value: this.get(table, id) }));
    this.apply(changes);
    return { seq, prev };
  }

  /** Undo one commit (what applyWithUndo returned); undo several newest first. */
  restore(undo: CommitUndo): void {
    for (let j = undo.prev.length - 1; j >= 0; j--) {
      const { table, id, value } = undo.prev[j]!;
      this.apply([{ table, id, value: value ?? null }]);
    }
  }

  /** Load one table's records from a parsed snapshot (own properties only). */
  load(table: string, records: Record<string, object>): void {
    const t = new Map<string, object>();
    for (const [id, rec] of Object.entries(records)) t.set(id, rec);
    if (t.size) this.#tables.set(table, t);
  }

  /**
   * A point-in-time copy of the table structure (records are shared, not cloned:
   * commits replace records, they never mutate them). Object.fromEntries defines
   * own properties, so ids like "__proto__" survive.
   */
  snapshot(): TableSnapshot {
    const out: TableSnapshot = Object.create(null);
    for (const [name, t] of this.#tables) out[name] = Object.fromEntries(t);
    return out;
  }
}

/** What one commit replaced: each changed record's previous value (undefined: there was none). */
export interface CommitUndo {
  seq: number;
  prev: { table: string; id: string; value: object | undefined }[];
}

/** Apply undo records, newest first, to a snapshot (a copy taken from Tables.snapshot()). */
export function undoOnSnapshot(snap: TableSnapshot, undos: readonly CommitUndo[]): void {
  for (let i = undos.length - 1; i >= 0; i--) {
    const { prev } = undos[i]!;
    for (let j = prev.length - 1; j >= 0; j--) {
      const { table, id, value } = prev[j]!;
      let t = snap[table];
      if (value === undefined) {
        if (t) delete t[id];
        continue;
      }
      if (!t) snap[table] = t = Object.create(null) as Record<string, object>;
      // defineProperty: an id like "__proto__" must stay an own property
      Object.defineProperty(t, id, { value, enumerable: true, writable: true, configurable: true });
    }
  }
}
