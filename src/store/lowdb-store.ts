/**
 * The durable store: a lowdb document (appreg.json) as the store of record, plus
 * append-only journal files (appreg.journal.<n>) that make each commit durable
 * with one small fdatasync instead of rewriting the whole document.
 *
 *  - Reads come from memory. commit() applies to memory at once, then queues a
 *    journal line; lines queued while a write is in flight go out together in
 *    one write + one fdatasync (group commit: journal-writer.ts).
 *  - Compaction (journal too big, or idle with a non-empty journal) folds the
 *    journals into the lowdb document (compaction.ts, data-file.ts).
 *  - Open never modifies a file it could not read: every file is parsed and
 *    checked before anything is truncated, created or rewritten (recovery.ts).
 *
 * One process may open a directory at a time (lowdb has no multi-writer story).
 * The file names and shapes are in format.ts.
 */
import path from 'node:path';
import { Compactor } from './compaction.js';
import { SnapshotWriter } from './data-file.js';
import { JournalWriter } from './journal-writer.js';
import { recover } from './recovery.js';
import { validateChanges } from './tables.js';
import type { Change, Store } from './types.js';

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

interface StoreStats {
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

export async function openLowdbStore(opts: LowdbStoreOptions): Promise<LowdbStore> {
  const dir = path.resolve(opts.dir);
  const recovered = await recover(dir);
  const { tables } = recovered;
  let lastSeq = recovered.lastSeq;
  let closing = false;
  let closePromise: Promise<void> | null = null;
  let lastCommitAt = Date.now();
  let commits = 0;

  const snapshot = new SnapshotWriter(dir, recovered.snapshot);
  const writer: JournalWriter = new JournalWriter({
    dir,
    active: recovered.active,
    activeNum: recovered.activeNum,
    journalSizes: recovered.journalSizes,
    fsync: opts.fsync ?? true,
    afterBatch: () => compactor.afterBatch(),
  });
  const compactor: Compactor = new Compactor({
    dir,
    writer,
    snapshot,
    // Captured synchronously: every seq <= lastSeq is in these tables.
    capture: () => ({ seq: lastSeq, tables: tables.snapshot() }),
    everyBytes: opts.compactEveryBytes ?? 4 * 1024 * 1024,
    idleMs: opts.compactIdleMs ?? 2000,
    lastCommitAt: () => lastCommitAt,
    closing: () => closing,
    onError: opts.onError,
  });
  if (writer.totalBytes() > 0) compactor.armIdle();

  return {
    get: (table, id) => tables.get(table, id),
    values: (table) => tables.values(table),
    count: (table) => tables.count(table),

    commit(changes: Change[]): Promise<void> {
      if (closing) return Promise.reject(new Error('store is closed'));
      if (writer.failed) return Promise.reject(writer.failed);
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
      commits++;
      lastCommitAt = Date.now();
      compactor.armIdle();
      return writer.enqueue(line);
    },

    stats: () => ({
      journalBytes: writer.totalBytes(),
      lastSeq,
      compactions: compactor.compactions,
      batches: writer.batches,
      commits,
    }),

    async compact() {
      if (closing) throw new Error('store is closed');
      if (writer.failed) throw writer.failed;
      if (compactor.running) await compactor.running;
      await compactor.start();
    },

    close(): Promise<void> {
      if (closePromise) return closePromise;
      closing = true;
      compactor.stopIdle();
      closePromise = (async () => {
        // Everything already committed reaches the journal first.
        await writer.enqueue('').catch(() => {});
        if (compactor.running) await compactor.running;
        await compactor.finish(lastSeq);
      })();
      return closePromise;
    },
  };
}
