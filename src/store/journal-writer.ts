/**
 * Group commit into the journal files. Each commit is one queued line; lines
 * queued while a write is in flight go out together in one write + one fdatasync.
 * Also keeps the set of live journal files (number → bytes) and switches appends
 * to a new file between two batches, never during one.
 *
 * A failed write fails the writer for good: that batch and everything queued are
 * rejected, and so is every later line (the file may now end in a torn line).
 */
import { unlink, type FileHandle } from 'node:fs/promises';
import { journalPath } from './format.js';
import { fsyncPath } from './fsync.js';

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface JournalWriterOptions {
  dir: string;
  /** The open journal appends go to, and its number. */
  active: FileHandle;
  activeNum: number;
  /** Live journal files → bytes (taken over by the writer). */
  journalSizes: Map<number, number>;
  /** fdatasync each batch before acknowledging it. */
  fsync: boolean;
  /** Called after each batch is acknowledged, between two batches. */
  afterBatch: () => void;
}

export class JournalWriter {
  readonly #dir: string;
  readonly #fsync: boolean;
  readonly #afterBatch: () => void;
  readonly #sizes: Map<number, number>;
  #active: FileHandle;
  #activeNum: number;
  #queue: Pending[] = [];
  #inFlight = false;
  #flushScheduled = false;
  #failed: unknown = null;
  #pendingSwitch: { h: FileHandle; n: number; done: () => void } | null = null;
  /** Handles of journals that appends no longer go to, still to be closed. */
  readonly #retired: FileHandle[] = [];
  /** Journal writes (each one write + one fdatasync). */
  batches = 0;

  constructor(opts: JournalWriterOptions) {
    this.#dir = opts.dir;
    this.#fsync = opts.fsync;
    this.#afterBatch = opts.afterBatch;
    this.#sizes = opts.journalSizes;
    this.#active = opts.active;
    this.#activeNum = opts.activeNum;
  }

  /** The error that failed the writer, or null. */
  get failed(): unknown {
    return this.#failed;
  }

  get activeNum(): number {
    return this.#activeNum;
  }

  /** Bytes in the journal appends go to. */
  activeBytes(): number {
    return this.#sizes.get(this.#activeNum) ?? 0;
  }

  /** Bytes in all live journal files. */
  totalBytes(): number {
    let n = 0;
    for (const v of this.#sizes.values()) n += v;
    return n;
  }

  /** Queue a line; resolves once it is written (and fdatasynced). '' waits for what is queued before it. */
  enqueue(line: string): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    const p = new Promise<void>((resolve, reject) => this.#queue.push({ line, resolve, reject }));
    if (!this.#flushScheduled && !this.#inFlight) {
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        void this.#pump();
      });
    }
    return p;
  }

  /** Resolves once appends go to journal n (between two batches, never during one). */
  switchTo(h: FileHandle, n: number): Promise<void> {
    return new Promise<void>((done) => {
      this.#pendingSwitch = { h, n, done };
      if (!this.#inFlight) this.#applySwitch();
    });
  }

  /** Close the handles of journals that appends no longer go to. */
  async closeRetired(): Promise<void> {
    for (let h = this.#retired.pop(); h; h = this.#retired.pop()) await h.close().catch(() => {});
  }

  closeActive(): Promise<void> {
    return this.#active.close();
  }

  /** Delete the live journal files for which `keep` is false, then fsync the directory. */
  async deleteJournals(keep: (n: number) => boolean): Promise<void> {
    let removed = false;
    for (const n of [...this.#sizes.keys()].sort((a, b) => a - b)) {
      if (keep(n)) continue;
      await unlink(journalPath(this.#dir, n)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      this.#sizes.delete(n);
      removed = true;
    }
    if (removed) await fsyncPath(this.#dir);
  }

  #applySwitch(): void {
    const s = this.#pendingSwitch;
    if (!s) return;
    this.#pendingSwitch = null;
    this.#retired.push(this.#active);
    this.#active = s.h;
    this.#activeNum = s.n;
    this.#sizes.set(s.n, 0);
    s.done();
  }

  #fail(err: unknown): void {
    if (!this.#failed) this.#failed = err;
    const q = this.#queue;
    this.#queue = [];
    for (const p of q) p.reject(err);
  }

  async #pump(): Promise<void> {
    if (this.#inFlight) return;
    this.#inFlight = true;
    try {
      while (this.#queue.length && !this.#failed) {
        this.#applySwitch();
        const batch = this.#queue;
        this.#queue = [];
        const buf = Buffer.from(batch.map((p) => p.line).join(''), 'utf8');
        try {
          let off = 0;
          while (off < buf.length) {
            const { bytesWritten } = await this.#active.write(buf, off, buf.length - off);
            off += bytesWritten;
          }
          if (this.#fsync && buf.length) await this.#active.datasync();
        } catch (err) {
          for (const p of batch) p.reject(err);
          this.#fail(err);
          break;
        }
        this.#sizes.set(this.#activeNum, this.activeBytes() + buf.length);
        if (buf.length) this.batches++;
        for (const p of batch) p.resolve();
        this.#afterBatch();
      }
    } finally {
      this.#inFlight = false;
      this.#applySwitch();
    }
  }
}
