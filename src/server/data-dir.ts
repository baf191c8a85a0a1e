/** Files of the data directory: lock, key, daemon.json, credentials.json — all 0600. */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { errnoOf, isRecord, messageOf } from '../unknown-values.js';

/** Why the daemon refused to start; `reason` lets the CLI pick its exit code. */
export type StartupReason = 'locked' | 'port_in_use' | 'key' | 'data' | 'newer_data';

export class StartupError extends Error {
  constructor(
    message: string,
    readonly reason: StartupReason = 'data',
  ) {
    super(message);
  }
}

/**
 * Create the data directory 0700, or tighten an existing one (e.g. the repository's ./data) to 0700.
 * Returns the first directory it created (undefined when the directory existed), so that a start
 * refused afterwards can take it away again (`removeIfEmpty`).
 */
export function ensureDataDir(dir: string): string | undefined {
  const created = fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = fs.statSync(dir);
  if ((st.mode & 0o077) !== 0 && st.uid === process.getuid?.()) fs.chmodSync(dir, 0o700);
  return created;
}

/**
 * Remove `dir` and the directories between it and `top` (the first one ensureDataDir created), each only if it is
 * empty.
 */
export function removeIfEmpty(dir: string, top: string): void {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      fs.rmdirSync(d);
    } catch {
      return; // not empty (or gone): leave it and what holds it
    }
    if (d === path.resolve(top) || path.dirname(d) === d) return;
  }
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

/** Whether a process with this pid exists (one of another user's counts: EPERM). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errnoOf(e) === 'EPERM';
  }
}

/** Lock files this process holds (a second daemon started in the same process must be refused too). */
const heldLocks = new Set<string>();

/**
 * Who holds a lock: a pid and, where the system tells it (Linux: /proc/<pid>/stat field 22,
 * clock ticks since boot), the process's start time, so a pid reused by an unrelated process
 * is told apart from the process that wrote the lock. A nonce makes every lock's bytes unique.
 */
interface LockOwner {
  pid: number;
  start?: string;
  nonce?: string;
}

