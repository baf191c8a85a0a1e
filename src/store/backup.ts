/**
 * A copy of an embedded store's data directory taken while its daemon runs (`appreg db backup`): the data file as
 * of one compaction and every journal after it, so the copy opens as the store stood at one moment.
 *
 * Why it is consistent without asking the daemon: the journals are append-only, and a compaction writes a new data
 * file beside the old one, renames it into place, and only then deletes the journals the old one needed
 * (compaction.ts). So a copy of the data file that was in place, then of every journal, is whole as long as that data
 * file is still the one in place after the journals were copied (the same inode): then no journal it needs can have
 * been deleted. When a compaction did replace it in between, the copy starts again (a compaction runs every few
 * thousand commits, so a second attempt almost always finds none). A journal line being written while it is copied
 * is a torn last line in the copy, which opening it cuts away: that commit had not been acknowledged yet when the
 * copy read the file.
 *
 * Beside the store, the copy takes what else the data directory keeps: the key file (without it the stored secrets
 * cannot be read), the config file, the delivery log (deliveries/) and the uploaded files (files/), each as found
 * (a delivery log file removed by retention while it is copied is left out). Not the lock, daemon.json or
 * credentials.json, which belong to a running daemon.
 */
import fs from 'node:fs';
import { copyFile, mkdir, open, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { DATA_FILE, JOURNAL_RE } from './format.js';
import { errnoOf } from '../unknown-values.js';

/** What the copy took besides the store, each as a name in the data directory. */
const BESIDE = ['secret.key', 'config.json', 'version.json'] as const;
const TREES = ['deliveries', 'files'] as const;

export interface BackupHooks {
  /** Called after the data file was copied and before the journals are (tests put a compaction there). */
  afterDataFile?: () => Promise<void>;
}

export interface BackupResult {
  /** How many times the store was copied: more than 1 when a compaction replaced the data file meanwhile. */
  attempts: number;
  /** The files copied, relative to the data directory. */
  files: string[];
}

export class BackupError extends Error {}

const identity = async (file: string): Promise<string | null> => {
  try {
    const s = await stat(file);
    return `${s.dev}:${s.ino}`;
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return null;
    throw e;
  }
};

/** Copy `name` from `from` to `to` if it is there; whether it was. */
async function copyIfThere(from: string, to: string, name: string): Promise<boolean> {
  try {
    await copyFile(path.join(from, name), path.join(to, name));
    return true;
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return false;
    throw e;
  }
}

/** The store's files (data file and journals) as one moment's copy; the names copied, or null to try again. */
async function copyStoreOnce(from: string, to: string, hooks: BackupHooks): Promise<string[] | null> {
  const dataFile = path.join(from, DATA_FILE);
  const copied: string[] = [];
  // The data file through one open descriptor: what is read is the file whose identity is recorded.
  let before: string | null = null;
  const handle = await open(dataFile, 'r').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null; // a store that has only journals so far
    throw e;
  });
  if (handle) {
    try {
      const s = await handle.stat();
      before = `${s.dev}:${s.ino}`;
      const out = fs.createWriteStream(path.join(to, DATA_FILE), { mode: 0o600 });
      await new Promise<void>((resolve, reject) => {
        const input = handle.createReadStream({ start: 0, autoClose: false });
        input.on('error', reject);
        out.on('error', reject);
        out.on('finish', resolve);
        input.pipe(out);
      });
      copied.push(DATA_FILE);
    } finally {
      await handle.close();
    }
  }
  await hooks.afterDataFile?.();
  const journals = (await readdir(from)).filter((f) => JOURNAL_RE.test(f));
  for (const j of journals) {
    if (!(await copyIfThere(from, to, j))) return null; // deleted by a compaction meanwhile
    copied.push(j);
  }
  return (await identity(dataFile)) === before ? copied : null;
}

/** Everything under `rel` of `from`, into `to`; files that vanish meanwhile are left out. */
async function copyTree(from: string, to: string, rel: string, into: string[]): Promise<void> {
  let entries: fs.Dirent[];
  try {
    entries = await readdir(path.join(from, rel), { withFileTypes: true });
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    throw e;
  }
  await mkdir(path.join(to, rel), { recursive: true, mode: 0o700 });
  for (const e of entries) {
    const child = path.join(rel, e.name);
    if (e.isDirectory()) await copyTree(from, to, child, into);
    else if (e.isFile() && (await copyIfThere(from, to, child))) into.push(child);
  }
}

/**
 * Copy the data directory `from` (a daemon may be running on it) into `to`, which must exist and be empty; at most
 * `maxAttempts` copies of the store before giving up.
 */
export async function backupDataDir(
  from: string,
  to: string,
  hooks: BackupHooks = {},
  maxAttempts = 5,
): Promise<BackupResult> {
  const names = await readdir(from);
  if (!names.some((f) => f === DATA_FILE || JOURNAL_RE.test(f)))
    throw new BackupError(`${from} holds no appreg data (no ${DATA_FILE} or journal)`);
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const store = await copyStoreOnce(from, to, hooks);
    if (store) {
      const files = [...store];
      for (const name of BESIDE) if (await copyIfThere(from, to, name)) files.push(name);
      for (const tree of TREES) await copyTree(from, to, tree, files);
      return { attempts: attempt, files };
    }
    // a compaction replaced the data file meanwhile: start again on an empty directory
    for (const f of await readdir(to)) fs.rmSync(path.join(to, f), { recursive: true, force: true });
  }
  throw new BackupError(
    `the store in ${from} was compacted during each of ${maxAttempts} copies; run appreg db backup again`,
  );
}
