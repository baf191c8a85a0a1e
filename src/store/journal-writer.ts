/**
 * Group commit into the journal files. Each commit is one queued line; lines
 * queued while a write is in flight go out together in one write + one fdatasync.
 * Also keeps the set of live journal files (number → bytes) and switches appends
 * to a new file between two batches, never during one.
 *
 * A failed write or fdatasync (ENOSPC, EIO) fails that batch and every line queued
 * behind it: their commits are rolled back (`rollback`, newest first) and rejected
 * (with what `failure` makes of the error), and the writer is faulty. Its file may now
 * end in bytes that were never acknowledged, so before anything else is appended the
 * file is cut back to its last acknowledged size (at once, and again before the next
 * batch if that failed). The writer never stops for good: the next line retries, and
 * the first batch at least as large as the one that failed to reach the disk clears
 * the fault. A smaller one is not proof: on a full disk a few bytes still fit in the
 * file's last block, so a short line succeeds where every commit of the size that
 * failed still fails (`faultBytes` tells the store how large its retry must be).
 */
import { Buffer } from 'node:buffer';
import { unlink, type FileHandle } from 'node:fs/promises';
import { journalPath } from './format.js';
import { fsyncPath, nodeIo, type StoreIo } from './fsync.js';
import type { CommitUndo } from './tables.js';
import { must } from '../must.js';

interface Pending {
  line: string;
  /** What undoes the commit of this line in memory (null for a barrier). */
  undo: CommitUndo | null;
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
  /** Called for each commit of a batch as it is acknowledged (durable), before its promise resolves. */
  acknowledged?: (undo: CommitUndo) => void;
  /** Called after each batch is acknowledged, between two batches. */
  afterBatch: () => void;
  /** Undo failed commits in memory, newest first; called synchronously before they are rejected. */
  rollback: (undos: CommitUndo[]) => void;
  /** Told when a batch fails (the writer is faulty until a later batch as large succeeds). */
  onFault?: (err: unknown) => void;
  /** Told when a batch clears the fault. */
  onRecover?: () => void;
  /** The error the failed commits are rejected with, made from the write's error (default: that error). */
  failure?: (err: unknown) => unknown;
  io?: StoreIo;
}

export class JournalWriter {
  readonly #o: JournalWriterOptions;
  readonly #io: StoreIo;
  readonly #sizes: Map<number, number>;
  #active: FileHandle;
  #activeNum: number;
  #queue: Pending[] = [];
  #batch: Pending[] = [];
  #inFlight = false;
  #flushScheduled = false;
  #fault: unknown = null;
  /** Bytes of the batch that failed: a batch at least this large must succeed to clear the fault. */
  #faultBytes = 0;
  /** The active file may hold bytes past its acknowledged size: cut them before appending. */
  #dirty = false;
  #pendingSwitch: { h: FileHandle; n: number; done: () => void; fail: (err: unknown) => void } | null = null;
  /** Handles of journals that appends no longer go to, still to be closed. */
  readonly #retired: FileHandle[] = [];
  /** Journal writes (each one write + one fdatasync). */
  batches = 0;

  constructor(opts: JournalWriterOptions) {
    this.#o = opts;
    this.#io = opts.io ?? nodeIo;
    this.#sizes = opts.journalSizes;
    this.#active = opts.active;
    this.#activeNum = opts.activeNum;
  }

  /** The error of the last failed batch while no later batch as large has succeeded, else null. */
  get fault(): unknown {
    return this.#fault;
  }

