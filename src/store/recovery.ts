/**
 * Opening a data directory: create it (0700) if needed, read and check the data
 * file and every journal, replay the journals into memory, let the caller check
 * what was read, and only then touch a file (cut a torn journal tail, create the
 * first journal).
 * Nothing is modified unless every file could be read and every check passed:
 * a damaged line, a gap in the journal's seqs, or a data directory that holds
 * state but lost its data file refuse with StoreCorruptError, files untouched.
 */
import { chmod, mkdir, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { readDataFile } from './data-file.js';
import { DATA_FILE, JOURNAL_RE, STATE_ENTRIES, journalPath } from './format.js';
import { fsyncPath, truncateDurably } from './fsync.js';
import { openJournal, scanJournal, type JournalScan, type ScannedEntry } from './journal-file.js';
import { Tables, toJsonChanges } from './tables.js';
import { StoreCorruptError, type StoreLogger } from './types.js';

export interface Recovered {
  tables: Tables;
  /** The last seq applied to memory. */
  lastSeq: number;
  /** The data file on disk: its journalSeq and size, and whether it exists. */
  snapshot: { seq: number; bytes: number; exists: boolean };
  /** The journal appends go to, open, and its number. */
  active: FileHandle;
  activeNum: number;
  /** Live journal files → bytes of complete lines. */
  journalSizes: Map<number, number>;
}

interface RecoverOptions {
  /** Start a new, empty store although the directory holds state but no data file. */
  allowFresh?: boolean;
  /** More files whose existence means the directory held state (e.g. a key file that existed before this start). */
  stateFiles?: readonly string[];
  logger: StoreLogger;
  /**
   * Called with what was read, before any file is touched: whatever it throws refuses the open, every file unchanged.
   */
  beforeWrite?: (tables: Tables) => Promise<void>;
}

/** Entries other parts of the daemon keep in the data directory once it has recorded anything. */
async function stateEntries(
  dir: string,
  nums: number[],
  sizes: number[],
  stateFiles: readonly string[],
): Promise<string[]> {
  const found: string[] = [];
  for (const f of stateFiles) {
    const p = path.resolve(dir, f);
    if (
      await stat(p).then(
        () => true,
        () => false,
      )
    )
      found.push(path.dirname(p) === dir ? path.basename(p) : p);
  }
  for (const name of STATE_ENTRIES) {
    try {
      const st = await stat(path.join(dir, name));
      if (!st.isDirectory() || (await readdir(path.join(dir, name))).length > 0) found.push(name);
    } catch {
      /* absent */
    }
  }
  // An empty appreg.journal.1 alone is what a first start leaves before its first commit;
  // any other journal means a data file existed once (compaction numbers journals after it).
  const onlyFirstEmpty = nums.length === 1 && nums[0] === 1 && sizes[0] === 0;
  if (nums.length && !onlyFirstEmpty) found.push(...nums.map((n) => path.basename(journalPath(dir, n))));
  return found;
}

/**
 * Checks that every journal seq follows the one before it by one, the first one following the
 * data file's journalSeq; fed the entries in file order as they are read.
 */
function seqChecker(
  dataFile: string,
  snapshot: { seq: number; exists: boolean },
): (file: string, e: ScannedEntry) => void {
  let prev: number | null = null;
  return (file, e) => {
    if (prev === null) {
      if (e.seq > snapshot.seq + 1) {
        const base = snapshot.exists
          ? `${DATA_FILE} holds seqs up to ${snapshot.seq}`
          : `there is no ${DATA_FILE} (${dataFile})`;
        throw new StoreCorruptError(
          file,
          `line ${e.line}: seq ${e.seq} is the first journal entry but ${base}: seqs ${snapshot.seq + 1}..${e.seq - 1} are missing`,
        );
      }
    } else if (e.seq !== prev + 1) {
      const why =
        e.seq <= prev
          ? `does not follow ${prev}`
          : `follows ${prev}: seqs ${prev + 1}..${e.seq - 1} are missing (a deleted or lost line)`;
      throw new StoreCorruptError(file, `line ${e.line}: seq ${e.seq} ${why}`);
    }
    prev = e.seq;
  };
}

export async function recover(dir: string, opts: RecoverOptions): Promise<Recovered> {
  const dataFile = path.join(dir, DATA_FILE);

  // --- 1. directory (0700) ---
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) {
    await chmod(dir, 0o700);
    await fsyncPath(path.dirname(dir)).catch(() => {});
  }

  // --- 2. read and check everything, modifying nothing ---
  const doc = await readDataFile(dataFile);
  const tables = doc?.tables ?? new Tables();
  let lastSeq = 0;
  const snapshot = { seq: 0, bytes: 0, exists: doc !== null };
  if (doc) {
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
  // Entries are checked and applied to memory as they are read (memory is only thrown away if a
  // later check fails; no file has been touched yet).
  const scans: JournalScan[] = [];
  const checkSeq = seqChecker(dataFile, snapshot);
  for (const [i, n] of nums.entries()) {
    const file = journalPath(dir, n);
    scans.push(
      await scanJournal(file, n, i >= lastNonEmpty, (e) => {
        checkSeq(file, e);
        if (e.seq > lastSeq) {
          tables.apply(toJsonChanges(e.changes));
          lastSeq = e.seq;
        }
      }),
    );
  }
  if (!doc && !scans.some((s) => s.entries > 0) && !opts.allowFresh) {
    const state = await stateEntries(dir, nums, sizes, opts.stateFiles ?? []);
    if (state.length) {
      throw new StoreCorruptError(
        dataFile,
        `is missing but the directory holds state (${state.join(', ')}); restore ${DATA_FILE} from a backup, or start a new empty store there on purpose with allowFresh (appreg serve --allow-fresh)`,
      );
    }
  }

  // the caller's own checks of what was read (the master key), while nothing is changed yet
  await opts.beforeWrite?.(tables);

  // --- 3. prepare the active journal (cut a torn tail, or create the first file) ---
  const journalSizes = new Map<number, number>();
  for (const s of scans) journalSizes.set(s.num, s.goodBytes);
  for (const s of scans) {
    // Cut the torn tail away so that appends start on a fresh line.
    if (s.torn) {
      opts.logger.warn(
        'store: cut a torn final journal line left by an interrupted write (it was never acknowledged)',
        {
          file: s.file,
          line: s.torn.line,
          bytes: s.torn.bytes,
          why: s.torn.why,
        },
      );
      await truncateDurably(s.file, s.goodBytes);
    }
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
    try {
      await fsyncPath(dir);
    } catch (err) {
      await active.close().catch(() => {});
      throw err;
    }
  }
  return { tables, lastSeq, snapshot, active, activeNum, journalSizes };
}
