/**
 * The durable store: a lowdb document (appreg.json) as the store of record, plus
 * append-only journal files (appreg.journal.<n>) that make each commit durable
 * with one small fdatasync instead of rewriting the whole document.
 *
 *  - Reads come from memory. commit() applies to memory at once, then queues a
 *    journal line; lines queued while a write is in flight go out together in
 *    one write + one fdatasync (group commit).
 *  - Compaction (journal too big, or idle with a non-empty journal): appends switch
 *    to appreg.journal.<n+1>, then memory is captured with journalSeq = the last
 *    seq applied to memory at that instant, written through lowdb (temp + rename),
 *    fsynced with its directory, and only then are the older journals deleted.
 *    Replay skips seq <= journalSeq, so lines that reach the new journal but are
 *    already in the snapshot are harmless.
 *  - Open never modifies a file it could not read: every file is parsed and
 *    checked before anything is truncated, created or rewritten.
 *
 * One process may open a directory at a time (lowdb has no multi-writer story).
 */
import { constants as fsc } from 'node:fs';
import { chmod, mkdir, open, readdir, readFile, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { Tables, validateChanges, type TableSnapshot } from './tables.js';
import { FORMAT_VERSION, StoreCorruptError, type Change, type Store } from './types.js';

export const DATA_FILE = 'appreg.json';
export const JOURNAL_PREFIX = 'appreg.journal.';
const JOURNAL_RE = /^appreg\.journal\.([1-9][0-9]{0,15})$/;

export interface LowdbStoreOptions {
  dir: string;
  /** Compact when the active journal grows beyond this (default 4 MiB). */
  compactEveryBytes?: number;
  /** Compact after this long without commits while a journal is non-empty (default 2000; <= 0 or Infinity disables). */
  compactIdleMs?: number;
  /** fdatasync each batch before acknowledging it (default true; false only for benchmarks). */
  fsync?: boolean;
  /** Told about background compaction failures (the journals still hold the data). */
  onError?: (err: unknown) => void;
}

export interface StoreStats {
  /** Bytes in all live journal files. */
  journalBytes: number;
  /** The last seq applied to memory. */
  lastSeq: number;
  compactions: number;
  /** Journal writes (each one write + one fdatasync). */
  batches: number;
  commits: number;
}

export interface LowdbStore extends Store {
  stats(): StoreStats;
  /** Compact now (waits for a compaction already running, then runs one). */
  compact(): Promise<void>;
}

interface DataDoc {
  formatVersion: number;
  journalSeq: number;
  tables: TableSnapshot;
}

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

async function fsyncPath(p: string): Promise<void> {
  const h = await open(p, fsc.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

/** Parse and check appreg.json; null if it does not exist. Never writes. */
async function readDataFile(file: string): Promise<DataDoc | null> {
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

interface JournalEntry {
  seq: number;
  changes: Change[];
}

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

interface JournalScan {
  num: number;
  file: string;
  entries: JournalEntry[];
  /** Bytes of the file that hold complete, valid lines. */
  goodBytes: number;
  size: number;
}

/** Read one journal; `last` allows a torn/unparsable final line. Never writes. */
async function scanJournal(file: string, num: number, last: boolean): Promise<JournalScan> {
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

export async function openLowdbStore(opts: LowdbStoreOptions): Promise<LowdbStore> {
  const dir = path.resolve(opts.dir);
  const compactEveryBytes = opts.compactEveryBytes ?? 4 * 1024 * 1024;
  const compactIdleMs = opts.compactIdleMs ?? 2000;
  const doFsync = opts.fsync ?? true;
  // A compaction rewrites the whole document (and stalls the event loop while it is
  // serialised), so let the journal grow to the document's size before folding it in:
  // the rewrite cost per journaled byte stays constant as the data grows.
  let snapshotBytes = 0;
  const compactThreshold = () => Math.max(compactEveryBytes, snapshotBytes);
  const dataFile = path.join(dir, DATA_FILE);
  const tempFile = path.join(dir, `.${DATA_FILE}.tmp`); // steno's temp name
  const journalPath = (n: number) => path.join(dir, JOURNAL_PREFIX + n);
  const fsyncDir = () => fsyncPath(dir);

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
  let snapshotSeq = 0;
  if (doc) {
    for (const [name, records] of Object.entries(doc.tables)) tables.load(name, records);
    lastSeq = snapshotSeq = doc.journalSeq;
    snapshotBytes = (await stat(dataFile)).size;
  }
  const nums = (await readdir(dir))
    .map((f) => JOURNAL_RE.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  // "The last journal" is the last one holding any bytes: files after it can only
  // be empty ones created by a compaction that switched files just before the crash.
  const sizes = await Promise.all(nums.map(async (n) => (await stat(journalPath(n))).size));
  let lastNonEmpty = nums.length - 1;
  while (lastNonEmpty > 0 && sizes[lastNonEmpty] === 0) lastNonEmpty--;
  const scans: JournalScan[] = [];
  for (let i = 0; i < nums.length; i++) {
    scans.push(await scanJournal(journalPath(nums[i]), nums[i], i >= lastNonEmpty));
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
  const journalSizes = new Map<number, number>(); // live journal files → bytes
  for (const s of scans) journalSizes.set(s.num, s.goodBytes);
  let activeNum: number;
  let active: FileHandle;
  const openJournal = async (n: number): Promise<FileHandle> => {
    const h = await open(journalPath(n), fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o600);
    try {
      await h.chmod(0o600);
    } catch (err) {
      await h.close();
      throw err;
    }
    return h;
  };
  for (const s of scans) {
    if (s.goodBytes < s.size) {
      // Cut the torn tail away so that appends start on a fresh line.
      const h = await open(s.file, fsc.O_WRONLY | fsc.O_NOFOLLOW);
      try {
        await h.truncate(s.goodBytes);
        await h.datasync();
      } finally {
        await h.close();
      }
    }
  }
  if (scans.length) {
    activeNum = scans[scans.length - 1].num;
    active = await openJournal(activeNum);
  } else {
    activeNum = 1;
    active = await openJournal(activeNum);
    journalSizes.set(activeNum, 0);
    await fsyncDir();
  }

  const db = new Low<DataDoc>(new JSONFile<DataDoc>(dataFile), {
    formatVersion: FORMAT_VERSION,
    journalSeq: snapshotSeq,
    tables: Object.create(null),
  });

  // --- state ---
  let queue: Pending[] = [];
  let inFlight = false;
  let flushScheduled = false;
  let failed: unknown = null;
  let closing = false;
  let closePromise: Promise<void> | null = null;
  let compacting: Promise<void> | null = null;
  let pendingSwitch: { h: FileHandle; n: number; done: () => void } | null = null;
  const retired: FileHandle[] = [];
  let dataFileExists = doc !== null;
  let lastCommitAt = Date.now();
  let idleTimer: NodeJS.Timeout | null = null;
  const stats = { compactions: 0, batches: 0, commits: 0 };

  const journalBytes = () => {
    let n = 0;
    for (const v of journalSizes.values()) n += v;
    return n;
  };

  const applySwitch = () => {
    const s = pendingSwitch!;
    pendingSwitch = null;
    retired.push(active);
    active = s.h;
    activeNum = s.n;
    journalSizes.set(s.n, 0);
    s.done();
  };

  const fail = (err: unknown) => {
    if (!failed) failed = err;
    const q = queue;
    queue = [];
    for (const p of q) p.reject(err);
  };

  const pump = async () => {
    if (inFlight) return;
    inFlight = true;
    try {
      while (queue.length && !failed) {
        if (pendingSwitch) applySwitch();
        const batch = queue;
        queue = [];
        const buf = Buffer.from(batch.map((p) => p.line).join(''), 'utf8');
        try {
          let off = 0;
          while (off < buf.length) {
            const { bytesWritten } = await active.write(buf, off, buf.length - off);
            off += bytesWritten;
          }
          if (doFsync && buf.length) await active.datasync();
        } catch (err) {
          for (const p of batch) p.reject(err);
          fail(err);
          break;
        }
        journalSizes.set(activeNum, (journalSizes.get(activeNum) ?? 0) + buf.length);
        if (buf.length) stats.batches++;
        for (const p of batch) p.resolve();
        if (!closing && !compacting && (journalSizes.get(activeNum) ?? 0) > compactThreshold()) startCompaction();
      }
    } finally {
      inFlight = false;
      if (pendingSwitch) applySwitch();
    }
  };

  const enqueue = (line: string): Promise<void> => {
    if (failed) return Promise.reject(failed);
    const p = new Promise<void>((resolve, reject) => queue.push({ line, resolve, reject }));
    if (!flushScheduled && !inFlight) {
      flushScheduled = true;
      queueMicrotask(() => {
        flushScheduled = false;
        void pump();
      });
    }
    return p;
  };

  /** Resolves once appends go to journal n (between two batches, never during one). */
  const switchTo = (h: FileHandle, n: number) =>
    new Promise<void>((done) => {
      pendingSwitch = { h, n, done };
      if (!inFlight) applySwitch();
    });

  /** Write memory as the lowdb document; returns once it and the directory are fsynced. */
  const writeSnapshot = async () => {
    // steno writes into this temp file and renames it over appreg.json; make it
    // 0600 before any data goes in (an existing file keeps its mode on truncate).
    const t = await open(tempFile, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o600);
    try {
      await t.chmod(0o600);
    } finally {
      await t.close();
    }
    // Captured synchronously: every seq <= journalSeq is in these tables.
    const seq = lastSeq;
    db.data = { formatVersion: FORMAT_VERSION, journalSeq: seq, tables: tables.snapshot() };
    await db.write();
    db.data = { formatVersion: FORMAT_VERSION, journalSeq: seq, tables: Object.create(null) }; // drop references
    await chmod(dataFile, 0o600);
    await fsyncPath(dataFile);
    await fsyncDir();
    dataFileExists = true;
    snapshotSeq = seq;
    snapshotBytes = (await stat(dataFile)).size;
  };

  const deleteJournals = async (keep: (n: number) => boolean) => {
    let removed = false;
    for (const n of [...journalSizes.keys()].sort((a, b) => a - b)) {
      if (keep(n)) continue;
      await unlink(journalPath(n)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      journalSizes.delete(n);
      removed = true;
    }
    if (removed) await fsyncDir();
  };

  const closeRetired = async () => {
    while (retired.length) await retired.pop()!.close().catch(() => {});
  };

  const compactOnce = async () => {
    const n = activeNum + 1;
    const h = await openJournal(n);
    try {
      await fsyncDir();
    } catch (err) {
      await h.close();
      throw err;
    }
    await switchTo(h, n);
    await closeRetired();
    // A failed write may have left a torn line in the old journal: keep the files as they are.
    if (failed) throw failed;
    await writeSnapshot();
    await deleteJournals((k) => k >= n);
    stats.compactions++;
  };

  /** Starts a compaction (unless one runs); the result rejects if it fails, `compacting` never does. */
  const startCompaction = (): Promise<void> => {
    if (compacting) return compacting;
    if (failed || closing) return Promise.resolve();
    const run = compactOnce();
    compacting = run
      .catch((err) => {
        opts.onError?.(err);
      })
      .finally(() => {
        compacting = null;
        if (!closing && !failed && (journalSizes.get(activeNum) ?? 0) > compactThreshold()) startCompaction();
        else if (!closing && !failed && journalBytes() > 0) armIdle();
      });
    return run;
  };

  const idleEnabled = Number.isFinite(compactIdleMs) && compactIdleMs > 0;
  const armIdle = () => {
    if (!idleEnabled || idleTimer || closing) return;
    const wait = Math.max(1, lastCommitAt + compactIdleMs - Date.now());
    idleTimer = setTimeout(() => {
      idleTimer = null;
      if (closing || failed) return;
      if (Date.now() - lastCommitAt < compactIdleMs) return armIdle();
      if (journalBytes() > 0 && !compacting) void startCompaction();
    }, wait);
    idleTimer.unref();
  };
  if (journalBytes() > 0) armIdle();

  const store: LowdbStore = {
    get: (table, id) => tables.get(table, id),
    values: (table) => tables.values(table),
    count: (table) => tables.count(table),

    commit(changes: Change[]): Promise<void> {
      if (closing) return Promise.reject(new Error('store is closed'));
      if (failed) return Promise.reject(failed);
      let line: string;
      try {
        validateChanges(changes);
        // Serialise before touching memory: a value JSON cannot hold fails the
        // whole commit with nothing applied.
        line = JSON.stringify({ seq: lastSeq + 1, changes }) + '\n';
      } catch (err) {
        return Promise.reject(err);
      }
      lastSeq++;
      tables.apply(changes);
      stats.commits++;
      lastCommitAt = Date.now();
      armIdle();
      return enqueue(line);
    },

    stats: () => ({ journalBytes: journalBytes(), lastSeq, ...stats }),

    async compact() {
      if (closing) throw new Error('store is closed');
      if (failed) throw failed;
      if (compacting) await compacting;
      await startCompaction();
    },

    close(): Promise<void> {
      if (closePromise) return closePromise;
      closing = true;
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = null;
      closePromise = (async () => {
        // Everything already committed reaches the journal first.
        await enqueue('').catch(() => {});
        if (compacting) await compacting;
        try {
          if (!failed) {
            // Nothing writes any more: the lowdb file alone will hold everything.
            const needed = lastSeq > snapshotSeq || !dataFileExists || journalBytes() > 0;
            if (needed) await writeSnapshot();
            await active.close();
            await closeRetired();
            await deleteJournals(() => false);
            if (needed) stats.compactions++;
          }
        } finally {
          await active.close().catch(() => {});
          await closeRetired();
        }
      })();
      return closePromise;
    },
  };
  return store;
}
