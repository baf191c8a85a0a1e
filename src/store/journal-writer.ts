/**
 * Group commit into the journal files. Each commit is one queued line; lines queued
 * while a batch is on its way go out together in one write + one fdatasync. Two
 * batches may be on their way at once: once a batch is written and its fdatasync
 * runs, the lines queued meanwhile are written and fdatasynced beside it (on a second
 * descriptor of the file) instead of waiting for that fdatasync to end before their
 * own begins; batches are still written in order and acknowledged in order, each only
 * once it and every batch before it are durable. Also keeps the set of live journal
 * files (number → bytes) and switches appends to a new file between two batches,
 * with nothing on its way, never during one.
 *
 * A failed write or fdatasync (ENOSPC, EIO) fails that batch, the batch beside it and
 * every line queued behind them: their commits are rolled back (`rollback`, newest first) and rejected
 * (with what `failure` makes of the error), and the writer is faulty. Its file may now
 * end in bytes that were never acknowledged, so before anything else is appended the
 * file is cut back to its last acknowledged size (at once, and again before the next
 * batch if that failed). The writer never stops for good: the next line retries, and
 * the first batch at least as large as the one that failed to reach the disk clears
 * the fault. A smaller one is not proof: on a full disk a few bytes still fit in the
 * file's last block, so a short line succeeds where every commit of the size that
 * failed still fails (`faultBytes` tells the store how large its retry must be).
 */
import { constants as fsc } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
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

/** One batch on its way: written, then fdatasynced on `syncOn`. */
interface Flight {
  batch: Pending[];
  bytes: number;
  /** The descriptor its fdatasync runs on (another than the flight beside it). */
  syncOn: FileHandle | null;
  /** Written and fdatasynced: acknowledged once every flight before it is. */
  done: boolean;
  /** Failed with a flight beside it: whatever its calls answer later is ignored. */
  abandoned: boolean;
  /** Resolves once none of its calls runs any more. */
  settled: Promise<void>;
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
  /** Called after each batch is acknowledged (the next batch may be on its way already). */
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
  /** The batches on their way, oldest first: at most two (see #pump). */
  #flights: Flight[] = [];
  /** A flight is writing: the next one waits (lines reach the file in order). */
  #writing = false;
  /** Set while a failure's flights settle and the file is cut back: nothing starts meanwhile. */
  #blocked: Promise<void> | null = null;
  #flushScheduled = false;
  #fault: unknown = null;
  /** Bytes of the batch that failed: a batch at least this large must succeed to clear the fault. */
  #faultBytes = 0;
  /** A batch failed: the active file may hold bytes past its acknowledged size, to cut before appending. */
  #dirty = false;
  #pendingSwitch: { h: FileHandle; n: number; done: () => void; fail: (err: unknown) => void } | null = null;
  /** Handles of journals that appends no longer go to, still to be closed. */
  readonly #retired: FileHandle[] = [];
  /** A second descriptor of journal n, opened on first need: the fdatasync of a second flight runs on it. */
  #peer: { n: number; h: FileHandle | null } | null = null;
  #closed = false;
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
    for (const f of this.#flights) for (const p of f.batch) if (p.undo) out.push(p.undo);
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
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    queueMicrotask(() => {
      this.#flushScheduled = false;
      this.#pump();
    });
  }

