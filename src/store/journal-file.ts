/**
 * One journal file (appreg.journal.<n>): each line is a `{ seq, changes }` entry.
 * Only the very end of the last journal may hold a torn line, left by a write
 * that a crash interrupted.
 */
import { stat, type FileHandle } from 'node:fs/promises';
import { isPlainObject, isSeq, journalPath, type JournalEntry } from './format.js';
import { fileChunks } from './file-chunks.js';
import { openForAppend } from './fsync.js';
import { validateChanges } from './tables.js';
import { StoreCorruptError } from './types.js';
import { messageOf } from '../unknown-values.js';

/** A journal entry, or why the line is not one. */
function parseJournalLine(text: string): JournalEntry | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return `not valid JSON (${messageOf(err)})`;
  }
  if (!isPlainObject(v) || !isSeq(v.seq) || v.seq < 1 || !Array.isArray(v.changes)) return 'not a {seq, changes} entry';
  try {
    validateChanges(v.changes);
  } catch (err) {
    return messageOf(err);
  }
  return { seq: v.seq, changes: v.changes };
}

/** A journal entry with the line it was read from (1-based). */
export interface ScannedEntry extends JournalEntry {
  line: number;
}

export interface JournalScan {
  num: number;
  file: string;
  /** How many entries the file holds (each was handed to `onEntry`, in order). */
  entries: number;
  /** Bytes of the file that hold complete, valid lines. */
  goodBytes: number;
  size: number;
  /** The torn final line that `goodBytes` leaves out (only in the last journal), and what made it torn. */
  torn: { line: number; bytes: number; why: string } | null;
}

/** Bytes a complete line can hold only if the file system extended the file but never wrote it (zero fill). */
const allNul = (buf: Buffer, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) if (buf[i] !== 0) return false;
  return to > from;
};

/**
 * Read one journal. Never writes. In the last journal (`last`) the final line may be torn:
 * either it lacks its newline (a write a crash interrupted: the batch was never fsynced, so never
 * acknowledged), or it is nothing but NUL bytes (zero fill of a region the file system extended
 * but never wrote; JSON.stringify never writes a raw NUL). Any other line that does not parse —
 * a complete final line included — is damage and throws StoreCorruptError naming the line.
 * Entries go to `onEntry` as they are read and are not kept: a journal may be as big as the data file.
 */
export async function scanJournal(
  file: string,
  num: number,
  last: boolean,
  onEntry: (e: ScannedEntry) => void,
): Promise<JournalScan> {
  // Read in chunks, not whole: after a crash a journal can be as big as the data file.
  const size = (await stat(file)).size;
  let entries = 0;
  let lineNo = 0;
  let torn: JournalScan['torn'] = null;
  let base = 0; // file offset of buf[0]: every byte before it is in complete, valid lines
  let carry: Buffer | null = null;
  for await (const chunk of fileChunks(file)) {
    const buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    let pos = 0;
    for (let nl = buf.indexOf(0x0a, pos); nl !== -1; nl = buf.indexOf(0x0a, pos)) {
      lineNo++;
      const isFinal = base + nl === size - 1;
      if (last && isFinal && allNul(buf, pos, nl)) {
        torn = {
          line: lineNo,
          bytes: size - (base + pos),
          why: 'only NUL bytes: a region the file system never wrote',
        };
        break;
      }
      const parsed = parseJournalLine(buf.toString('utf8', pos, nl));
      if (typeof parsed === 'string') {
        const where = isFinal ? ' (a complete final line: not a torn write, so it is not cut away)' : '';
        throw new StoreCorruptError(file, `line ${lineNo}: ${parsed}${where}`);
      }
      entries++;
      onEntry({ ...parsed, line: lineNo });
      pos = nl + 1;
    }
    base += pos;
    if (torn) break;
    carry = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
  }
  if (carry && !torn) {
    lineNo++;
    if (!last)
      throw new StoreCorruptError(
        file,
        `line ${lineNo} is incomplete (no newline) and is not the last line of the last journal`,
      );
    torn = { line: lineNo, bytes: size - base, why: 'no newline: a write that did not finish' };
  }
  return { num, file, entries, goodBytes: base, size, torn };
}

/** Open journal n of a directory for appending (created 0600 if needed). */
export const openJournal = (dir: string, n: number): Promise<FileHandle> => openForAppend(journalPath(dir, n));
