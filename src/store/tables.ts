/**
 * The in-memory table set shared by the embedded store and the memory store, plus validation of a
 * commit's changes.
 *
 * Each record is kept as its JSON text, not as an object: its UTF-8 bytes cost about a third of the
 * object graph it encodes (420,000 records: ~200 MB less), and reads must return copies anyway,
 * which JSON.parse makes. The texts live outside the JavaScript heap, in a text arena
 * (text-arena.ts): a table maps each id to a handle, a small integer. The text is kept without the
 * record's leading id when it has one (keptText): the table's key holds it already. Journal lines
 * and the data file are built by concatenating record texts. Each field of INDEXED_FIELDS has an
 * index (key → ids) kept in step by every change: commits, rollbacks and recovery all go through #set.
 */
import { idsOf, sizeOf, withId, withoutId, type Bucket } from './index-buckets.js';
import { INDEXED_FIELDS, assertIndexed, indexKey } from './indexes.js';
import { OrderedLists, pageOf } from './ordered.js';
import { TextArena, type ArenaReader } from './text-arena.js';
import {
  checkRecordKeys,
  deepFreeze,
  keyId,
  type AnyTables,
  type Change,
  type PageQuery,
  type ReadOptions,
  type RecordKey,
} from './types.js';
import { must } from '../must.js';
import { recordOr } from '../unknown-values.js';

/** Text the shared reads keep parsed at most (bytes): about 4,000 app records of 2.5 KB, some 30 MB of objects. */
const SHARED_BYTES = 10_000_000;
/** Records whose first shared read is noted (a reference to the stored text each), at most. */
const SHARED_NOTES = 100_000;

/**
 * The records a table holds before the texts written to it have their keys coded (text-arena.ts,
 * key-dictionary.ts). What coding saves grows with a table's records (a third of a token's or a
 * code's bytes, 300,000 of each in the token benchmark), what it costs with its reads (about 2 µs a
 * KB read, 4 µs a KB written): a table of a few thousand apps or users is read far more than it
 * weighs. A table past it codes what is written from then on.
 */
const CODED_FROM = 20_000;

const ID_PREFIX = '{"id":"';
const COMMA = 0x2c;
const CLOSE = 0x7d;
const QUOTE = 0x22;

/**
 * How a record's text is kept in memory. Most records begin with their own id, `{"id":"<key>",…`
 * (JSON.stringify writes keys in the order the record has them), and the table's key holds that
 * id already: some 50 bytes of a 300–500-byte token or code, about 30 MB of the token benchmark's
 * 540,000 records. Such a text is kept without its first `{"id":"<key>"`, so it begins with `,` or
 * `}`, which no JSON object text does (one begins with `{`, after any whitespace): the two forms
 * cannot be mistaken for each other, and any other text is kept whole. recordText puts the prefix
 * back: whatever the characters of the key, the text it gives is the very text that was kept.
 */
export function keptText(id: string, json: string): string {
  const start = keptStart(id, json);
  return start === 0 ? json : json.slice(start);
}

/** Where the kept text of `json` begins in it (keptText): after its leading `{"id":"<key>"`, or 0. */
function keptStart(id: string, json: string): number {
  const end = ID_PREFIX.length + id.length;
  if (json.startsWith(ID_PREFIX) && json.startsWith(id, ID_PREFIX.length) && json.charCodeAt(end) === QUOTE) {
    const next = json.charCodeAt(end + 1);
    if (next === COMMA || next === CLOSE) return end + 1;
  }
  return 0;
}

/** The JSON text of the record kept as `kept` under `id` (keptText's inverse; a whole text is given as it is). */
export function recordText(id: string, kept: string): string {
  const first = kept.charCodeAt(0);
  return first === COMMA || first === CLOSE ? ID_PREFIX + id + '"' + kept : kept;
}

/**
 * A record's stored text (kept or whole: keptText) read back as the object it was written from: the
 * one place the tables turn JSON text into a record, so the one assertion of it. Every text they
 * hold is JSON.stringify of an object (validateChanges refuses anything else; recovery loads only objects).
 */
