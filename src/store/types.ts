/**
 * The storage contract every service uses, the same on both stores: the embedded one (journaled
 * files in the data dir, one daemon) and PostgreSQL (any number of daemons on one database).
 *
 * Everything the daemon keeps is a record in a named table, keyed by a string id. Reads are
 * asynchronous and always current: on PostgreSQL they go to the database, so another daemon's
 * commit is seen as soon as it answered. Nothing is cached across calls. Reads never answer with a
 * commit that is not yet durable (it may still fail): PostgreSQL shows a commit at COMMIT; the
 * embedded store's reads wait for the fsync of a record they meet (durable-reads.ts).
 *
 * "Read, check, write" is made atomic with expectations: a commit may name records that must
 * still be exactly what the caller read (or still be absent). If any of them changed, nothing is
 * written and the commit rejects with StoreConflict. Services do not commit by hand: they use
 * `transaction` (store/transaction.ts), which makes what they read its expectations, buffers what
 * they write, commits at its end and runs again on a conflict. Records returned by reads are the
 * caller's own copies: changing them changes nothing stored.
 *
 * The contract is typed by a map of table names to the type of their records (model/tables.ts
 * Tables, the default): a read of `apps` gives AppRecords, a change of `apps` must hold one, and
 * a find takes only a field store/indexes.ts lists for its table. The types cost nothing at run
 * time; the store itself keeps any JSON object (AnyTables: its implementations, and tests of it).
 */
import type { Tables } from '../model/tables.js';
import type { IndexedField, IndexedTable } from './indexes.js';
import { errnoOf, fieldOf, stringOr } from '../unknown-values.js';

/** A map of table names to the type of their records. */
export type TableMap = object;
/** The table map of a store that keeps records of any table, as objects: what the stores implement. */
export type AnyTables = Record<string, object>;
/** The table names of a map. */
type TableOf<TM extends TableMap> = keyof TM & string;
/** The type of one of TM's records of any table (a union by table name, so that `table` tells which). */
type PerTable<TM extends TableMap, F> = { [K in TableOf<TM>]: F & { table: K } }[TableOf<TM>];

/** A change of a commit: `value`, the new record of `table`, or null to delete it. */
export type Change<TM extends TableMap = Tables> = {
  [K in TableOf<TM>]: { table: K; id: string; value: TM[K] | null };
}[TableOf<TM>];
/** A change of the daemon's table `K`. */
export type ChangeOf<K extends keyof Tables> = Extract<Change, { table: K }>;

/**
 * Where a record is, for getMany: its id; or (idFrom) the string in `field` of the record answered
 * for an earlier key `key` (an index into the same keys, itself given by id or by idFrom): a record
 * that names another (an installation its bot user) read with it in one round trip. No record
 * there, or no string in the field: undefined.
 */
export type RecordKey<TM extends TableMap = Tables> = PerTable<
  TM,
  { id: string } | { idFrom: { key: number; field: string } }
>;

/** The record getMany answers for `Key` (undefined where there is none). */
type RecordAt<TM extends TableMap, Key> = Key extends { table: infer K extends TableOf<TM> }
  ? TM[K] | undefined
  : never;

/** Freeze `o` and everything in it (records are JSON: objects and arrays). */
export function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/** Throws TypeError unless every idFrom of `keys` names an earlier key. */
export function checkRecordKeys(keys: readonly RecordKey<AnyTables>[]): void {
  keys.forEach((k, i) => {
    if (!('idFrom' in k)) return;
    const j = k.idFrom.key;
    if (!(Number.isInteger(j) && j >= 0 && j < i))
      throw new TypeError(`store.getMany: key ${i} must take its id from an earlier key`);
  });
}

/**
 * The id getMany reads for `k`: its own, or the string in the field its idFrom names of the record
 * answered for the earlier key (`answered`, in key order); undefined when there is none.
 */
export function keyId(k: RecordKey<AnyTables>, answered: readonly (object | undefined)[]): string | undefined {
  return 'idFrom' in k ? stringOr(fieldOf(answered[k.idFrom.key], k.idFrom.field)) : k.id;
}

/**
 * A condition of a commit: the record is still `value` (equal as JSON), or still absent (undefined).
 * When `value` is a record this store read, "still" means not rewritten since that read: on
 * PostgreSQL a record changed and changed back counts as changed (its row version differs), while
 * a write of exactly what it held does not change it. Either way a caller that gets a conflict
 * reads again and decides again.
 */
