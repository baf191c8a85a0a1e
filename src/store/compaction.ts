/**
 * Compaction folds the journals into the data file: appends switch to
 * appreg.journal.<n+1>, then memory is captured with journalSeq = the last seq
 * applied to memory at that instant, streamed into a temp file and renamed,
 * fsynced with its directory, and only then are the older journals deleted.
 * Replay skips seq <= journalSeq, so lines that reach the new journal but are
 * already in the snapshot are harmless.
 *
 * It runs when the active journal grows past a threshold, after a quiet spell with
 * a non-empty journal, on demand, and a last time at close.
 */
import type { Clock, Timer } from '../clock.js';
import type { SnapshotContent, SnapshotWriter } from './data-file.js';
import { fsyncPath } from './fsync.js';
import { openJournal } from './journal-file.js';
import type { JournalWriter } from './journal-writer.js';

export interface CompactorOptions {
  dir: string;
  writer: JournalWriter;
  snapshot: SnapshotWriter;
  /** Takes memory at one instant: its last seq and tables. */
  capture: () => SnapshotContent;
  /** Compact when the active journal grows beyond this. */
  everyBytes: number;
  /** Compact after this long without commits while a journal is non-empty (<= 0 or Infinity: never). */
  idleMs: number;
  /** When the last commit was made (a time of `clock`). */
  lastCommitAt: () => number;
  /** The idle timer's. */
  clock: Clock;
  /** True once the store is closing: nothing new starts. */
  closing: () => boolean;
  /** Told about background compaction failures (the journals still hold the data). */
  onError?: (err: unknown) => void;
}

export class Compactor {
  readonly #o: CompactorOptions;
  readonly #idleEnabled: boolean;
  #compacting: Promise<void> | null = null;
  #idleTimer: Timer | null = null;
  compactions = 0;

  constructor(opts: CompactorOptions) {
    this.#o = opts;
    this.#idleEnabled = Number.isFinite(opts.idleMs) && opts.idleMs > 0;
  }

  /** The running compaction (never rejects), or null. */
  get running(): Promise<void> | null {
    return this.#compacting;
  }

  /**
   * A compaction rewrites the whole data file (streamed: only the capture, a copy of each
   * table's ids and record texts, is synchronous), so let the journal grow to the file's size before folding
   * it in: the rewrite cost per journaled byte stays constant as the data grows.
   */
  #threshold(): number {
    return Math.max(this.#o.everyBytes, this.#o.snapshot.bytes);
  }

  #overThreshold(): boolean {
    return this.#o.writer.activeBytes() > this.#threshold();
  }

  /** After a journal batch: compact if the active journal grew too big. */
  afterBatch(): void {
    if (!this.#o.closing() && !this.#compacting && this.#overThreshold()) void this.start();
  }

  /** Starts a compaction (unless one runs); the result rejects if it fails, `running` never does. */
  start(): Promise<void> {
    if (this.#compacting) return this.#compacting;
    const { writer, closing } = this.#o;
    if (writer.fault || closing()) return Promise.resolve();
    const run = this.#compactOnce();
    this.#compacting = run
      .catch((err) => {
        this.#o.onError?.(err);
      })
      .finally(() => {
        this.#compacting = null;
        if (!closing() && !writer.fault && this.#overThreshold()) void this.start();
        else if (!closing() && !writer.fault && writer.totalBytes() > 0) this.armIdle();
      });
    return run;
  }

  async #compactOnce(): Promise<void> {
    const { dir, writer, snapshot } = this.#o;
    const n = writer.activeNum + 1;
    const h = await openJournal(dir, n);
    try {
      await fsyncPath(dir);
    } catch (err) {
      await h.close();
      throw err;
    }
    try {
      await writer.switchTo(h, n);
    } catch (err) {
      // refused (the writer is faulty): appends stay on the old journal, this handle is nobody's
      await h.close().catch(() => {});
      throw err;
    }
    await writer.closeRetired();
    // The writer is faulty (a full or failing disk): the snapshot would most likely fail too; retry once writes
    // succeed.
    if (writer.fault) throw writer.fault;
    await snapshot.write(this.#o.capture);
    await writer.deleteJournals((k) => k >= n);
    this.compactions++;
  }

  /** Arm the idle timer (if enabled, not armed and not closing). */
  armIdle(): void {
    const { idleMs, lastCommitAt, closing, writer, clock } = this.#o;
    if (!this.#idleEnabled || this.#idleTimer || closing()) return;
    const wait = Math.max(1, lastCommitAt() + idleMs - clock.now());
    this.#idleTimer = clock.setTimeout(() => {
      this.#idleTimer = null;
      if (closing() || writer.fault) return undefined;
      if (clock.now() - lastCommitAt() < idleMs) return this.armIdle();
      // the compaction's promise, for a test clock to wait for (start's own never rejects: `running`)
      if (writer.totalBytes() > 0 && !this.#compacting)
        return this.start().then(
          () => {},
          () => {},
        );
      return undefined;
    }, wait);
  }

  stopIdle(): void {
    this.#o.clock.clear(this.#idleTimer);
    this.#idleTimer = null;
  }

  /**
   * At close, once nothing writes any more: fold everything into the data file
   * (if it does not already hold it all), close the journals and delete them.
   */
  async finish(lastSeq: number): Promise<void> {
    const { writer, snapshot } = this.#o;
    try {
      if (!writer.fault) {
        const needed = lastSeq > snapshot.seq || !snapshot.exists || writer.totalBytes() > 0;
        if (needed) await snapshot.write(this.#o.capture);
        await writer.closeActive();
        await writer.closeRetired();
        await writer.deleteJournals(() => false);
        if (needed) this.compactions++;
      }
    } finally {
      await writer.closeActive().catch(() => {});
      await writer.closeRetired();
    }
  }
}
