/**
 * The deletions of ended events (delivered, or failed for good) in batches: a fan-out to a hundred
 * apps ends a hundred pending records within a few milliseconds, and a commit of each was a journal
 * entry, an expectation check and (often) an fdatasync of its own. Here the records that end while
 * no batch is being written wait for the next turn of the event loop (the answers read in the same
 * turn join them), and those that end while one is being written go in the next: one commit, with
 * one expectation per record (still as its attempt holds it), at most one commit under way at once.
 *
 * Durability is the same as with a commit per record: record (record.ts) waits for the batch before
 * the delivery log says delivered or failed, and whatever nothing acknowledged stays pending. A
 * daemon that dies (or cannot write) between an attempt and its batch leaves the record pending and
 * leased to itself, so the event is sent again, **marked as a retry**, never silently twice: a daemon
 * alone on its store takes its dead leases over at start and counts the attempt they were under
 * (pending.ts takeOverDeadLeases: `unrecorded`); where daemons share the store, the lease runs out
 * and the claim that takes it over says so (`leaseTakenFrom`). Either way the next attempt's retry
 * number says the app may have seen it (pending.ts mayHaveBeenSent).
 *
 * A batch whose commit conflicts (one of its records changed meanwhile: our own claim renewed a
 * lease, another daemon took one over, a `deliveries cancel`) wrote nothing: each of its records is
 * then ended on its own by replacePending, which tells which are still ours.
 */
import { StoreConflict, type Change, type Expectation, type Store } from '../../store/types.js';
import type { PendingDelivery } from '../../model/delivery.js';
import { PENDING_TABLE, replacePending, type Ours } from '../pending.js';

/** Records per commit at most (a drain's round fans out to at most this many apps at once, typically). */
const MAX_BATCH = 256;

interface Ending {
  p: PendingDelivery;
  ours: Ours;
  done: (kept: boolean) => void;
  fail: (e: unknown) => void;
}

export interface EndBatches {
  /**
   * Delete `p` (as its attempt holds it) in the next batch: true once it is gone, false when it was no longer ours to
   * end (replacePending); rejects when the store could not write it.
   */
  end(p: PendingDelivery, ours: Ours): Promise<boolean>;
}

export function createEndBatches(store: Store): EndBatches {
  let queued: Ending[] = [];
  let writing = false;

  /** One batch: one commit, or, on a conflict, each record on its own. */
  async function write(batch: Ending[]): Promise<void> {
    const changes = batch.map((e): Change => ({ table: PENDING_TABLE, id: e.p.id, value: null }));
    const expect = batch.map((e): Expectation => ({ table: PENDING_TABLE, id: e.p.id, value: e.p }));
    try {
      await store.commit(changes, expect);
    } catch (err) {
      if (!(err instanceof StoreConflict)) return batch.forEach((e) => e.fail(err));
      await Promise.all(
        batch.map((e) =>
          replacePending(store, e.p, null, e.ours).then(
            (kept) => e.done(kept),
            (err2: unknown) => e.fail(err2),
          ),
        ),
      );
      return;
    }
    for (const e of batch) e.done(true);
  }

  async function run(): Promise<void> {
    writing = true;
    try {
      // the records ended in this turn of the loop go together
      await new Promise<void>((r) => setImmediate(r));
      while (queued.length) {
        const batch = queued.length > MAX_BATCH ? queued.splice(0, MAX_BATCH) : queued;
        if (batch === queued) queued = [];
        await write(batch);
      }
    } finally {
      writing = false;
    }
  }

  return {
    end(p, ours) {
      return new Promise<boolean>((done, fail) => {
        queued.push({ p, ours, done, fail });
        if (!writing) void run();
      });
    },
  };
}
