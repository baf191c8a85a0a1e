/** Files of the data directory: lock, key, daemon.json, credentials.json — all 0600. */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';

/** Why the daemon refused to start; `reason` lets the CLI pick its exit code. */
export type StartupReason = 'locked' | 'port_in_use' | 'key' | 'data';

export class StartupError extends Error {
  constructor(
    message: string,
    readonly reason: StartupReason = 'data',
  ) {
    super(message);
  }
}

/** Create the data directory 0700, or tighten an existing one (e.g. the repository's ./data) to 0700. */
export function ensureDataDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.statSync(dir);
  if ((st.mode & 0o077) !== 0 && st.uid === process.getuid?.()) fs.chmodSync(dir, 0o700);
}

export function writeFile0600(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One daemon per data dir. The lock file holds the owner's pid; a lock whose
 * process is gone (killed daemon) is stale and taken over.
 */
/** Lock files this process holds (a second daemon started in the same process must be refused too). */
const heldLocks = new Set<string>();

export function acquireLock(dir: string): () => void {
  const file = path.join(dir, 'daemon.lock');
  if (heldLocks.has(file)) throw new StartupError(`another appreg daemon (pid ${process.pid}) is already running on ${dir}; stop it first or use another --data-dir`, 'locked');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o600);
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      heldLocks.add(file);
      return () => {
        heldLocks.delete(file);
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(fs.readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new StartupError(`another appreg daemon (pid ${pid}) is already running on ${dir}; stop it first or use another --data-dir`, 'locked');
      }
      fs.unlinkSync(file); // stale: its process is gone
    }
  }
  throw new StartupError(`could not take the lock ${file}`, 'locked');
}

/** The master key, outside the data file. Created on first start; refusing to invent a new one for existing data. */
export function loadOrCreateKey(keyFile: string, dataExists: boolean): Buffer {
  if (fs.existsSync(keyFile)) {
    const raw = fs.readFileSync(keyFile, 'utf8').trim();
    const key = Buffer.from(raw, 'base64url');
    if (key.length !== 32) throw new StartupError(`key file ${keyFile} is not a 32-byte base64url key`, 'key');
    return key;
  }
  if (dataExists) throw new StartupError(`key file ${keyFile} is missing but the data directory holds data encrypted with it; restore the key file`, 'key');
  const key = crypto.randomBytes(32);
  writeFile0600(keyFile, key.toString('base64url') + '\n');
  return key;
}
