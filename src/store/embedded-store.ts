/**
 * The embedded store: a data file (appreg.json; lowdb wrote it once, nothing of lowdb is left) as the store of record,
 * plus append-only journal files (appreg.journal.<n>) that make each commit durable
 * with one small fdatasync instead of rewriting the whole document.
 *
 *  - Reads come from memory (records are kept as JSON strings: tables.ts) and return
 *    fresh parses. commit() checks its expectations against memory, applies to memory
 *    at once (so nothing can interleave, and the next commit checks against it), then
 *    queues a journal line; lines queued while a write is in flight go out together in
 *    one write + one fdatasync (group commit: journal-writer.ts).
 *  - Durable before visible: until its line is fdatasynced a commit may still be undone,
 *    so a read that meets a record it changed waits for the commits pending then to settle
 *    and answers with what is durable (durable-reads.ts); a read that meets none waits for
 *    nothing. PostgreSQL has this by itself (a commit is visible at COMMIT).
 *  - A write that fails (disk full, I/O error) rolls its commits, and every commit
 *    queued behind them, back out of memory before rejecting them (StoreUnavailable);
 *    no read answered with them meanwhile (above), so no request sees a record whose
 *    commit failed; health() reports the fault, and
 *    the next commit (or a retry every retryMs, as large as the write that failed:
 *    an empty line padded with spaces) tries again, so writes recover by themselves.
 *  - Compaction writes only acknowledged commits: unacknowledged ones are undone
 *    in the copy it captures.
 *  - Compaction (journal too big, or idle with a non-empty journal) folds the
 *    journals into the data file (compaction.ts, data-file.ts).
 *  - Open never modifies a file it could not read: every file is parsed and
 *    checked before anything is truncated, created or rewritten (recovery.ts).
 *
 * One process may open a directory at a time (this is the store of one daemon; several
 * daemons share PostgreSQL instead).
 * The file names and shapes are in format.ts.
 */
import path from 'node:path';
import { Compactor } from './compaction.js';
import { SnapshotWriter } from './data-file.js';
import { nodeIo, type StoreIo } from './fsync.js';
import { JournalWriter } from './journal-writer.js';
import { durableReads, PendingRecords } from './durable-reads.js';
import {
  LocalChannels,
  HitWindows,
  checkExpectations,
  chooseClaims,
  tableReads,
  validateExpectations,
} from './embedded-ops.js';
import { recover } from './recovery.js';
import { TableSnapshot } from './snapshot.js';
import { toJsonChanges, validateChanges, type JsonChange } from './tables.js';
import { transaction } from './transaction.js';
import {
  idUnstorable,
  jsonHoldsUnstorable,
  StoreUnavailable,
  StoreValueRefused,
  typed,
  type AnyTables,
  type Change,
  type ClaimRequest,
  type Expectation,
  type Store,
  type StoreEngine,
  type StoreLogger,
  type StoreReads,
  type TableMap,
} from './types.js';
import type { Tables as DaemonTables } from '../model/tables.js';
import { createLogger } from '../logger.js';
import { systemClock, type Clock, type Timer } from '../clock.js';
import { must } from '../must.js';
import { errnoOf, messageOf } from '../unknown-values.js';

/** What health() and every refused write say while the journal cannot be written. */
function reasonOf(err: unknown): string {
  const name = err instanceof Error ? err.name : undefined;
  return `the store cannot write: ${errnoOf(err) ?? name ?? 'error'} (${messageOf(err)})`;
}

