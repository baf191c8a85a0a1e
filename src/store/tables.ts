/**
 * The in-memory table set shared by the embedded store and the memory store, plus validation of a
 * commit's changes.
 *
 * Each record is kept as its JSON string, not as an object: a one-byte string costs about a
 * third of the object graph it encodes (420,000 records: ~200 MB less), and reads must return
 * copies anyway, which JSON.parse makes. The string is kept without the record's leading id when
 * it has one (keptText): the table's key holds it already. Journal lines and the data file are
 * built by concatenating record texts. Each field of INDEXED_FIELDS has an index (key → ids) kept in
 * step by every change: commits, rollbacks and recovery all go through #set.
 */
import { INDEXED_FIELDS, assertIndexed, indexKey } from './indexes.js';
import { OrderedLists, pageOf } from './ordered.js';
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

/** Text the shared reads keep parsed at most (characters): about 4,000 app records of 2.5 KB, some 30 MB of objects. */
const SHARED_CHARS = 10_000_000;
/** Records whose first shared read is noted (a reference to the stored text each), at most. */
const SHARED_NOTES = 100_000;

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
  const end = ID_PREFIX.length + id.length;
  if (json.startsWith(ID_PREFIX) && json.startsWith(id, ID_PREFIX.length) && json.charCodeAt(end) === QUOTE) {
    const next = json.charCodeAt(end + 1);
    if (next === COMMA || next === CLOSE) return copyFrom(json, end + 1);
  }
  return flat(json);
}

/** The JSON text of the record kept as `kept` under `id` (keptText's inverse; a whole text is given as it is). */
export function recordText(id: string, kept: string): string {
  const first = kept.charCodeAt(0);
  return first === COMMA || first === CLOSE ? ID_PREFIX + id + '"' + kept : kept;
}

/**
 * `s` as one flat string. JSON.stringify answers with a tree of concatenated parts (chunks of 32,
 * 64, 128… characters), which costs some 150 bytes more than the text's own for a 500-byte record
 * (measured: 649 against 497 bytes held each); reading a character of a concatenation makes V8
 * copy it into one string in its place, and the collector then drops the wrapper. A commit's text
 * is flat already (the unstorable-character check reads it); the texts replayed from the journal at
 * open and a claim's leased records were kept as trees (an open after a crash: 393 against 300 MB).
 */
function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}

/**
 * `s` from `start`, as a string of its own: V8 makes a long `slice` a view that keeps the whole
 * string alive (the text with the prefix: no byte saved), a flat concatenation is a copy of the part.
 */
