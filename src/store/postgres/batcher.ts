/**
 * Micro-batching for the PostgreSQL store: calls made while the event loop is busy are sent to the
 * database together, as one statement. On a loaded daemon a round trip's fixed cost (two process
 * wake-ups, a transaction, a WAL flush for a commit) is what a request on PostgreSQL costs most; a
 * batch pays it once for every call in it (the embedded store's group commit does the same for its
 * fsyncs).
 *
 * A call waits at most until the end of the current turn of the event loop (setImmediate) when a
 * slot is free; while `maxInFlight` batches are at the database, new calls queue and go together
 * in the next batch once one returns. So an idle daemon sends each call alone, at once, and a busy
 * one sends fewer, fuller statements.
 */
import { must } from '../../must.js';

/** The answer for one call of a batch: its value, or the error that call (alone) gets. */
export type Settled<O> = { ok: true; value: O } | { ok: false; error: unknown };

export interface BatcherOptions<I> {
  /** Batches at the database at once (at least 1). */
  maxInFlight: number;
  /** The most weight one batch carries (a call heavier than this goes alone). */
  maxWeight: number;
  /** A call's weight (default 1): the keys of a read, say. */
  weight?: (item: I) => number;
  /**
   * Made afresh each time queued calls are sent: told of every call in turn, in the order made,
   * answers whether it may go now (in a batch being made or with those still at the database).
   * At the first that may not, sending stops; it and the calls after it wait for a batch to come
   * back. It must let a call go when nothing is at the database. Default: any may go.
   */
  joinable?: () => (item: I) => boolean;
}

interface Waiting<I, O> {
  item: I;
  resolve: (v: O) => void;
  reject: (e: unknown) => void;
}

export interface Batcher<I, O> {
  submit(item: I): Promise<O>;
  /** Calls queued or at the database. */
  readonly pending: number;
}

/**
 * `run` gets the calls of one batch in the order they were made and answers each of them (same
 * order, same length). If it throws, every call of the batch rejects with that error.
 */
export function createBatcher<I, O>(
  run: (items: I[]) => Promise<Settled<O>[]>,
  opts: BatcherOptions<I>,
): Batcher<I, O> {
  const queue: Waiting<I, O>[] = [];
  const weightOf = opts.weight ?? (() => 1);
  const maxInFlight = Math.max(1, Math.floor(opts.maxInFlight));
  let inFlight = 0;
  let inBatches = 0;
  let scheduled = false;

  const schedule = () => {
    if (scheduled || inFlight >= maxInFlight || !queue.length) return;
    scheduled = true;
    setImmediate(pump);
  };

  function pump(): void {
    scheduled = false;
    const goes = opts.joinable?.();
    let held = false;
    while (!held && inFlight < maxInFlight && queue.length) {
      let weight = 0;
      let n = 0;
      while (n < queue.length) {
        const item = must(queue[n]).item;
        const w = weightOf(item);
        if (n > 0 && weight + w > opts.maxWeight) break;
        if (goes && !goes(item)) {
          held = true;
          break;
        }
        weight += w;
        n++;
      }
      if (n) send(queue.splice(0, n));
    }
  }

  function send(batch: Waiting<I, O>[]): void {
    inFlight++;
    inBatches += batch.length;
    let answered: Promise<Settled<O>[]>;
    try {
      answered = run(batch.map((w) => w.item));
    } catch (err) {
      answered = Promise.reject(err);
    }
    const done = () => {
      inFlight--;
      inBatches -= batch.length;
    };
    answered
      .then(
        (results) => {
          done();
          batch.forEach((w, i) => {
            const r = results[i];
            if (!r) w.reject(new Error('store: a batched call got no answer'));
            else if (r.ok) w.resolve(r.value);
            else w.reject(r.error);
          });
        },
        (err: unknown) => {
          done();
          batch.forEach((w) => w.reject(err));
        },
      )
      .finally(() => {
        // what queued meanwhile goes now, together: it has waited a round trip already
        if (queue.length) pump();
      });
  }

  return {
    submit(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        schedule();
      });
    },
    get pending() {
      return queue.length + inBatches;
    },
  };
}