export type Expectation<TM extends TableMap = Tables> = {
  [K in TableOf<TM>]: { table: K; id: string; value: TM[K] | undefined };
}[TableOf<TM>];

/** A commit whose expectations did not hold: nothing of it was written. */
export class StoreConflict extends Error {
  constructor(
    public readonly table: string,
    public readonly id: string,
  ) {
    super(`store conflict on ${table}/${id}`);
    this.name = 'StoreConflict';
  }
}

/**
 * The store cannot be reached (PostgreSQL down, its connection dropped) or cannot write (a full
 * or failing disk): the call did not complete (a commit on the embedded store wrote nothing; on
 * PostgreSQL a connection lost during a commit leaves it unknown, as for any database client), and
 * may succeed once the store is back, which it notices by itself. `reason` is what health() says
 * meanwhile; `code` is the underlying error's (ENOSPC, ECONNREFUSED…) when it has one.
 */
export class StoreUnavailable extends Error {
  readonly code?: string;
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(reason, options);
    this.name = 'StoreUnavailable';
    const code = errnoOf(options?.cause);
    if (code !== undefined) this.code = code;
  }
}

/**
 * A commit that holds, in a string (a value, an id), the character U+0000 (NUL) or half of a
 * surrogate pair without its other half (not a Unicode character at all): neither store keeps one
 * (PostgreSQL's text and jsonb cannot hold them; the embedded store refuses them alike, so both
 * behave the same). Nothing was written. It came from the caller's input: a bad request, not an
 * outage. Reads need no such rule: no record holds one, so a key or value with one finds nothing.
 */
export class StoreValueRefused extends Error {
  constructor() {
    super('a string holds the character U+0000 (NUL) or an unpaired surrogate, which the store does not keep');
    this.name = 'StoreValueRefused';
  }
}

/**
 * Whether JSON text (as JSON.stringify writes it) holds what no store keeps: an escaped NUL, or an
 * escaped surrogate — JSON.stringify writes a well-formed pair as the character itself and only a
 * lone half as `\\udXXX`. An escape counts when its backslash is not itself escaped. The check of
 * every commit: one scan for `\\u`, which JSON.stringify writes only for these and control characters.
 */
export function jsonHoldsUnstorable(json: string): boolean {
  for (let i = json.indexOf('\\u'); i !== -1; i = json.indexOf('\\u', i + 2)) {
    let slashes = 1;
    while (i - slashes >= 0 && json.charCodeAt(i - slashes) === 92) slashes++;
    if (slashes % 2 === 0) continue; // an escaped backslash followed by a plain u
    const hex = json.slice(i + 2, i + 6).toLowerCase();
    if (hex === '0000' || (hex >= 'd800' && hex <= 'dfff')) return true;
  }
  return false;
}

/** A NUL, or half of a surrogate pair without its other half. */
export const UNSTORABLE_CHAR = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether an id holds what no store keeps (a NUL, an unpaired surrogate). */
export const idUnstorable = (id: string): boolean => UNSTORABLE_CHAR.test(id);

/** What `claim` asks for: due records of a table, leased to one daemon. */
export interface ClaimRequest<K extends string = string, R extends object = object> {
  table: K;
  /** Numeric field holding when the record is due (ms since epoch); records with field <= now are due. */
  dueField: keyof R & string;
  now: number;
  /** Who claims (the daemon's instance id) and until when (ms since epoch). */
  owner: string;
  leaseUntil: number;
  limit: number;
}
/*
 * A lease that begins on a record that had one (another owner's that ran out, or the claimer's own
 * that ran out) is a takeover: the claim writes the earlier owner in `leaseTakenFrom`, so the new
 * owner knows that whatever the earlier one was doing may have been done, its outcome unrecorded (an
 * event sent whose 200 was never written). A lease begun on an unleased record removes the field; a
 * renewal of the claimer's own live lease keeps it as it was.
 */

/**
 * What `findPage` asks for: records in order of a numeric field, then of id, from a position on.
 * Ids compare as JavaScript strings (code units) on the embedded store and in "C" collation (bytes)
 * on PostgreSQL: the same order for ids without characters beyond U+FFFF.
 */