  /** The size a batch must have to clear the fault (0 when there is none). */
  get faultBytes(): number {
    return this.#fault ? this.#faultBytes : 0;
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

  /** The commits written or waiting but not yet acknowledged, oldest first. */
  unacknowledged(): CommitUndo[] {
    const out: CommitUndo[] = [];
    for (const p of this.#batch) if (p.undo) out.push(p.undo);
    for (const p of this.#queue) if (p.undo) out.push(p.undo);
    return out;
  }

  /** Queue a line; resolves once it is written (and fdatasynced). '' waits for what is queued before it. */
  enqueue(line: string, undo: CommitUndo | null = null): Promise<void> {
    const p = new Promise<void>((resolve, reject) => this.#queue.push({ line, undo, resolve, reject }));
    this.#schedule();
    return p;
  }

  #schedule(): void {
    if (!this.#flushScheduled && !this.#inFlight) {
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        void this.#pump();
      });
    }
  }

  /**
   * Resolves once appends go to journal n (between two batches, never during one); rejects while the writer is faulty.
   * On a rejection `h` is still the caller's to close.
   */
  switchTo(h: FileHandle, n: number): Promise<void> {
    return new Promise<void>((done, fail) => {
      // a switch still waiting is superseded: its caller must not wait for ever, nor lose its handle unclosed
      this.#pendingSwitch?.fail(new Error(`journal switch to ${this.#pendingSwitch.n} superseded`));
      this.#pendingSwitch = { h, n, done, fail };
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
      await unlink(journalPath(this.#o.dir, n)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      this.#sizes.delete(n);
      removed = true;
    }
    if (removed) await fsyncPath(this.#o.dir);
  }

  /** Switch files only while the active one is clean: a retired journal must never end in unacknowledged bytes. */
  #applySwitch(): void {
    const s = this.#pendingSwitch;
    if (!s) return;
    this.#pendingSwitch = null;
    if (this.#dirty) return s.fail(this.#fault ?? new Error('journal not repaired'));
    this.#retired.push(this.#active);
    this.#active = s.h;
    this.#activeNum = s.n;
    this.#sizes.set(s.n, 0);
    s.done();
  }

  /** Cut the active file back to its acknowledged size, durably. */
  async #repair(): Promise<void> {
    await this.#io.truncate(this.#active, this.activeBytes());
    await this.#io.datasync(this.#active);
    this.#dirty = false;
  }

  async #writeBatch(buf: Buffer): Promise<void> {
    if (this.#dirty) await this.#repair();
    this.#applySwitch();
    let off = 0;
    while (off < buf.length) {
      this.#dirty = true;
      off += await this.#io.write(this.#active, buf, off, buf.length - off);
    }
    if (this.#o.fsync && buf.length) await this.#io.datasync(this.#active);
    this.#dirty = false;
  }

  async #pump(): Promise<void> {
    if (this.#inFlight) return;
    this.#inFlight = true;
    try {
      while (this.#queue.length) {
        const batch = (this.#batch = this.#queue);
        this.#queue = [];
        const buf = Buffer.from(batch.length === 1 ? must(batch[0]).line : batch.map((p) => p.line).join(''), 'utf8');
        try {
          await this.#writeBatch(buf);
        } catch (err) {
          await this.#failBatch(err, buf.length);
          break;
        }
        this.#batch = [];
        this.#sizes.set(this.#activeNum, this.activeBytes() + buf.length);
        if (buf.length) {
          this.batches++;
          // only as many bytes as failed, reaching the disk, prove it takes writes again
          if (this.#fault && buf.length >= this.#faultBytes) {
            this.#fault = null;
            this.#o.onRecover?.();
          }
        }
        for (const p of batch) {
          if (p.undo) this.#o.acknowledged?.(p.undo);
          p.resolve();
        }
        this.#o.afterBatch();
      }
    } finally {
      this.#inFlight = false;
      this.#applySwitch();
      if (this.#queue.length) this.#schedule();
    }
  }

  /** Roll back and reject the failed batch and everything queued behind it; try to cut the file back at once. */
  async #failBatch(err: unknown, bytes: number): Promise<void> {
    const failed = [...this.#batch, ...this.#queue];
    this.#batch = [];
    this.#queue = [];
    // a retry of the same size must pass, whatever smaller batch failed after this one
    this.#faultBytes = this.#fault ? Math.max(this.#faultBytes, bytes) : bytes;
    this.#fault = err;
    this.#o.rollback(failed.flatMap((p) => (p.undo ? [p.undo] : [])).reverse());
    const failure = this.#o.failure ? this.#o.failure(err) : err;
    for (const p of failed) p.reject(failure);
    this.#pendingSwitch?.fail(err);
    this.#pendingSwitch = null;
    this.#o.onFault?.(err);
    if (this.#dirty) await this.#repair().catch(() => {});
  }
}
