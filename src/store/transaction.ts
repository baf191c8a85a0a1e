/**
 * The unit of work of the store contract (Store.transaction), written once over the contract's
 * reads and commit so that both stores run it alike.
 *
 * A transaction is a function given a Transaction. What it reads through it is remembered as the
 * record it was (or its absence), what it writes is buffered, and when the function resolves the
 * writes are committed in one commit that expects every record read to be still as read. Reads
 * see the transaction's own buffered writes. When the commit meets a conflict (another writer
 * changed something read), nothing is written and the whole function runs again on fresh reads,
 * a bounded number of times with a short random pause between; the conflict of the last run is
 * thrown (StoreConflict). Any other throw ends it with nothing written. A function that wrote
 * nothing commits nothing.
 *
 * So the function must be safe to run again: it has no effect but its writes. A send, a log line,
 * a publish happen after the transaction resolves, from what the function returned. A step that
 * must happen once (consuming a code, taking an outbox record) is a plain transaction: when it
 * runs again it reads the record again and finds it consumed.
 *
 * What it does not protect: a find's expectations are the records it found, so a record that
 * comes to match the find meanwhile is not noticed (the same as a commit's expectations). A read
 * marked `peek` is no expectation at all.
 */
import {
  StoreConflict,
  type AnyTables,
  type Change,
  type Expectation,
  type ReadOptions,
  type StoreEngine,
  type EngineTransaction,
  type TransactionOptions,
  type TxKey,
  keyId,
} from './types.js';
import { indexKey } from './indexes.js';
import { fieldOf, stringOr } from '../unknown-values.js';
import { must } from '../must.js';

/** The runs of a transaction unless told (the last conflict is thrown). */
const ATTEMPTS = 8;

/** What a transaction uses of a store. */
type TxStore = Pick<StoreEngine, 'get' | 'getMany' | 'find' | 'commit'>;

const keyOf = (table: string, id: string) => `${table}\u0000${id}`;

/** One run of a transaction's function: its expectations and its buffered writes. */
class Run implements EngineTransaction {
  private readonly expect = new Map<string, Expectation<AnyTables>>();
  private readonly writes = new Map<string, Change<AnyTables>>();
  private ended = false;

  constructor(private readonly store: TxStore) {}

  private live(): void {
    if (this.ended) throw new Error('store transaction: used after it ended');
  }

  /** Remember a record read from the store, unless this run already read or wrote it. */
  private remember(table: string, id: string, value: object | undefined): void {
    const k = keyOf(table, id);
    if (!this.expect.has(k) && (this.writes.size === 0 || !this.writes.has(k)))
      this.expect.set(k, { table, id, value });
  }

  /** This run's write of a record: undefined if none, else { value } (null: deleted). */
  private written(table: string, id: string): { value: object | null } | undefined {
    // most reads come before the first write (an exchange reads everything in one getMany first)
    return this.writes.size === 0 ? undefined : this.writes.get(keyOf(table, id));
  }

  async get(table: string, id: string, opts?: { peek?: true }): Promise<object | undefined> {
    this.live();
    const w = this.written(table, id);
    if (w) return w.value ?? undefined;
    const value = await this.store.get(table, id);
    if (!opts?.peek) this.remember(table, id, value);
    return value;
  }

  async getMany(keys: readonly TxKey<AnyTables>[], opts?: ReadOptions): Promise<(object | undefined)[]> {
    this.live();
    if (keys.length === 0) return [];
    // the store reads a key's table, id and idFrom only: `peek` is this run's to look at
    const read = await this.store.getMany(keys, opts);
    const out: (object | undefined)[] = [];
    for (let i = 0; i < keys.length; i++) {
      const k = must(keys[i]);
      // The id the key names in this run's view (its writes applied) and in the store's answer: they
      // differ only for an idFrom whose record this run wrote; such a key is read again by itself.
      const id = keyId(k, out);
      if (id === undefined) {
        out.push(undefined);
        continue;
      }
      const w = this.written(k.table, id);
      if (w) out.push(w.value ?? undefined);
      else if ('id' in k || id === keyId(k, read)) {
        if (!k.peek) this.remember(k.table, id, read[i]);
        out.push(read[i]);
      } else out.push(await this.get(k.table, id, k.peek ? { peek: true } : undefined));
    }
    return out;
  }

  async find(table: string, field: string, value: string, opts?: { peek?: true }): Promise<object[]> {
    this.live();
    const found = await this.store.find(table, field, value);
    const out: object[] = [];
    for (const r of found) {
      const id = stringOr(fieldOf(r, 'id'));
      if (id === undefined) {
        out.push(r);
        continue;
      }
      if (this.written(table, id)) continue; // answered below, as written
      if (!opts?.peek) this.remember(table, id, r);
      out.push(r);
    }
    for (const c of this.writes.values())
      if (c.table === table && c.value && indexKey(c.value, field) === value) out.push(c.value);
    return out;
  }

  put(table: string, id: string, value: object): void {
    this.write({ table, id, value });
  }

  delete(table: string, id: string): void {
    this.write({ table, id, value: null });
  }

  apply(c: Change<AnyTables>): void {
    this.write({ table: c.table, id: c.id, value: c.value });
  }

  private write(c: Change<AnyTables>): void {
    this.live();
    const k = keyOf(c.table, c.id);
    this.writes.delete(k); // the last write of a record is the one committed
    this.writes.set(k, c);
  }

  /** Commit the buffered writes, expecting every record read (nothing to do when nothing was written). */
  async end(): Promise<void> {
    this.live();
    this.ended = true;
    if (this.writes.size) await this.store.commit([...this.writes.values()], [...this.expect.values()]);
  }

  /** The run is over without a commit: later use of it throws. */
  abandon(): void {
    this.ended = true;
  }
}

/** Runs `work` as one transaction on `store` (see the top of this file). */
async function runTransaction<T>(
  store: TxStore,
  work: (tx: EngineTransaction) => Promise<T>,
  opts?: TransactionOptions,
): Promise<T> {
  const attempts = opts?.attempts ?? ATTEMPTS;
  for (let i = 1; ; i++) {
    const run = new Run(store);
    try {
      const result = await work(run);
      await run.end();
      return result;
    } catch (e) {
      run.abandon();
      if (!(e instanceof StoreConflict) || i >= attempts) throw e;
      // a short random pause, so that runs which collided do not collide again in lockstep (the
      // runtime's timer, not the daemon's clock: it spaces writes, it keeps no time a test checks)
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4 * i)));
    }
  }
}

/**
 * Store.transaction as a store implements it: a method over the store it is called on (`this`), so
 * that a copy of a store with a read replaced (a test counting reads) runs its transactions on that read.
 */
export function transaction<T>(
  this: TxStore,
  work: (tx: EngineTransaction) => Promise<T>,
  opts?: TransactionOptions,
): Promise<T> {
  return runTransaction(this, work, opts);
}