export interface PageQuery<R extends object = object> {
  /** A numeric field; records without a finite number in it are left out. */
  orderBy: keyof R & string;
  /** Largest first (default: smallest first). */
  desc?: boolean;
  /** At most this many records (1 or more). */
  limit: number;
  /**
   * Only records beyond this position in the page's direction (the last record of the previous page: its orderBy value
   * and id).
   */
  after?: { value: number; id: string };
}

/** The largest payload `publish` takes on either store (PostgreSQL's NOTIFY allows 8,000 bytes). */
const PUBLISH_MAX_BYTES = 7000;

/**
 * Throws unless `channel` is a channel name both stores accept: 1-50 of [a-z0-9_] (PostgreSQL spells
 * it into LISTEN as an identifier; the embedded store refuses the same so a bad name fails in tests).
 */
export function checkChannel(channel: string): void {
  if (!/^[a-z0-9_]{1,50}$/.test(channel))
    throw new TypeError(`store channel ${JSON.stringify(channel)} must be 1-50 of [a-z0-9_]`);
}

/** Throws unless `payload` is a string `publish` can carry. */
export function checkPayload(payload: unknown): asserts payload is string {
  if (typeof payload !== 'string' || Buffer.byteLength(payload, 'utf8') > PUBLISH_MAX_BYTES) {
    throw new RangeError(`store.publish: the payload must be a string of at most ${PUBLISH_MAX_BYTES} bytes`);
  }
}

/** Throws unless a hit's window length is positive and its count a whole number of 1 or more. */
export function checkHit(windowMs: number, n: number): void {
  if (!(windowMs > 0)) throw new RangeError('hit: windowMs must be positive');
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError('hit: n must be a whole number of 1 or more');
}

/** What `hit` answers: the hits of the key's current window, these included, and when that window ends (ms). */
export interface HitCount {
  count: number;
  resetAt: number;
}

/** A message between the daemons of one store (LISTEN/NOTIFY on PostgreSQL; in-process when embedded). */
export type Listener = (payload: string) => void;

/** Told that a channel's messages of the last `lostMs` milliseconds may not have been heard. */
export type Gap = (lostMs: number) => void;

export interface ReadOptions {
  /**
   * The caller only reads what it gets: the records are frozen (deeply) and may be the same objects
   * another shared read got. The embedded store then keeps the parse of a record until it changes
   * instead of parsing its text again (a hot path reads the same app record on every request); on
   * PostgreSQL they are fresh objects, frozen alike, so a caller that modifies one fails on both.
   * They are what was read, for a commit's expectations, as any record read.
   */
  shared?: boolean;
}

/**
 * A key of a transaction's getMany: a RecordKey, read as an expectation of the transaction unless
 * `peek` (then only read: a record the transaction does not decide on, such as the app a token
 * exchange authenticates, which would otherwise be locked by every exchange's commit on PostgreSQL).
 */
export type TxKey<TM extends TableMap = Tables> = RecordKey<TM> & { peek?: true };

/**
 * A unit of work (store/transaction.ts): reads remembered as its expectations, writes buffered
 * until its end. Reads see its own buffered writes.
 */
export interface Transaction<TM extends TableMap = Tables> {
  /** A record, as it is now (or as this transaction wrote it); an expectation unless `peek`. */
  get<K extends TableOf<TM>>(table: K, id: string, opts?: { peek?: true }): Promise<TM[K] | undefined>;
  /** Several records in one read (Store.getMany); each an expectation unless its key says `peek`. */
  getMany<const Keys extends readonly TxKey<TM>[]>(
    keys: Keys,
    opts?: ReadOptions,
  ): Promise<{ -readonly [I in keyof Keys]: RecordAt<TM, Keys[I]> }>;
  /**
   * Store.find, with this transaction's writes applied; each record found is an expectation unless
   * `peek`. A record that comes to match meanwhile (added by another writer) is not seen by the commit.
   */
  find<K extends TableOf<TM> & IndexedTable>(
    table: K,
    field: IndexedField<K>,
    value: string,
    opts?: { peek?: true },
  ): Promise<TM[K][]>;
  /** Write `value` as the record `id` of `table` at the transaction's end. */
  put<K extends TableOf<TM>>(table: K, id: string, value: TM[K]): void;
  /** Delete the record `id` of `table` at the transaction's end. */
  delete(table: TableOf<TM>, id: string): void;
  /** put or delete as a Change built elsewhere says (an outbox record made for this change). */
  apply(change: Change<TM>): void;
}

