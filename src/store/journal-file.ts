/**
 * One journal file (appreg.journal.<n>): each line is a `{ seq, changes }` entry.
 * Only the very end of the last journal may hold a torn line, left by a write
 * that a crash interrupted.
 */
import { readFile, type FileHandle } from 'node:fs/promises';
import { isPlainObject, isSeq, journalPath, type JournalEntry } from './format.js';
import { openForAppend } from './fsync.js';
import { validateChanges } from './tables.js';
import { StoreCorruptError } from './types.js';

/** A journal entry, or why the line is not one. */
function parseJournalLine(text: string): JournalEntry | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return `not valid JSON (${(err as Error).message})`;
  }
  if (!isPlainObject(v) || !isSeq(v.seq) || v.seq < 1 || !Array.isArray(v.changes)) return 'not a {seq, changes} entry';
  try {
    validateChanges(v.changes);
  } catch (err) {
    return (err as Error).message;
  }
  return { seq: v.seq, changes: v.changes };
}

export interface JournalScan {
  num: number;
  file: string;
  entries: JournalEntry[];
  /** Bytes of the file that hold complete, valid lines. */
  goodBytes: number;
  size: number;
}

/** Read one journal; `last` allows a torn/unparsable final line. Never writes. */
export async function scanJournal(file: string, num: number, last: boolean): Promise<JournalScan> {
  const buf = await readFile(file);
  const entries: JournalEntry[] = [];
  let pos = 0;
  let lineNo = 0;
  while (pos < buf.length) {
    lineNo++;
    const nl = buf.indexOf(0x0a, pos);
    const isFinal = nl === -1 || nl === buf.length - 1;
    if (nl === -1) {
      // No newline: a write that did not finish. Only acceptable at the very end.
      if (last) break;
      throw new StoreCorruptError(file, `line ${lineNo} is incomplete (no newline) and is not the last line of the last journal`);
    }
    const parsed = parseJournalLine(buf.toString('utf8', pos, nl));
    if (typeof parsed === 'string') {
      if (last && isFinal) break;
      throw new StoreCorruptError(file, `line ${lineNo}: ${parsed}`);
    }
    entries.push(parsed);
    pos = nl + 1;
  }
  return { num, file, entries, goodBytes: pos, size: buf.length };
}

/** Open journal n of a directory for appending (created 0600 if needed). */
export const openJournal = (dir: string, n: number): Promise<FileHandle> => openForAppend(journalPath(dir, n));
