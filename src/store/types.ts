/**
 * The storage contract that services use. Everything the daemon keeps is a record
 * in a named table, keyed by a string id. Reads are synchronous from memory;
 * a change is applied to memory at once (so check-then-change inside one tick is
 * atomic) and the returned promise settles when the change is durable on disk.
 * If it cannot be made durable, the promise rejects and the change (with every
 * commit made after it that was not yet durable) is taken back out of memory first.
 */
export interface Change {
  table: string;
  id: string;
  /** The new record, or null to delete it. */
  value: object | null;
}

/** A record changed in memory: `before`/`after` undefined when there was / is no record. */
export type RecordObserver = (table: string, id: string, before: object | undefined, after: object | undefined) => void;

export interface Store {
  get<T extends object>(table: string, id: string): T | undefined;
  /** All records of a table (live iteration over memory; do not mutate them). */
  values<T extends object>(table: string): IterableIterator<T>;
  count(table: string): number;
  /**
   * Apply the changes to memory now, in order, and resolve once they are on disk
   * (fsynced). Concurrent commits share one disk write (group commit).
   */
  commit(changes: Change[]): Promise<void>;
  /**
   * Whether writes reach the disk now. A commit that cannot be written rejects and is rolled
   * back out of memory; until a later write succeeds this answers {ok: false, reason}.
   */
  health(): StoreHealth;
  /**
   * Be told, synchronously, of every record change applied to memory: by a commit, and by the
   * rollback of a commit that could not be written (after = the restored value). Keeps a
   * derived index (e.g. grants') equal to memory, failed commits included.
   */
  observe(fn: RecordObserver): void;
  /** Flush pending writes, compact, release files. */
  close(): Promise<void>;
}

/** Where the store reports what it repaired by itself (a torn journal tail); the daemon's Logger fits. */
export interface StoreLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** Whether the store can write: not while its last journal write (or the repair before the next) failed. */
type StoreHealth = { ok: true } | { ok: false; reason: string };

/**
 * Raised when a store file cannot be read, parsed or trusted (damage, a gap in the journal,
 * a lost data file): the daemon must refuse to start. Files are left byte-for-byte unchanged.
 */
export class StoreCorruptError extends Error {
  constructor(public readonly file: string, public readonly problem: string) {
    super(`store file ${file}: ${problem}`);
    this.name = 'StoreCorruptError';
  }
}

export const FORMAT_VERSION = 1;
