/** Durability helpers for files in the data directory. */
import { constants as fsc, fdatasync, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** fsync a file or a directory by path. */
export async function fsyncPath(p: string): Promise<void> {
  const h = await open(p, fsc.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

/** Open (creating it 0600 if needed) a file for appending; never follows a symlink. */
export async function openForAppend(file: string): Promise<FileHandle> {
  const h = await open(file, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT | fsc.O_NOFOLLOW, 0o600);
  try {
    await h.chmod(0o600);
  } catch (err) {
    await h.close();
    throw err;
  }
  return h;
}

/** Cut a file to `bytes` and make that durable. */
export async function truncateDurably(file: string, bytes: number): Promise<void> {
  const h = await open(file, fsc.O_WRONLY | fsc.O_NOFOLLOW);
  try {
    await h.truncate(bytes);
    await h.datasync();
  } finally {
    await h.close();
  }
}

/**
 * The file calls the journal writer makes, injectable so tests can make them fail
 * (ENOSPC, EIO) the way a full or failing disk does. Production uses `nodeIo`.
 */
export interface StoreIo {
  /** Write up to `length` bytes; returns how many were written. */
  write(h: FileHandle, buf: Buffer, offset: number, length: number): Promise<number>;
  datasync(h: FileHandle): Promise<void>;
  truncate(h: FileHandle, length: number): Promise<void>;
}

/**
 * The journal's append is a plain write(2) on this thread: it only copies a batch (a few KB) into the
 * page cache, and the thread pool's round trip cost more (measured about 19 against 5 µs of CPU for
 * an 8 KB append, and a wake-up of a pool thread on a busy machine); the fdatasync that follows, which
 * waits for the disk, stays in the pool, asked by callback: FileHandle's promise form makes a
 * request with a stats array of its own each time (measured: 10.0–10.6 against 7.7–8.2 µs of CPU a call).
 */
export const nodeIo: StoreIo = {
  write: async (h, buf, offset, length) => writeSync(h.fd, buf, offset, length),
  datasync: (h) => new Promise<void>((resolve, reject) => fdatasync(h.fd, (err) => (err ? reject(err) : resolve()))),
  truncate: (h, length) => h.truncate(length),
};
