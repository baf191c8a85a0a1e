/**
 * The data file (appreg.json), the store of record: reading and checking it at open, and
 * writing a snapshot of memory into it at compaction and close.
 *
 * Format 2 is still one JSON document (`{formatVersion, journalSeq, tables}`, readable by any
 * JSON tool) laid out one record per line (format.ts), so that both ways stay lean:
 *  - writing streams table by table, record by record, into a temp file (awaiting each chunk:
 *    back-pressure), instead of building the whole document as one string;
 *  - reading goes line by line and keeps each record as its JSON string, instead of parsing the
 *    whole document into objects. A file not in that layout (format 1, written by lowdb, or a
 *    format-2 file reformatted by hand) is read whole as JSON, as before.
 */
import { constants as fsc } from 'node:fs';
import { chmod, open, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { DATA_FILE, DATA_FORMAT_VERSION, isPlainObject, isSeq } from './format.js';
import { fileChunks } from './file-chunks.js';
import { fsyncPath } from './fsync.js';
import { FileSink } from './file-sink.js';
import type { TableSnapshot } from './snapshot.js';
import { Tables } from './tables.js';
import { StoreCorruptError } from './types.js';
import { errnoOf } from '../unknown-values.js';

/** The data file as read: its journalSeq and its records, loaded into memory. */
export interface DataFileContent {
  journalSeq: number;
  tables: Tables;
}

/** Parse and check appreg.json; null if it does not exist. Never writes. */
export async function readDataFile(file: string): Promise<DataFileContent | null> {
  try {
    await stat(file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
  return (await readByLines(file).catch(() => null)) ?? readWhole(file);
}

/** Why a file is not in the line layout (then it is read whole, which names any damage). */
class NotLineLayout extends Error {}

const HEADER_RE = /^\{"formatVersion":([1-9][0-9]{0,8}),"journalSeq":(0|[1-9][0-9]{0,15}),"tables":\{$/;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Split `buf[a, b)` = `[,]"key":rest` into the key and where rest starts. */
function splitKey(buf: Buffer, a: number, b: number): { key: string; rest: number } {
  let p = a;
  if (buf[p] === COMMA) p++;
  if (buf[p] !== QUOTE) throw new NotLineLayout();
  let j = p + 1;
  while (j < b && buf[j] !== QUOTE) j += buf[j] === BACKSLASH ? 2 : 1;
  if (j >= b || buf[j + 1] !== COLON) throw new NotLineLayout();
  const key: unknown = JSON.parse(buf.toString('utf8', p, j + 1));
  if (typeof key !== 'string') throw new NotLineLayout();
  return { key, rest: j + 2 };
}

/** The fast path: the line layout format 2 writes. Throws (anything) when the file is not in it. */
async function readByLines(file: string): Promise<DataFileContent> {
  const tables = new Tables();
  let journalSeq = -1;
  let table: string | null = null;
  let done = false;
  const onLine = (buf: Buffer, a: number, b: number): void => {
    if (done) {
      if (buf.toString('utf8', a, b).trim() !== '') throw new NotLineLayout();
      return;
    }
    if (journalSeq < 0) {
      const m = HEADER_RE.exec(buf.toString('utf8', a, b));
      if (!m || Number(m[1]) > DATA_FORMAT_VERSION) throw new NotLineLayout();
      journalSeq = Number(m[2]);
      return;
    }
    if (table === null) {
      if (b - a === 2 && buf[a] === 0x7d && buf[a + 1] === 0x7d) return void (done = true); // "}}"
      const { key, rest } = splitKey(buf, a, b);
      if (b - rest !== 1 || buf[rest] !== 0x7b) throw new NotLineLayout(); // "{"
      table = key;
      return;
    }
    if (b - a === 1 && buf[a] === 0x7d) return void (table = null); // "}"
    const { key, rest } = splitKey(buf, a, b);
    // A fresh string decoded from the bytes (not a slice of a bigger one that it would keep alive).
    const json = buf.toString('utf8', rest, b);
    const rec: unknown = JSON.parse(json);
    if (rec === null || typeof rec !== 'object') throw new NotLineLayout();
    tables.load(table, key, json, rec);
  };
  let carry: Buffer | null = null;
  for await (const chunk of fileChunks(file)) {
    let buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    let pos = 0;
    for (let nl = buf.indexOf(0x0a, pos); nl !== -1; nl = buf.indexOf(0x0a, pos)) {
      onLine(buf, pos, nl);
      pos = nl + 1;
    }
    carry = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
    buf = Buffer.alloc(0);
  }
  if (carry) onLine(carry, 0, carry.length);
  if (!done) throw new NotLineLayout();
  return { journalSeq, tables };
}

/** Any JSON layout (format 1 as lowdb wrote it): parsed whole and checked, as before format 2. */
async function readWhole(file: string): Promise<DataFileContent> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    if (err instanceof SyntaxError) throw new StoreCorruptError(file, `not valid JSON (${err.message})`);
    if (errnoOf(err) === 'EISDIR') throw new StoreCorruptError(file, 'is a directory');
    throw err;
  }
  if (!isPlainObject(raw)) throw new StoreCorruptError(file, 'top level is not an object');
  const { formatVersion, journalSeq } = raw;
  if (typeof formatVersion !== 'number' || !Number.isSafeInteger(formatVersion) || formatVersion < 1) {
    throw new StoreCorruptError(file, 'formatVersion is missing or not a positive integer');
  }
  if (formatVersion > DATA_FORMAT_VERSION) {
    throw new StoreCorruptError(
      file,
      `formatVersion ${formatVersion} is newer than the supported ${DATA_FORMAT_VERSION}`,
    );
  }
  if (!isSeq(journalSeq)) throw new StoreCorruptError(file, 'journalSeq is missing or not a non-negative integer');
  const all = raw.tables;
  if (!isPlainObject(all)) throw new StoreCorruptError(file, 'tables is not an object');
  raw = null;
  for (const [name, records] of Object.entries(all)) {
    if (!isPlainObject(records)) throw new StoreCorruptError(file, `table ${JSON.stringify(name)} is not an object`);
    for (const [id, rec] of Object.entries(records)) {
      if (rec === null || typeof rec !== 'object') {
        throw new StoreCorruptError(file, `record ${JSON.stringify(name)}/${JSON.stringify(id)} is not an object`);
      }
    }
  }
  const tables = new Tables();
  for (const name of Object.keys(all)) {
    const records = all[name];
    // each checked above: a table is an object whose records are objects
    if (isPlainObject(records))
      for (const [id, rec] of Object.entries(records))
        if (rec !== null && typeof rec === 'object') tables.load(name, id, JSON.stringify(rec), rec);
    all[name] = null; // let this table's objects go before the next one is converted
  }
  return { journalSeq, tables };
}

/** What a snapshot holds, taken at one instant. */
export interface SnapshotContent {
  /** The last seq applied to memory: every seq <= it is in `tables`. */
  seq: number;
  tables: TableSnapshot;
}

/** Writes snapshots of memory as appreg.json (temp file + rename), 0600, fsynced. */
export class SnapshotWriter {
  readonly #dir: string;
  readonly #file: string;
  readonly #tempFile: string;
  /** journalSeq of the document on disk. */
  seq: number;
  /** Size of the document on disk (0 before the first one). */
  bytes: number;
  /** Whether appreg.json exists. */
  exists: boolean;

  /** The size of the buffer a snapshot is written through. */
  readonly #bufferBytes: number;

  constructor(dir: string, onDisk: { seq: number; bytes: number; exists: boolean }, bufferBytes = 1 << 20) {
    this.#bufferBytes = bufferBytes;
    this.#dir = dir;
    this.#file = path.join(dir, DATA_FILE);
    this.#tempFile = path.join(dir, `.${DATA_FILE}.tmp`);
    this.seq = onDisk.seq;
    this.bytes = onDisk.bytes;
    this.exists = onDisk.exists;
  }

  /**
   * Write memory as the data file; returns once it and the directory are fsynced.
   * `capture` is called once, synchronously at the instant the content is taken.
   */
  async write(capture: () => SnapshotContent): Promise<void> {
    // 0600 before any data goes in (an existing temp file keeps its mode on truncate).
    const h = await open(this.#tempFile, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC | fsc.O_NOFOLLOW, 0o600);
    let bytes = 0;
    let seq: number;
    let snap: SnapshotContent | undefined;
    try {
      await h.chmod(0o600);
      snap = capture();
      seq = snap.seq;
      const out = new FileSink(h, this.#bufferBytes);
      await out.putAny(`{"formatVersion":${DATA_FORMAT_VERSION},"journalSeq":${seq},"tables":{\n`);
      let firstTable = true;
      for (const name of snap.tables.names()) {
        let first = true;
        for (const [id, json] of snap.tables.records(name)) {
          if (first) await out.putAny(`${firstTable ? '' : ','}${JSON.stringify(name)}:{\n`);
          const key = JSON.stringify(id);
          // `,"<id>":<record>\n`, straight into the sink's buffer (a record larger than it goes on its own)
          if (!out.fits(key.length + json.length + 3)) await out.flush();
          if (out.fits(key.length + json.length + 3)) {
            out.put(first ? `${key}:` : `,${key}:`);
            out.put(json);
            out.put('\n');
          } else await out.putAny(`${first ? '' : ','}${key}:${json}\n`);
          first = false;
          firstTable = false;
        }
        if (!first) await out.putAny('}\n');
      }
      await out.putAny('}}\n');
      await out.flush();
      bytes = out.bytes;
      await h.sync();
    } finally {
      snap?.tables.release();
      await h.close();
    }
    await rename(this.#tempFile, this.#file);
    await chmod(this.#file, 0o600);
    await fsyncPath(this.#dir);
    this.exists = true;
    this.seq = seq;
    this.bytes = bytes;
  }
}