export interface TransactionOptions {
  /** Runs at most (default 8); the conflict of the last is thrown. */
  attempts?: number;
}

export interface Store<TM extends TableMap = Tables> {
  /** 'embedded' (files in the data dir, one daemon) or 'postgres' (shared by several daemons). */
  readonly kind: 'embedded' | 'postgres';
  /**
   * Run `work` as one unit of work (store/transaction.ts): what it reads is what its commit
   * expects, what it writes is committed at its end, all or none; a conflict runs it again on
   * fresh reads. It must have no effect but its writes (it may run more than once).
   */
  transaction<T>(work: (tx: Transaction<TM>) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  get<K extends TableOf<TM>>(table: K, id: string): Promise<TM[K] | undefined>;
  /**
   * Several records of any tables at once, in the order asked (undefined where there is none): one
   * round trip on PostgreSQL where a get per record costs one each. A key asked twice is answered twice.
   */
  getMany<const Keys extends readonly RecordKey<TM>[]>(
    keys: Keys,
    opts?: ReadOptions,
  ): Promise<{ -readonly [I in keyof Keys]: RecordAt<TM, Keys[I]> }>;
  /** Records of `table` whose `field` (one of INDEXED_FIELDS[table]) equals `value`, in no order. */
  find<K extends TableOf<TM> & IndexedTable>(table: K, field: IndexedField<K>, value: string): Promise<TM[K][]>;
  /** Every record of a table, in no order: for sweeps and tables that stay small. */
  all<K extends TableOf<TM>>(table: K): Promise<TM[K][]>;
  /**
   * Every record of a table, in no order, handed to `visit` one at a time until it returns true:
   * a sweep of a table that grows (the codes) without all of it parsed at once. The embedded store
   * reads the table at one moment; PostgreSQL reads it in pages by id, each page at its moment.
   */
  scan<K extends TableOf<TM>>(table: K, visit: (record: TM[K]) => boolean | void): Promise<void>;
  count(table: TableOf<TM>): Promise<number>;
  /**
   * How many records `find(table, field, value)` would return, without reading them (the index's size; count(*) on
   * PostgreSQL).
   */
  countWhere<K extends TableOf<TM> & IndexedTable>(table: K, field: IndexedField<K>, value: string): Promise<number>;
  /**
   * One page of `find(table, field, value)`, ordered by `page.orderBy` then id: a channel's newest
   * messages without reading the channel. Each page is read at one moment; pages read one after
   * the other see the store as it is at each.
   */
  findPage<K extends TableOf<TM> & IndexedTable>(
    table: K,
    field: IndexedField<K>,
    value: string,
    page: PageQuery<TM[K] & object>,
  ): Promise<TM[K][]>;
  /**
   * Apply the changes, all or none, once every expectation holds; resolve when they are durable
   * (fsynced, or committed on PostgreSQL). Rejects with StoreConflict, writing nothing, when an
   * expectation does not hold; with StoreUnavailable when the store cannot be reached or cannot write
   * (nothing kept either).
   */
  commit(changes: readonly Change<TM>[], expect?: readonly Expectation<TM>[]): Promise<void>;
  /**
   * Lease due records: those of `table` whose `dueField` <= now and that no other owner holds a live
   * lease on (`leaseOwner`/`leaseUntil` fields, set here and returned; `leaseTakenFrom` on a takeover,
   * see ClaimRequest). A record is leased to exactly one
   * claimer at a time, across every daemon of the store; SKIP LOCKED on PostgreSQL.
   */
  claim<K extends TableOf<TM>>(req: ClaimRequest<K, TM[K] & object>): Promise<TM[K][]>;
  /**
   * Count `n` hits of `key` (default 1; a whole number of 1 or more): a window of `windowMs` starts
   * at the key's first hit (and at its first hit after a window ended); resolves the window's hits
   * so far, these included, and when it ends. Shared by every daemon of the store (rate limits
   * behind a balancer).
   */
  hit(key: string, windowMs: number, now: number, n?: number): Promise<HitCount>;
  /**
   * Send `payload` (a string up to 7,000 bytes) to every listener of `channel` in every daemon of the store, this one
   * included.
   */
  publish(channel: string, payload: string): Promise<void>;
  /**
   * Listen on `channel`; returns the unsubscribe. `onGap` is called when messages on the channel may
   * have been lost: on PostgreSQL, once the LISTEN connection is back after a drop (its argument:
   * how long, in ms, messages were not heard). The subscriber then looks at the store again for
   * what it may have missed. The embedded store loses nothing and never calls it.
   */
  subscribe(channel: string, fn: Listener, onGap?: Gap): () => void;
  /**
   * Resolves once every subscription made so far listens: a message published after that, by any
   * daemon, is heard. On PostgreSQL a LISTEN goes out after subscribe returns; the embedded store
   * listens at once.
   */
  subscribed(): Promise<void>;
  /**
   * Whether the store can be used now. A commit that cannot be written rejects and is rolled
   * back; from then until a write as large as the one that failed reaches the disk (the
   * embedded store) or the database answers again (PostgreSQL) this answers {ok: false, reason},
   * the reason every call refused meanwhile carries (StoreUnavailable).
   */
  health(): StoreHealth;
  /**
   * Flush pending writes, compact (embedded), release files and connections. `compact: false`
   * leaves the journal for the next open to replay (a hand-over: the next daemon is waiting).
   */
  close(opts?: { compact?: boolean }): Promise<void>;
}

/**
 * What a store implements: Store's contract over records of any table, untyped (a store keeps any
 * JSON object it is given). Callers hold it as a Store, through `typed`.
 */
export interface StoreEngine extends Pick<
  Store,
  'kind' | 'hit' | 'publish' | 'subscribe' | 'subscribed' | 'health' | 'close'
> {
  transaction<T>(work: (tx: EngineTransaction) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  get(table: string, id: string): Promise<object | undefined>;
  getMany(keys: readonly RecordKey<AnyTables>[], opts?: ReadOptions): Promise<(object | undefined)[]>;
  find(table: string, field: string, value: string): Promise<object[]>;
  all(table: string): Promise<object[]>;
  scan(table: string, visit: (record: object) => boolean | void): Promise<void>;
  count(table: string): Promise<number>;
  countWhere(table: string, field: string, value: string): Promise<number>;
  findPage(table: string, field: string, value: string, page: PageQuery): Promise<object[]>;
  commit(changes: readonly Change<AnyTables>[], expect?: readonly Expectation<AnyTables>[]): Promise<void>;
  claim(req: ClaimRequest): Promise<object[]>;
}

/** The Transaction a StoreEngine's transaction gives (Transaction, untyped). */
export interface EngineTransaction extends Pick<Transaction<AnyTables>, 'get' | 'find' | 'put' | 'delete' | 'apply'> {
  getMany(keys: readonly TxKey<AnyTables>[], opts?: ReadOptions): Promise<(object | undefined)[]>;
}

/** The reads of a StoreEngine a check before the first write may use (StoreReads, untyped). */
export type EngineReads = Pick<StoreEngine, 'get' | 'all' | 'count'>;

/**
 * A store, or the reads of one, seen with the record types of `TM` (the daemon's Tables unless
 * told): the same object, retyped at no cost. A store keeps whatever JSON objects it is given; the
 * daemon's own are checked against Tables where it commits them, so what it reads back has their
 * types. This is where each store hands itself out, and the only place that asserts it.
 */
export function typed<TM extends TableMap = Tables, X extends object = object>(
  store: StoreEngine & NoInfer<X>,
): Store<TM> & X;
export function typed<TM extends TableMap = Tables>(reads: EngineReads): StoreReads<TM>;
export function typed(store: unknown): unknown {
  return store;
}

/**
 * The reads a check made before a store writes anything may use (start.ts's key check): both stores offer them before
 * they open for writing.
 */
export type StoreReads<TM extends TableMap = Tables> = Pick<Store<TM>, 'get' | 'all' | 'count'>;

/**
 * Where the store reports what it repaired by itself (a torn journal tail) and when it cannot write or can again; the
 * daemon's Logger fits.
 */
export interface StoreLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
  info?(msg: string, fields?: Record<string, unknown>): void;
}

/** Whether the store can write: not while its last journal write (or the repair before the next) failed. */
export type StoreHealth = { ok: true } | { ok: false; reason: string };

/**
 * Raised when a store file cannot be read, parsed or trusted (damage, a gap in the journal,
 * a lost data file): the daemon must refuse to start. Files are left byte-for-byte unchanged.
 */
export class StoreCorruptError extends Error {
  constructor(
    public readonly file: string,
    public readonly problem: string,
  ) {
    super(`store file ${file}: ${problem}`);
    this.name = 'StoreCorruptError';
  }
}
