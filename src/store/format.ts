/**
 * The on-disk format of the durable store: the names of its files and the shapes
 * of the data file and of a journal line. Nothing here touches the disk.
 *
 *  - appreg.json: one JSON document `{ formatVersion, journalSeq, tables: {table: {id: record}} }`.
 *    Format 2 lays it out one line per record, so that it is written and read as a stream
 *    (data-file.ts):
 *        {"formatVersion":2,"journalSeq":<n>,"tables":{
 *        "<table>":{
 *        "<id>":<record>
 *        ,"<id>":<record>
 *        }
 *        ,"<table>":{
 *        ...
 *        }
 *        }}
 *    Format 1 (lowdb's indented JSON) still opens; the next compaction rewrites it as format 2.
 *  - appreg.journal.<n>: one JSON line `{ seq, changes }` per commit.
 */
import path from 'node:path';
import type { AnyTables, Change } from './types.js';

export const DATA_FILE = 'appreg.json';
/** The data file format written; every format up to it is read. */
export const DATA_FORMAT_VERSION = 2;
/**
 * What the rest of the daemon keeps in the data directory once it has recorded anything
 * (credentials.json is written after the first commit, deliveries/ holds the delivery log).
 * Either one without a data file or journal entries means the data file was lost.
 */
export const STATE_ENTRIES: readonly string[] = ['credentials.json', 'deliveries'];
const JOURNAL_PREFIX = 'appreg.journal.';
/** Matches a journal file name; group 1 is its number. */
export const JOURNAL_RE = /^appreg\.journal\.([1-9][0-9]{0,15})$/;
export const journalPath = (dir: string, n: number): string => path.join(dir, JOURNAL_PREFIX + n);

/** One journal line. */
export interface JournalEntry {
  seq: number;
  changes: Change<AnyTables>[];
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

export const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