/** /proc/<pid>/stat as [state, starttime], or null when there is no such process; undefined when /proc is not there. */
function procStat(pid: number): [string, string] | null | undefined {
  let raw: string;
  try {
    raw = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return fs.existsSync('/proc/self/stat') ? null : undefined;
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'
  const f = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
  return f[0] !== undefined && f[19] !== undefined ? [f[0], f[19]] : undefined;
}

function selfOwner(): LockOwner {
  const st = procStat(process.pid);
  return { pid: process.pid, ...(st ? { start: st[1] } : {}), nonce: crypto.randomBytes(8).toString('hex') };
}

/** A lock file's owner: the JSON written now, or the bare pid older versions wrote. */
function parseOwner(text: string): LockOwner | null {
  const t = text.trim();
  if (/^[1-9][0-9]{0,9}$/.test(t)) return { pid: Number(t) };
  try {
    const v: unknown = JSON.parse(t);
    if (isRecord(v) && typeof v.pid === 'number' && Number.isSafeInteger(v.pid) && v.pid > 0)
      return { pid: v.pid, ...(typeof v.start === 'string' ? { start: v.start } : {}) };
  } catch {
    /* not ours */
  }
  return null;
}

/** When the running process with this start time (clock ticks since boot) started, in ms since the epoch. */
function startedAtMs(ticks: string): number | null {
  try {
    const btime = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'))?.[1];
    return btime ? Number(btime) * 1000 + Number(ticks) * 10 : null; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/**
 * Whether the owner named in a lock file still runs. Gone, a zombie, or a live process whose
 * start time differs from the one recorded (its pid was reused) → stale. A lock written by an
 * older version holds a pid only: its process is taken for the owner unless it started after
 * the lock file was written. Without /proc, a live pid is taken for the owner.
 */
function ownerAlive(owner: LockOwner, lockMtimeMs: number): boolean {
  if (owner.pid === process.pid) return false; // not held in this process (heldLocks): a previous process had our pid
  const st = procStat(owner.pid);
  if (st === null) return false;
  if (st === undefined) return alive(owner.pid);
  const [state, start] = st;
  if (state === 'Z' || state === 'X') return false;
  if (owner.start !== undefined) return owner.start === start;
  const startedAt = startedAtMs(start);
  return startedAt === null || startedAt <= lockMtimeMs + 1000;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function readIfExists(file: string): { text: string; mtimeMs: number } | null {
  try {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    try {
      return { text: fs.readFileSync(fd, 'utf8'), mtimeMs: fs.fstatSync(fd).mtimeMs };
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return null;
    throw e;
  }
}

/** Create `file` holding `content`, complete from its first instant (link of a temp file), or false if it exists. */
function createWith(file: string, content: string): boolean {
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (e) {
    const code = errnoOf(e);
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw e;
    // no hard links on this file system: exclusive create, then write
    try {
      fs.writeFileSync(file, content, { mode: 0o600, flag: 'wx' });
      return true;
    } catch (e2) {
      if (errnoOf(e2) === 'EEXIST') return false;
      throw e2;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** A lock file nobody could have written completely (empty, not ours) counts as stale once it is this old. */
const UNREADABLE_GRACE_MS = 5000;

function isStale(found: { text: string; mtimeMs: number }): boolean {
  const owner = parseOwner(found.text);
  if (!owner) return Date.now() - found.mtimeMs > UNREADABLE_GRACE_MS;
  return !ownerAlive(owner, found.mtimeMs);
}

/**
 * Remove a stale lock, if it is still the one judged stale. Removals are serialised by a guard
 * file (exclusive create), so two starts that both found the same stale lock cannot remove
 * each other's fresh one. Returns false when the guard is busy (try again).
 */
function removeStale(file: string, judged: string): boolean {
  const guard = `${file}.takeover`;
  if (!createWith(guard, JSON.stringify(selfOwner()))) {
    const g = readIfExists(guard);
    if (g && isStale(g)) fs.rmSync(guard, { force: true }); // its holder died inside the few calls below
    return false;
  }
  try {
    if (readIfExists(file)?.text === judged) fs.unlinkSync(file);
  } finally {
    fs.rmSync(guard, { force: true });
  }
  return true;
}

const lockedError = (pid: number, dir: string) =>
  new StartupError(
    `another appreg daemon (pid ${pid}) is already running on ${dir}; stop it first or use another --data-dir`,
    'locked',
  );

/**
 * One daemon per data dir. The lock file names its owner (pid + start time); a lock whose owner
 * is gone, a zombie, or whose pid now belongs to another process is stale and taken over; a live
 * owner's lock never is.
 */
export function acquireLock(dir: string): () => void {
  const file = path.join(dir, 'daemon.lock');
  if (heldLocks.has(file)) throw lockedError(process.pid, dir);
  const mine = JSON.stringify(selfOwner()) + '\n';
  for (let attempt = 0; attempt < 200; attempt++) {
    if (createWith(file, mine)) {
      heldLocks.add(file);
      return () => {
        heldLocks.delete(file);
        try {
          if (readIfExists(file)?.text === mine) fs.unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
    }
    const found = readIfExists(file);
    if (!found) continue; // removed meanwhile: try again
    if (!isStale(found)) throw lockedError(parseOwner(found.text)?.pid ?? 0, dir);
    if (!removeStale(file, found.text)) sleepSync(5 + attempt);
  }
  throw new StartupError(`could not take the lock ${file}`, 'locked');
}

/**
 * The master key, outside the data file: read from `keyFile`, or made (in memory only: `writeKey`
 * writes it once every check of the start has passed) when there is none and no data needs it;
 * refusing to invent a new one for existing data.
 */
export function readOrMakeKey(keyFile: string, dataExists: boolean): { key: Buffer; made: boolean } {
  if (fs.existsSync(keyFile)) {
    const raw = fs.readFileSync(keyFile, 'utf8').trim();
    const key = Buffer.from(raw, 'base64url');
    if (key.length !== 32) throw new StartupError(`key file ${keyFile} is not a 32-byte base64url key`, 'key');
    return { key, made: false };
  }
  if (dataExists)
    throw new StartupError(
      `key file ${keyFile} is missing but the data directory holds data encrypted with it; restore the key file`,
      'key',
    );
  return { key: crypto.randomBytes(32), made: true };
}

/** Write a key `readOrMakeKey` made (0600, durably). */
export function writeKey(keyFile: string, key: Buffer): void {
  writeFile0600(keyFile, key.toString('base64url') + '\n');
}

/**
 * The data directory's stamp, `version.json`: which appreg last started on it and the format of the directory it
 * wrote. A newer appreg opens what an older one wrote (and stamps it as its own); an older one refuses a
 * directory stamped with a format it does not know, naming both versions, before it reads or writes anything else.
 */
export const DATA_DIR_FORMAT = 1;
const STAMP = 'version.json';

interface Stamp {
  appreg: string;
  format: number;
}

/**
 * Refuse a data directory a newer appreg wrote; a missing stamp is a directory from before stamps (0.1.0) or a new one.
 */
export function checkDataDirStamp(dir: string, version: string): void {
  let raw: string;
  try {
    raw = fs.readFileSync(path.join(dir, STAMP), 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return;
    throw new StartupError(`refusing to start: cannot read ${path.join(dir, STAMP)}: ${messageOf(e)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new StartupError(
      `refusing to start: ${path.join(dir, STAMP)} is not valid JSON (the file was left unchanged)`,
    );
  }
  // a stamp that is JSON but no object (null, a number) has no format either
  const stamp = isRecord(parsed) ? parsed : {};
  if (typeof stamp.format !== 'number' || !Number.isSafeInteger(stamp.format) || stamp.format < 1) {
    throw new StartupError(
      `refusing to start: ${path.join(dir, STAMP)} has no valid "format" (the file was left unchanged)`,
    );
  }
  if (stamp.format > DATA_DIR_FORMAT) {
    const by = typeof stamp.appreg === 'string' ? `appreg ${stamp.appreg}` : 'a newer appreg';
    throw new StartupError(
      `refusing to start: the data directory ${dir} was written by ${by} (data directory format ${stamp.format}); ` +
        `this is appreg ${version}, which knows formats up to ${DATA_DIR_FORMAT}. Run ${by} or newer on it, ` +
        `or start this version on a backup made before the upgrade (docs/operations.md)`,
      'newer_data',
    );
  }
}

/** Stamp the data directory as this appreg's (after the start was accepted). */
export function stampDataDir(dir: string, version: string): void {
  const stamp: Stamp = { appreg: version, format: DATA_DIR_FORMAT };
  writeFile0600(path.join(dir, STAMP), JSON.stringify(stamp, null, 2) + '\n');
}
