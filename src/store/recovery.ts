/**
 * Opening a data directory: create it (0700) if needed, read and check the lowdb
 * document and every journal, replay the journals into memory, and only then
 * touch a file (cut a torn journal tail, create the first journal).
 * Nothing is modified unless every file could be read.
 */
import { chmod, mkdir, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { readDataFile } from './data-file.js';
import { DATA_FILE, JOURNAL_RE, journalPath } from './format.js';
import { fsyncPath, truncateDurably } from './fsync.js';
import { openJournal, scanJournal, type JournalScan } from './journal-file.js';
import { Tables } from './tables.js';
import { StoreCorruptError } from './types.js';

export interface Recovered {
  tables: Tables;
  /** The last seq applied to memory. */
  lastSeq: number;
  /** The lowdb document on disk: its journalSeq and size, and whether it exists. */
  snapshot: { seq: number; bytes: number; exists: boolean };
  /** The journal appends go to, open, and its number. */
  active: FileHandle;
  activeNum: number;
  /** Live journal files → bytes of complete lines. */
  journalSizes: Map<number, number>;
}

export async function recover(dir: string): Promise<Recovered> {
  const dataFile = path.join(dir, DATA_FILE);

  // --- 1. directory (0700) ---
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) {
    await chmod(dir, 0o700);
    await fsyncPath(path.dirname(dir)).catch(() => {});
  }

  // --- 2. read and check everything, modifying nothing ---
  const doc = await readDataFile(dataFile);
  const tables = new Tables();
  let lastSeq = 0;
  const snapshot = { seq: 0, bytes: 0, exists: doc !== null };
  if (doc) {
    for (const [name, records] of Object.entries(doc.tables)) tables.load(name, records);
    lastSeq = snapshot.seq = doc.journalSeq;
    snapshot.bytes = (await stat(dataFile)).size;
  }
  const nums = (await readdir(dir))
    .map((f) => JOURNAL_RE.exec(f)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  // "The last journal" is the last one holding any bytes: files after it can only
  // be empty ones created by a compaction that switched files just before the crash.
  const sizes = await Promise.all(nums.map(async (n) => (await stat(journalPath(dir, n))).size));
  let lastNonEmpty = nums.length - 1;
  while (lastNonEmpty > 0 && sizes[lastNonEmpty] === 0) lastNonEmpty--;
  const scans: JournalScan[] = [];
  for (const [i, n] of nums.entries()) {
    scans.push(await scanJournal(journalPath(dir, n), n, i >= lastNonEmpty));
  }
  let prevSeq = 0;
  for (const s of scans) {
    for (const e of s.entries) {
      if (e.seq <= prevSeq) throw new StoreCorruptError(s.file, `seq ${e.seq} does not follow ${prevSeq}`);
      prevSeq = e.seq;
    }
  }
  for (const s of scans) {
    for (const e of s.entries) {
      if (e.seq > lastSeq) {
        tables.apply(e.changes);
        lastSeq = e.seq;
      }
    }
  }

  // --- 3. prepare the active journal (cut a torn tail, or create the first file) ---
  const journalSizes = new Map<number, number>();
  for (const s of scans) journalSizes.set(s.num, s.goodBytes);
  for (const s of scans) {
    // Cut the torn tail away so that appends start on a fresh line.
    if (s.goodBytes < s.size) await truncateDurably(s.file, s.goodBytes);
  }
  const lastScan = scans.at(-1);
  let activeNum: number;
  let active: FileHandle;
  if (lastScan) {
    activeNum = lastScan.num;
    active = await openJournal(dir, activeNum);
  } else {
    activeNum = 1;
    active = await openJournal(dir, activeNum);
    journalSizes.set(activeNum, 0);
    await fsyncPath(dir);
  }
  return { tables, lastSeq, snapshot, active, activeNum, journalSizes };
}