function copyFrom(s: string, start: number): string {
  if (s.length - start < 2) return s.slice(start);
  return flat(s.charAt(start) + s.slice(start + 1));
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

/** The indexes of one table: per field (in INDEXED_FIELDS order), key → ids. */
type TableIndex = Map<string, Set<string>>[];

export class Tables {
  readonly #tables = new Map<string, Map<string, string>>();
  /** Only for tables that have indexed fields. */
  readonly #indexes = new Map<string, TableIndex>();
  /** For findPage: sorted lists per table, made at the first page asked (ordered.ts). */
  readonly #ordered = new Map<string, OrderedLists>();

  /**
   * The stored text each record handed out was parsed from. A commit's expectation is usually a record
   * the caller read: if the stored text is still the very string it came from, the record is unchanged,
   * with no JSON.stringify of the expected value (measured: a third of a token exchange's store time).
   */
  readonly #sources = new WeakMap<object, string>();

  /** A fresh parse of the record kept as `kept` under `id`. */
  #read(id: string, kept: string): object {
    const o = parseRecord(id, kept);
    this.#sources.set(o, kept);
    return o;
  }

  /** The stored text (as kept: keptText) `record` was read from, when it came from this store. */
  sourceOf(record: object): string | undefined {
    return this.#sources.get(record);
  }

  /**
   * Shared reads (ReadOptions.shared). A record's first shared read only notes its text (a code
   * read to be exchanged is never read again); a second one of the same text keeps its frozen parse
   * until the record is written. The parses kept are bounded by their text, the notes by their
   * number; either starts again when full.
   */
  readonly #noted = new Map<string, Map<string, string>>();
  #notes = 0;
  readonly #parsed = new Map<string, Map<string, { text: string; record: object }>>();
  #parsedChars = 0;

  #readShared(table: string, id: string, text: string): object {
    const kept = this.#parsed.get(table)?.get(id);
    if (kept && kept.text === text) return kept.record;
    const record = deepFreeze(parseRecord(id, text));
    this.#sources.set(record, text);
    let noted = this.#noted.get(table);
    if (noted?.get(id) === text) {
      // read again unchanged: worth keeping parsed
      if (this.#parsedChars + text.length > SHARED_CHARS) {
        this.#parsed.clear();
        this.#parsedChars = 0;
      }
      let t = this.#parsed.get(table);
      if (!t) this.#parsed.set(table, (t = new Map()));
      const before = t.get(id);
      if (before) this.#parsedChars -= before.text.length;
      t.set(id, { text, record });
      this.#parsedChars += text.length;
      return record;
    }
    if (this.#notes >= SHARED_NOTES) {
      this.#noted.clear();
      this.#notes = 0;
      noted = undefined;
    }
    if (!noted) this.#noted.set(table, (noted = new Map()));
    if (!noted.has(id)) this.#notes++;
    noted.set(id, text);
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
      this.#parsedChars -= kept.text.length;
    }
  }

  /** A record's text as kept (keptText: recordText gives its JSON), or undefined when there is none. */
  getJson(table: string, id: string): string | undefined {
    return this.#tables.get(table)?.get(id);
  }

  /** A read of a record's `text`, kept or whole (a fresh parse, or with `shared` as getMany's shared reads). */
  parse(table: string, id: string, text: string, shared?: boolean): object {
    return shared ? this.#readShared(table, id, text) : this.#read(id, text);
  }

  /** The ids `find(table, field, value)` reads (its index bucket); undefined when there are none. */
  idsWhere(table: string, field: string, value: string): ReadonlySet<string> | undefined {
    assertIndexed(table, field);
    return this.#indexes.get(table)?.[must(INDEXED_FIELDS[table]).indexOf(field)]?.get(value);
  }

  get(table: string, id: string): object | undefined {
    const s = this.#tables.get(table)?.get(id);
    return s === undefined ? undefined : this.#read(id, s);
  }

  /** Store.getMany: in the order asked; an idFrom key reads the id from the answer of its earlier key. */
  getMany(keys: readonly RecordKey<AnyTables>[], opts?: ReadOptions): (object | undefined)[] {
    checkRecordKeys(keys);
    const out: (object | undefined)[] = [];
    for (const k of keys) {
      const id = keyId(k, out);
      const text = id === undefined ? undefined : this.#tables.get(k.table)?.get(id);
      if (id === undefined || text === undefined) out.push(undefined);
      else out.push(opts?.shared ? this.#readShared(k.table, id, text) : this.#read(id, text));
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
    return this.idsWhere(table, field, value)?.size ?? 0;
  }

  /** One page of `find(table, field, value)` in order of `page.orderBy`, then id (see Store.findPage). */
  findPage(table: string, field: string, value: string, page: PageQuery): object[] {
    checkPageQuery(page);
    const ids = this.idsWhere(table, field, value);
    if (!ids) return [];
    const t = must(this.#tables.get(table));
    let ordered = this.#ordered.get(table);
    if (!ordered) this.#ordered.set(table, (ordered = new OrderedLists()));
    const list = ordered.list(page.orderBy, field, value, function* () {
      for (const id of ids) yield [id, parseRecord(id, must(t.get(id)))];
    });
    const after = page.after && { k: page.after.value, id: page.after.id };
    return pageOf(list, !!page.desc, page.limit, after).map((p) => this.#read(p.id, must(t.get(p.id))));
  }

  all(table: string): object[] {
    const t = this.#tables.get(table);
    if (!t) return [];
    const out: object[] = [];
    for (const [id, s] of t) out.push(this.#read(id, s));
    return out;
  }

  /** Each record of a table, parsed one at a time (each one garbage once visited), until `visit` returns true. */
  scan(table: string, visit: (record: object) => boolean | void): void {
    const t = this.#tables.get(table);
    if (!t) return;
    for (const [id, s] of t) if (visit(this.#read(id, s)) === true) return;
  }

  /** A table's raw entries (id, text as kept: recordText gives the JSON), for scans that parse what they need. */
  entries(table: string): IterableIterator<[string, string]> {
    const t = this.#tables.get(table);
    return t ? t.entries() : new Map<string, string>().entries();
  }

  count(table: string): number {
    return this.#tables.get(table)?.size ?? 0;
  }

  apply(changes: readonly JsonChange[]): void {
    for (const c of changes) this.#set(c.table, c.id, c.json, c.value);
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
  }

  /**
   * Each table's ids and record texts (as kept) at this instant, as two arrays of exactly its size (the
   * strings are shared, never mutated): what a compaction writes (snapshot.ts).
   */
  copyEntries(): Map<string, { ids: string[]; texts: string[] }> {
    const out = new Map<string, { ids: string[]; texts: string[] }>();
    for (const [name, t] of this.#tables) out.set(name, { ids: [...t.keys()], texts: [...t.values()] });
    return out;
  }

  /** `json`: the record's text, whole or as kept (a rollback restores kept texts); null: delete. */
  #set(table: string, id: string, json: string | null, value?: object | null): void {
    const fields = INDEXED_FIELDS[table];
    let t = this.#tables.get(table);
    if (fields?.length) {
      // The old record's keys come from a parse of it: only when a record is replaced or deleted
      // (inserts, the hot path, parse nothing). Keeping each record's keys beside it would cost
      // ~30 MB on the token benchmark's data set.
      const old = t?.get(id);
      const ix = this.#indexes.get(table) ?? this.#newIndex(table, fields);
      const known = old !== undefined ? this.#parsed.get(table)?.get(id) : undefined;
      const before = old !== undefined ? (known?.text === old ? known.record : parseRecord(id, old)) : undefined;
      const after = json !== null ? (value ?? parseRecord(id, json)) : undefined;
      if (before) this.#unindex(ix, fields, id, before);
      if (after) this.#index(ix, fields, id, after);
      this.#ordered.get(table)?.change(id, before, after);
    }
    this.#forgetShared(table, id);
    if (json === null) {
      if (t) {
        t.delete(id);
        if (t.size === 0) this.#tables.delete(table);
      }
      return;
    }
    if (!t) this.#tables.set(table, (t = new Map()));
    t.set(id, keptText(id, json));
  }

  #newIndex(table: string, fields: readonly string[]): TableIndex {
    const ix = fields.map(() => new Map<string, Set<string>>());
    this.#indexes.set(table, ix);
    return ix;
  }

  #index(ix: TableIndex, fields: readonly string[], id: string, rec: object): void {
    for (let i = 0; i < fields.length; i++) {
      const k = indexKey(rec, must(fields[i]));
      if (k === undefined) continue;
      const idx = must(ix[i]);
      let ids = idx.get(k);
      if (!ids) idx.set(k, (ids = new Set()));
      ids.add(id);
    }
  }

  #unindex(ix: TableIndex, fields: readonly string[], id: string, rec: object): void {
    for (let i = 0; i < fields.length; i++) {
      const k = indexKey(rec, must(fields[i]));
      if (k === undefined) continue;
      const idx = must(ix[i]);
      const ids = idx.get(k);
      if (!ids) continue;
      ids.delete(id);
      if (ids.size === 0) idx.delete(k);
    }
  }
}