  /** Nothing on its way: the file may change (a switch, a repair). */
  #idle(): boolean {
    return !this.#writing && !this.#flights.length && !this.#blocked;
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
      if (this.#idle()) this.#applySwitch();
    });
  }

  /** Close the handles of journals that appends no longer go to. */
  async closeRetired(): Promise<void> {
    for (let h = this.#retired.pop(); h; h = this.#retired.pop()) await h.close().catch(() => {});
  }

  async closeActive(): Promise<void> {
    this.#closed = true;
    const peer = this.#peer?.h;
    this.#peer = null;
    if (peer) await peer.close().catch(() => {});
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
    if (this.#peer?.h) this.#retired.push(this.#peer.h);
    this.#peer = null;
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

  /**
   * The second descriptor of the active journal, or null while it is not open yet (opening it then).
   * Two fdatasyncs that run at once must not share a descriptor: Linux reports a write-back error
   * once per open file description, so the one that returned first could answer success for bytes
   * whose write-back failed while the other reports the error.
   */
  #peerHandle(): FileHandle | null {
    const n = this.#activeNum;
    if (this.#peer?.n === n) return this.#peer.h;
    const peer: { n: number; h: FileHandle | null } = { n, h: null };
    this.#peer = peer;
    open(journalPath(this.#o.dir, n), fsc.O_RDONLY | fsc.O_NOFOLLOW).then(
      (h) => {
        if (this.#peer !== peer || this.#closed) return void h.close().catch(() => {});
        peer.h = h;
        this.#pump();
      },
      () => {}, // stays null: batches then go one at a time
    );
    return null;
  }

  /**
   * Start the next batch when it may start: at once when nothing is on its way; beside one flight
   * whose fdatasync runs (its write done), so that lines queued meanwhile need not wait for that
   * fdatasync to end before their own begins. Never a third, never while the file must change (a
   * switch waiting, bytes to cut back), never while faulty.
   */
  #pump(): void {
    if (!this.#queue.length || this.#writing || this.#blocked) return;
    if (this.#flights.length) {
      if (this.#flights.length > 1 || !this.#o.fsync || this.#pendingSwitch || this.#dirty || this.#fault) return;
      if (!this.#peerHandle()) return;
    }
    void this.#fly();
  }

  async #fly(): Promise<void> {
    let release = () => {};
    const flight: Flight = {
      batch: this.#queue,
      bytes: 0,
      syncOn: null,
      done: false,
      abandoned: false,
      settled: new Promise<void>((r) => (release = r)),
    };
    this.#queue = [];
    this.#flights.push(flight);
    this.#writing = true;
    let writing = true;
    try {
      const buf = Buffer.from(flight.batch.map((p) => p.line).join(''), 'utf8');
      flight.bytes = buf.length;
      const beside = this.#flights.length > 1 ? this.#flights[0] : undefined;
      if (!beside) {
        if (this.#dirty) await this.#repair();
        this.#applySwitch();
      }
      for (let off = 0; off < buf.length;) off += await this.#io.write(this.#active, buf, off, buf.length - off);
      this.#writing = writing = false;
      if (flight.abandoned) return;
      flight.syncOn = beside?.syncOn === this.#active ? (this.#peer?.h ?? null) : this.#active;
      this.#pump();
      if (this.#o.fsync && buf.length) await this.#io.datasync(must(flight.syncOn, 'a journal descriptor'));
      if (flight.abandoned) return;
      flight.done = true;
      this.#settle();
    } catch (err) {
      if (writing) this.#writing = false;
      if (!flight.abandoned) this.#fail(err, flight.bytes);
    } finally {
      release();
    }
  }

  /** Acknowledge the flights that are done, oldest first, as far as the first one that is not. */
  #settle(): void {
    for (let f = this.#flights[0]; f?.done; f = this.#flights[0]) {
      this.#flights.shift();
      this.#sizes.set(this.#activeNum, this.activeBytes() + f.bytes);
      if (f.bytes) {
        this.batches++;
        // only as many bytes as failed, reaching the disk, prove it takes writes again
        if (this.#fault && f.bytes >= this.#faultBytes) {
          this.#fault = null;
          this.#o.onRecover?.();
        }
      }
      for (const p of f.batch) {
        if (p.undo) this.#o.acknowledged?.(p.undo);
        p.resolve();
      }
      this.#o.afterBatch();
    }
    if (this.#idle()) this.#applySwitch();
    this.#pump();
  }

  /**
   * A batch failed: roll back and reject every commit not yet acknowledged (the flight beside it, done
   * or not, and everything queued: memory must hold acknowledged commits only, and bytes written after
   * unacknowledged ones are cut away with them). Once no call of those flights runs any more, the file
   * is cut back to its acknowledged size (tried again before the next batch if that fails).
   */
  #fail(err: unknown, bytes: number): void {
    const flights = this.#flights;
    const failed = [...flights.flatMap((f) => f.batch), ...this.#queue];
    for (const f of flights) f.abandoned = true;
    this.#flights = [];
    this.#queue = [];
    this.#dirty = true;
    // a retry of the same size must pass, whatever smaller batch failed after this one
    this.#faultBytes = this.#fault ? Math.max(this.#faultBytes, bytes) : bytes;
    this.#fault = err;
    this.#o.rollback(failed.flatMap((p) => (p.undo ? [p.undo] : [])).reverse());
    const failure = this.#o.failure ? this.#o.failure(err) : err;
    for (const p of failed) p.reject(failure);
    this.#pendingSwitch?.fail(err);
    this.#pendingSwitch = null;
    this.#o.onFault?.(err);
    const blocked: Promise<void> = Promise.all(flights.map((f) => f.settled))
      .then(() => this.#repair())
      .catch(() => {})
      .finally(() => {
        if (this.#blocked === blocked) this.#blocked = null;
        if (this.#idle()) this.#applySwitch();
        this.#pump();
      });
    this.#blocked = blocked;
  }
}
