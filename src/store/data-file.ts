/**
 * The lowdb document (appreg.json), the store of record: reading and checking it
 * at open, and writing a snapshot of memory into it at compaction and close.
 */
import { constants as fsc } from 'node:fs';
import { chmod, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { DATA_FILE, isPlainObject, isSeq, type DataDoc } from './format.js';
import { fsyncPath } from './fsync.js';
import type { TableSnapshot } from './tables.js';
import { FORMAT_VERSION, StoreCorruptError } from './types.js';

/** Parse and check appreg.json; null if it does not exist. Never writes. */
export async function readDataFile(file: string): Promise<DataDoc | null> {
  try {
    await stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let raw: unknown;
  try {
    raw = await new JSONFile<unknown>(file).read();
  } catch (err) {
    if (err instanceof SyntaxError) throw new StoreCorruptError(file, `not valid JSON (${err.message})`);
    if ((err as NodeJS.ErrnoException).code === 'EISDIR') throw new StoreCorruptError(file, 'is a directory');
    throw err;
  }
  if (!isPlainObject(raw)) throw new StoreCorruptError(file, 'top level is not an object');
  const { formatVersion, journalSeq, tables } = raw;
  if (!Number.isSafeInteger(formatVersion) || (formatVersion as number) < 1) {
    throw new StoreCorruptError(file, 'formatVersion is missing or not a positive integer');
  }
  if ((formatVersion as number) > FORMAT_VERSION) {
    throw new StoreCorruptError(file, `formatVersion ${formatVersion} is newer than the supported ${FORMAT_VERSION}`);
  }
  if (!isSeq(journalSeq)) throw new StoreCorruptError(file, 'journalSeq is missing or not a non-negative integer');
  if (!isPlainObject(tables)) throw new StoreCorruptError(file, 'tables is not an object');
  for (const [name, records] of Object.entries(tables)) {
    if (!isPlainObject(records)) throw new StoreCorruptError(file, `table ${JSON.stringify(name)} is not an object`);
    for (const [id, rec] of Object.entries(records)) {
      if (rec === null || typeof rec !== 'object') {
        throw new StoreCorruptError(file, `record ${JSON.stringify(name)}/${JSON.stringify(id)} is not an object`);
      }
    }
  }
  return { formatVersion: formatVersion as number, journalSeq, tables: tables as TableSnapshot };
}

/** What a snapshot holds, taken at one instant. */
export interface SnapshotContent {
  /** The last seq applied to memory: every seq <= it is in `tables`. */
  seq: number;
  tables: TableSnapshot;
}

/** Writes snapshots of memory as appreg.json (lowdb: temp file + rename), 0600, fsynced. */
export class SnapshotWriter {
  readonly #dir: string;
  readonly #file: string;
  readonly #tempFile: string;
  readonly #db: Low<DataDoc>;
  /** journalSeq of the document on disk. */
  seq: number;
  /** Size of the document on disk (0 before the first one). */
  bytes: number;
  /** Whether appreg.json exists. */
  exists: boolean;

  constructor(dir: string, onDisk: { seq: number; bytes: number; exists: boolean }) {
    this.#dir = dir;
    this.#file = path.join(dir, DATA_FILE);
    this.#tempFile = path.join(dir, `.${DATA_FILE}.tmp`); // steno's temp name
    this.seq = onDisk.seq;
    this.bytes = onDisk.bytes;
    this.exists = onDisk.exists;
    this.#db = new Low<DataDoc>(new JSONFile<DataDoc>(this.#file), {
      formatVersion: FORMAT_VERSION,
      journalSeq: onDisk.seq,
      tables: Object.create(null),
    });
  }

  /**
   * Write memory as the lowdb document; returns once it and the directory are fsynced.
   * `capture` is called once, synchronously at the instant the content is taken.
   */
  async write(capture: () => SnapshotContent): Promise<void> {
    // steno writes into this temp file and renames it over appreg.json; make it
    // 0600 before any data goes in (an existing file keeps its mode on truncate).
    const t = await open(this.#tempFile, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o600);
    try {
      await t.chmod(0o600);
    } finally {
      await t.close();
    }
    const { seq, tables } = capture();
    this.#db.data = { formatVersion: FORMAT_VERSION, journalSeq: seq, tables };
    await this.#db.write();
    this.#db.data = { formatVersion: FORMAT_VERSION, journalSeq: seq, tables: Object.create(null) }; // drop references
    await chmod(this.#file, 0o600);
    await fsyncPath(this.#file);
    await fsyncPath(this.#dir);
    this.exists = true;
    this.seq = seq;
    this.bytes = (await stat(this.#file)).size;
  }
}