function parseRecord(id: string, text: string): object {
  return JSON.parse(recordText(id, text)) as object;
}

/** Throws TypeError unless `changes` is an array of well-formed Change objects. */
export function validateChanges(changes: unknown): asserts changes is Change<AnyTables>[] {
  if (!Array.isArray(changes)) throw new TypeError('commit: changes must be an array');
  changes.forEach((c: unknown, i) => {
    if (c === null || typeof c !== 'object') throw new TypeError(`commit: change ${i} is not an object`);
    const { table, id, value }: Record<string, unknown> = recordOr(c) ?? {}; // an array: no table name
    if (typeof table !== 'string' || table === '') throw new TypeError(`commit: change ${i} has no table name`);
    if (typeof id !== 'string' || id === '') throw new TypeError(`commit: change ${i} has no id`);
    if (value !== null && typeof value !== 'object') {
      throw new TypeError(`commit: change ${i} value must be an object or null`);
    }
  });
}

/** Throws TypeError unless a findPage's limit is a whole number of 1 or more. */
export function checkPageQuery(page: PageQuery): void {
  if (!Number.isInteger(page.limit) || page.limit < 1)
    throw new TypeError('store.findPage: limit must be a whole number of 1 or more');
}

/** What one commit replaced: each changed record's previous JSON (undefined: there was none), and its changes. */
export interface CommitUndo {
  seq: number;
  prev: { table: string; id: string; json: string | undefined }[];
  changes: readonly JsonChange[];
}

/** A change ready for memory: the record as JSON (null: delete) and, if at hand, as an object (for the indexes). */
export interface JsonChange {
  table: string;
  id: string;
  json: string | null;
  value?: object | null;
}

/** Serialise a commit's values (throws on a value JSON cannot hold: a BigInt, a cycle). */
export function toJsonChanges(changes: readonly Change<AnyTables>[]): JsonChange[] {
  return changes.map(({ table, id, value }) => ({
    table,
    id,
    json: value === null ? null : JSON.stringify(value),
    value,
  }));
}

/** The indexes of one table: per field (in INDEXED_FIELDS order), key → ids (index-buckets.ts). */
type TableIndex = Map<string, Bucket>[];

/** Each table's ids and record handles at one instant, and a reader of their texts (what a compaction writes). */
export interface TablesCopy {
  tables: Map<string, { ids: string[]; handles: number[] }>;
  texts: ArenaReader;
}

export class Tables {
  /** Per table, id → the handle of its text (as kept: keptText) in #arena. */
  readonly #tables = new Map<string, Map<string, number>>();
  readonly #arena: TextArena;
  /** Only for tables that have indexed fields. */
  readonly #indexes = new Map<string, TableIndex>();
  /** For findPage: sorted lists per table, made at the first page asked (ordered.ts). */
  readonly #ordered = new Map<string, OrderedLists>();

  /** The records a table holds before the texts written to it have their keys coded. */
  readonly #codedFrom: number;

  /**
   * `sweepAfterBytes`: the freed text that may be held before a sweep (text-arena.ts); `codedFrom`:
   * the records a table holds before its texts' keys are coded (CODED_FROM). Tests make them small.
   */
  constructor(opts?: { sweepAfterBytes?: number; codedFrom?: number }) {
    this.#arena = new TextArena({ minGarbage: opts?.sweepAfterBytes });
    this.#codedFrom = opts?.codedFrom ?? CODED_FROM;
  }

  /**
   * The stored text (its handle) each record handed out was parsed from. A commit's expectation is
   * usually a record the caller read: if the record's handle is still the one it came from, the
   * record is unchanged (a handle names one text for good: text-arena.ts), with no JSON.stringify of
   * the expected value (measured: a third of a token exchange's store time).
   */
  readonly #sources = new WeakMap<object, number>();

  /** A fresh parse of the record whose text is at `handle`. */
  #read(id: string, handle: number): object {
    const o = parseRecord(id, this.#arena.text(handle));
    this.#sources.set(o, handle);
    return o;
  }