export interface EmbeddedStoreOptions {
  dir: string;
  /** Compact when the active journal grows beyond this (default 4 MiB). */
  compactEveryBytes?: number;
  /** Compact after this long without commits while a journal is non-empty (default 2000; <= 0 or Infinity disables). */
  compactIdleMs?: number;
  /** fdatasync each batch before acknowledging it (default true; false only for benchmarks). */
  fsync?: boolean;
  /** Told about background compaction failures (the journals still hold the data). */
  onError?: (err: unknown) => void;
  /** Start a new, empty store although the directory holds state but no data file (appreg serve --allow-fresh). */
  allowFresh?: boolean;
  /**
   * More files whose existence means the directory held state, checked with the data file missing:
   * start.ts passes the key file when it existed before this start (it creates one on a first start).
   */
  stateFiles?: readonly string[];
  /** Where a torn journal tail cut at open is reported (warn); default: a logger on stderr. */
  logger?: StoreLogger;
  /** While a write has failed, retry with an empty commit this often (ms; default 1000). */
  retryMs?: number;
  /** Time and timers (idle compaction, the retry): the daemon's clock; default the system's. */
  clock?: Clock;
  /** The journal's file calls, for failure-injection tests only. */
  io?: Partial<StoreIo>;
  /**
   * Checks of what the files hold, run once they are read and before anything is written (a torn
   * tail cut, the first journal created): what it throws refuses the open, every file unchanged.
   */
  beforeWrite?: (reads: StoreReads) => Promise<void>;
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

/** What the embedded store offers beside the Store contract. */
interface EmbeddedExtras {
  stats(): StoreStats;
  /** Compact now (waits for a compaction already running, then runs one). */
  compact(): Promise<void>;
}

export type EmbeddedStore<TM extends TableMap = DaemonTables> = Store<TM> & EmbeddedExtras;

export async function openEmbeddedStore<TM extends TableMap = DaemonTables>(
  opts: EmbeddedStoreOptions,
): Promise<EmbeddedStore<TM>> {
  const dir = path.resolve(opts.dir);
  const logger = opts.logger ?? createLogger();
  const beforeWrite = opts.beforeWrite;
  const recovered = await recover(dir, {
    allowFresh: opts.allowFresh,
    stateFiles: opts.stateFiles,
    logger,
    ...(beforeWrite ? { beforeWrite: (t) => beforeWrite(typed(tableReads(t))) } : {}),
  });
  const { tables } = recovered;
  let lastSeq = recovered.lastSeq;
  let closing = false;
  let closePromise: Promise<void> | null = null;
  const clock = opts.clock ?? systemClock;
  let lastCommitAt = clock.now();
  let commits = 0;

  const snapshot = new SnapshotWriter(dir, recovered.snapshot);
  // the records of commits applied to memory but not yet durable: reads wait for them
  const pending = new PendingRecords();
  const writer: JournalWriter = new JournalWriter({
    dir,
    active: recovered.active,
    activeNum: recovered.activeNum,
    journalSizes: recovered.journalSizes,
    fsync: opts.fsync ?? true,
    acknowledged: (undo) => pending.acknowledged(undo),
    afterBatch: () => {
      pending.settle();
      compactor.afterBatch();
    },
    rollback: (undos) => {
      for (const u of undos) {
        tables.restore(u);
        lastSeq = u.seq - 1;
      }
      pending.undone(); // undos are every commit not acknowledged
      pending.settle();
    },
    onFault: (err) => {
      if (!faultLogged)
        logger.warn('store: writes to the journal fail; every write is refused (503) until the disk takes them again', {
          reason: reasonOf(err),
        });
      faultLogged = true;
      armRetry();
    },
    onRecover: () => {
      faultLogged = false;
      (logger.info ?? logger.warn).call(logger, 'store: the journal takes writes again', {});
    },
    failure: (err) => new StoreUnavailable(reasonOf(err), { cause: err }),
    io: { ...nodeIo, ...opts.io },
  });
  let faultLogged = false;
  // While faulty, an empty commit now and then finds out when the disk takes writes again.
  const retryMs = opts.retryMs ?? 1000;
  let retryTimer: Timer | null = null;
  const armRetry = () => {
    if (retryTimer || closing) return;
    retryTimer = clock.setTimeout(() => {
      retryTimer = null;
      if (closing || !writer.fault) return;
      // as large as the write that failed: a shorter one may fit where commits still do not
      return commitJson([], writer.faultBytes).catch(() => {}); // a failure re-arms through onFault
    }, retryMs);
  };
  const compactor: Compactor = new Compactor({
    dir,
    writer,
    snapshot,
    // Captured synchronously; commits not yet acknowledged are undone in the view (their
    // write may still fail and roll them back), so the snapshot holds acknowledged seqs only.
    capture: () => {
      const pending = writer.unacknowledged();
      return {
        seq: pending.length ? must(pending[0]).seq - 1 : lastSeq,
        tables: new TableSnapshot(tables.copyEntries(), pending),
      };
    },
    everyBytes: opts.compactEveryBytes ?? 4 * 1024 * 1024,
    idleMs: opts.compactIdleMs ?? 2000,
    lastCommitAt: () => lastCommitAt,
    clock,
    closing: () => closing,
    onError: opts.onError,
  });
  if (writer.totalBytes() > 0) compactor.armIdle();

  const hits = new HitWindows();
  const channels = new LocalChannels();

  /** Apply to memory now and queue the journal line (padded with spaces to `minBytes`); resolves when it is durable. */
  const commitJson = (changes: JsonChange[], minBytes = 0): Promise<void> => {
    const seq = lastSeq + 1;
    // The journal line is concatenated from the record strings: no second serialisation.
    let line = `{"seq":${seq},"changes":[`;
    for (let i = 0; i < changes.length; i++) {
      const c = must(changes[i]);
      line += `${i ? ',' : ''}{"table":${JSON.stringify(c.table)},"id":${JSON.stringify(c.id)},"value":${c.json ?? 'null'}}`;
    }
    line += ']}';
    // JSON allows whitespace after the value: a padded line reads back as the same entry
    line = (Buffer.byteLength(line) + 1 < minBytes ? line.padEnd(minBytes - 1, ' ') : line) + '\n';
    const undo = tables.applyWithUndo(++lastSeq, changes);
    pending.add(undo);
    commits++;
    lastCommitAt = clock.now();
    compactor.armIdle();
    return writer.enqueue(line, undo);
  };

  const store: StoreEngine & EmbeddedExtras = {
    kind: 'embedded',
    ...durableReads(tables, pending),
    transaction,

    commit(changes: readonly Change<AnyTables>[], expect?: readonly Expectation<AnyTables>[]): Promise<void> {
      if (closing) return Promise.reject(new Error('store is closed'));
      let json: JsonChange[];
      try {
        validateChanges(changes);
        validateExpectations(expect);
        // Serialise before touching memory: a value JSON cannot hold fails the
        // whole commit with nothing applied.
        json = toJsonChanges(changes);
        // neither store keeps a NUL (PostgreSQL cannot): refused alike here
        for (const c of json)
          if (idUnstorable(c.id) || idUnstorable(c.table) || (c.json !== null && jsonHoldsUnstorable(c.json)))
            throw new StoreValueRefused();
        checkExpectations(tables, expect);
      } catch (err) {
        return Promise.reject(err);
      }
      return commitJson(json);
    },

    async claim(req: ClaimRequest): Promise<object[]> {
      if (closing) throw new Error('store is closed');
      // Chosen and applied in one tick: no other commit can lease the same records in between.
      const { changes, records } = chooseClaims(tables, req);
      if (!changes.length) return [];
      await commitJson(changes);
      return records;
    },

    hit: async (key, windowMs, now, n) => hits.hit(key, windowMs, now, n),
    publish: (channel, payload) => channels.publish(channel, payload),
    subscribe: (channel, fn) => channels.subscribe(channel, fn),
    subscribed: () => Promise.resolve(),

    stats: () => ({
      journalBytes: writer.totalBytes(),
      lastSeq,
      compactions: compactor.compactions,
      batches: writer.batches,
      commits,
    }),

    health: () => (writer.fault ? { ok: false, reason: reasonOf(writer.fault) } : { ok: true }),

    async compact() {
      if (closing) throw new Error('store is closed');
      if (writer.fault) throw writer.fault;
      if (compactor.running) await compactor.running;
      await compactor.start();
    },

    close(opts?: { compact?: boolean }): Promise<void> {
      if (closePromise) return closePromise;
      closing = true;
      compactor.stopIdle();
      clock.clear(retryTimer);
      closePromise = (async () => {
        // Everything already committed reaches the journal first.
        await writer.enqueue('').catch(() => {});
        if (compactor.running) await compactor.running;
        if (opts?.compact !== false) return compactor.finish(lastSeq);
        // every commit is durable in the journal already: the next open replays it (at most one
        // compaction's worth, compactEveryBytes) instead of this close folding it into the data file
        await writer.closeActive().catch(() => {});
        await writer.closeRetired();
      })();
      return closePromise;
    },
  };
  return typed<TM, EmbeddedExtras>(store);
}