  /** Whether `record` was read from the text `table`/`id` holds now (a record read and not changed since). */
  isSource(record: object, table: string, id: string): boolean {
    const handle = this.#sources.get(record);
    return handle !== undefined && handle === this.#tables.get(table)?.get(id);
  }

  /**
   * Shared reads (ReadOptions.shared). A record's first shared read only notes its text (a code
   * read to be exchanged is never read again); a second one of the same text keeps its frozen parse
   * until the record is written. The parses kept are bounded by their text, the notes by their
   * number; either starts again when full.
   */
  readonly #noted = new Map<string, Map<string, number>>();
  #notes = 0;
  readonly #parsed = new Map<string, Map<string, { handle: number; record: object; bytes: number }>>();
  #parsedBytes = 0;

  #readShared(table: string, id: string, handle: number): object {
    const kept = this.#parsed.get(table)?.get(id);
    if (kept && kept.handle === handle) return kept.record;
    const record = deepFreeze(parseRecord(id, this.#arena.text(handle)));
    this.#sources.set(record, handle);
    let noted = this.#noted.get(table);
    if (noted?.get(id) === handle) {
      // read again unchanged: worth keeping parsed
      const bytes = this.#arena.byteLength(handle);
      if (this.#parsedBytes + bytes > SHARED_BYTES) {
        this.#parsed.clear();
        this.#parsedBytes = 0;
      }
      let t = this.#parsed.get(table);
      if (!t) this.#parsed.set(table, (t = new Map()));
      const before = t.get(id);
      if (before) this.#parsedBytes -= before.bytes;
      t.set(id, { handle, record, bytes });
      this.#parsedBytes += bytes;
      return record;
    }
    if (this.#notes >= SHARED_NOTES) {
      this.#noted.clear();
      this.#notes = 0;
      noted = undefined;
    }
    if (!noted) this.#noted.set(table, (noted = new Map()));
    if (!noted.has(id)) this.#notes++;
    noted.set(id, handle);
    return record;
  }

  /**
   * A record written: what the shared reads noted or kept of its old text goes (it would only be
   * found stale). A code read to be exchanged is consumed at once; its old text stayed noted until
   * the notes filled up: some 40 MB of the token benchmark's heap.
   */
  #forgetShared(table: string, id: string): void {
    const noted = this.#noted.get(table);
    if (noted?.delete(id)) this.#notes--;
    const parsed = this.#parsed.get(table);
    const kept = parsed?.get(id);
    if (kept) {
      must(parsed).delete(id);
      this.#parsedBytes -= kept.bytes;
    }
  }

  /** A record's text as kept (keptText: recordText gives its JSON), or undefined when there is none. */
  getJson(table: string, id: string): string | undefined {
    const h = this.#tables.get(table)?.get(id);
    return h === undefined ? undefined : this.#arena.text(h);
  }

  /**
   * A read of a record's `text`, kept or whole, not from memory (the durable text of a record a
   * pending commit replaced): a fresh parse, frozen when `shared`.
   */
  parse(id: string, text: string, shared?: boolean): object {
    const o = parseRecord(id, text);
    return shared ? deepFreeze(o) : o;
  }

  /** The ids `find(table, field, value)` reads (its index bucket); undefined when there are none. */
  idsWhere(table: string, field: string, value: string): readonly string[] | ReadonlySet<string> | undefined {
    const bucket = this.#bucket(table, field, value);
    return bucket === undefined ? undefined : idsOf(bucket);
  }

  #bucket(table: string, field: string, value: string): Bucket | undefined {
    assertIndexed(table, field);
    return this.#indexes.get(table)?.[must(INDEXED_FIELDS[table]).indexOf(field)]?.get(value);
  }

  get(table: string, id: string): object | undefined {
    const h = this.#tables.get(table)?.get(id);
    return h === undefined ? undefined : this.#read(id, h);
  }

  /** get, or with `shared` as getMany's shared reads. */
  read(table: string, id: string, shared?: boolean): object | undefined {
    const h = this.#tables.get(table)?.get(id);
    if (h === undefined) return undefined;
    return shared ? this.#readShared(table, id, h) : this.#read(id, h);
  }

  /** Whether `table` holds a record `id`. */
  has(table: string, id: string): boolean {
    return this.#tables.get(table)?.has(id) ?? false;
  }

  /** Store.getMany: in the order asked; an idFrom key reads the id from the answer of its earlier key. */
  getMany(keys: readonly RecordKey<AnyTables>[], opts?: ReadOptions): (object | undefined)[] {
    checkRecordKeys(keys);
    const out: (object | undefined)[] = [];
    for (const k of keys) {
      const id = keyId(k, out);
      const h = id === undefined ? undefined : this.#tables.get(k.table)?.get(id);
      if (id === undefined || h === undefined) out.push(undefined);
      else out.push(opts?.shared ? this.#readShared(k.table, id, h) : this.#read(id, h));
    }
    return out;
  }

  find(table: string, field: string, value: string): object[] {
    const ids = this.idsWhere(table, field, value);
    if (!ids) return [];
    const t = must(this.#tables.get(table));
    const out: object[] = [];
    for (const id of ids) out.push(this.#read(id, must(t.get(id))));
    return out;
  }

  /** The number of records `find` would return. */
  countWhere(table: string, field: string, value: string): number {
    const bucket = this.#bucket(table, field, value);
    return bucket === undefined ? 0 : sizeOf(bucket);
  }

  /** One page of `find(table, field, value)` in order of `page.orderBy`, then id (see Store.findPage). */
  findPage(table: string, field: string, value: string, page: PageQuery): object[] {
    checkPageQuery(page);
    const ids = this.idsWhere(table, field, value);
    if (!ids) return [];
    const t = must(this.#tables.get(table));
    let ordered = this.#ordered.get(table);
    if (!ordered) this.#ordered.set(table, (ordered = new OrderedLists()));
    const arena = this.#arena;
    const list = ordered.list(page.orderBy, field, value, function* () {
      for (const id of ids) yield [id, parseRecord(id, arena.text(must(t.get(id))))];
    });
    const after = page.after && { k: page.after.value, id: page.after.id };
    return pageOf(list, !!page.desc, page.limit, after).map((p) => this.#read(p.id, must(t.get(p.id))));
  }

  all(table: string): object[] {
    const out: object[] = [];
    this.#tables.get(table)?.forEach((h, id) => void out.push(this.#read(id, h)));
    return out;
  }

  /**
   * Each record of a table (but those whose id `skip` has), parsed one at a time (each one garbage
   * once visited), until `visit` returns true; whether it did.
   */
  scan(table: string, visit: (record: object) => boolean | void, skip?: ReadonlyMap<string, unknown>): boolean {
    const t = this.#tables.get(table);
    if (t) for (const [id, h] of t) if (!skip?.has(id) && visit(this.#read(id, h)) === true) return true;
    return false;
  }

  /** A table's entries (id, text as kept: recordText gives the JSON), for scans that parse what they need. */
  *entries(table: string): Generator<[string, string]> {
    const t = this.#tables.get(table);
    if (t) for (const [id, h] of t) yield [id, this.#arena.text(h)];
  }

  count(table: string): number {
    return this.#tables.get(table)?.size ?? 0;
  }

  apply(changes: readonly JsonChange[]): void {
    for (const c of changes) this.#set(c.table, c.id, c.json, c.value);
    if (this.#arena.wantsSweep) this.#sweep();
  }

  /** Apply `changes`, returning what undoes them (see restore). */
  applyWithUndo(seq: number, changes: readonly JsonChange[]): CommitUndo {
    const prev = changes.map(({ table, id }) => ({ table, id, json: this.getJson(table, id) }));
    this.apply(changes);
    return { seq, prev, changes };
  }

  /** Undo one commit (what applyWithUndo returned); undo several newest first. */
  restore(undo: CommitUndo): void {
    for (let j = undo.prev.length - 1; j >= 0; j--) {
      const { table, id, json } = must(undo.prev[j]);
      this.#set(table, id, json ?? null);
    }
  }

  /** Load one record (recovery); `value` is its parse when the caller has it. */
  load(table: string, id: string, json: string, value?: object): void {
    this.#set(table, id, json, value);
    if (this.#arena.wantsSweep) this.#sweep();
  }

  /**
   * Each table's ids and text handles at this instant, as two arrays of exactly its size, and a
   * reader of the texts that keeps them readable whatever is written after: what a compaction
   * writes (snapshot.ts).
   */
  copyEntries(): TablesCopy {
    const tables = new Map<string, { ids: string[]; handles: number[] }>();
    for (const [name, t] of this.#tables) tables.set(name, { ids: [...t.keys()], handles: [...t.values()] });
    return { tables, texts: this.#arena.reader() };
  }

  /** What the record texts hold outside the heap (text-arena.ts). */
  textStats(): ReturnType<TextArena['stats']> {
    return this.#arena.stats();
  }

  /** `json`: the record's text, whole or as kept (a rollback restores kept texts); null: delete. */
  #set(table: string, id: string, json: string | null, value?: object | null): void {
    const fields = INDEXED_FIELDS[table];
    let t = this.#tables.get(table);
    const old = t?.get(id);
    if (fields?.length) {
      // The old record's keys come from a parse of it: only when a record is replaced or deleted
      // (inserts, the hot path, parse nothing). Keeping each record's keys beside it would cost
      // ~30 MB on the token benchmark's data set.
      const ix = this.#indexes.get(table) ?? this.#newIndex(table, fields);
      const known = old !== undefined ? this.#parsed.get(table)?.get(id) : undefined;
      const before =
        old !== undefined ? (known?.handle === old ? known.record : parseRecord(id, this.#arena.text(old))) : undefined;
      const after = json !== null ? (value ?? parseRecord(id, json)) : undefined;
      if (before) this.#unindex(ix, fields, id, before);
      if (after) this.#index(ix, fields, id, after);
      this.#ordered.get(table)?.change(id, before, after);
    }
    if (old !== undefined) {
      this.#forgetShared(table, id);
      this.#arena.free(old);
    }
    if (json === null) {
      if (t) {
        t.delete(id);
        if (t.size === 0) this.#tables.delete(table);
      }
      return;
    }
    if (!t) this.#tables.set(table, (t = new Map()));
    const start = keptStart(id, json);
    const kept = start === 0 ? json : json.slice(start);
    t.set(id, t.size >= this.#codedFrom ? this.#arena.putCoded(kept) : this.#arena.put(kept));
  }

  /**
   * The texts of slabs mostly freed are copied to the arena's end and those slabs let go (text-arena.ts):
   * one pass over every table's handles. A record moved keeps its text, under a new handle.
   */
  #sweep(): void {
    const arena = this.#arena;
    const slabs = arena.sweepable();
    if (slabs.size)
      for (const t of this.#tables.values())
        t.forEach((h, id) => {
          if (TextArena.within(slabs, h)) t.set(id, arena.move(h));
        });
    arena.swept(slabs);
  }

  #newIndex(table: string, fields: readonly string[]): TableIndex {
    const ix = fields.map(() => new Map<string, Bucket>());
    this.#indexes.set(table, ix);
    return ix;
  }

  #index(ix: TableIndex, fields: readonly string[], id: string, rec: object): void {
    for (let i = 0; i < fields.length; i++) {
      const k = indexKey(rec, must(fields[i]));
      if (k === undefined) continue;
      const idx = must(ix[i]);
      const ids = idx.get(k);
      const next = withId(ids, id);
      if (next !== ids) idx.set(k, next);
    }
  }

  #unindex(ix: TableIndex, fields: readonly string[], id: string, rec: object): void {
    for (let i = 0; i < fields.length; i++) {
      const k = indexKey(rec, must(fields[i]));
      if (k === undefined) continue;
      const idx = must(ix[i]);
      const ids = idx.get(k);
      if (ids === undefined) continue;
      const next = withoutId(ids, id);
      if (next === undefined) idx.delete(k);
      else if (next !== ids) idx.set(k, next);
    }
  }
}
