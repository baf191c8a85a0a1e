/**
 * Stage 5, record: what decide said, written: the pending record replaced (the retry's record), or
 * removed (delivered, failed: in a batch, end-batch.ts), or released (the worker stops: the attempt just made may have
 * reached the app, so the next one is marked a retry); a failed socket-mode event's copy in the
 * queue discarded; then the attempts and the state they left in the delivery log, only once the
 * pending record says so (a reader must not see "failed" while the queue still holds the event).
 * The change stands only while the record is still the attempt's (`ours`): cancelled or taken over
 * meanwhile, whoever has it now writes the log.
 */
import type { StateChange } from '../../model/delivery.js';
import type { LogEntry } from '../log.js';
import { mayHaveBeenSent, releasedAfter, replacePending } from '../pending.js';
import type { Finished, WorkerState } from './state.js';

/** The entries logged; undefined when the event was no longer ours. */
export async function record(w: WorkerState, f: Finished): Promise<LogEntry[] | undefined> {
  const { store, clock, socket, logger, dispatcher } = w.deps;
  const p = f.p;
  let kept: boolean;
  if (f.verdict === 'retry') {
    f.next = { ...releasedAfter(p, f.retryAt), retryNum: p.retryNum + 1 };
    kept = await replacePending(store, p, f.next, f.ours);
  } else if (f.verdict === 'released') {
    kept = await replacePending(
      store,
      p,
      { ...releasedAfter(p, clock.now()), unrecorded: mayHaveBeenSent(p) + 1 },
      f.ours,
    );
  } else {
    kept = await w.ends.end(p, f.ours); // in a batch with the records ended in the same turn (end-batch.ts)
    // The worker gave up: a socket-mode app's copy in the queue goes too, before the log says failed.
    if (kept && f.verdict === 'failed' && !f.final && !w.stopped && f.app.manifest.socketMode)
      await socket.discard(f.app.id, p.id, 'the retry schedule ran out before the app connected');
  }
  if (!kept)
    return void logger.warn('delivery attempt outcome dropped: the event was ended or taken over meanwhile', {
      deliveryId: p.id,
      outcome: f.result.outcome,
    });
  const state: StateChange = {
    at: dispatcher.iso(),
    state: f.verdict === 'retry' ? 'retrying' : f.verdict === 'delivered' ? 'delivered' : 'failed',
    ...(f.verdict === 'retry' && f.next ? { nextAttemptAt: new Date(f.next.nextAt).toISOString() } : {}),
  };
  const last = f.attempts.length - 1;
  const entries = f.attempts.map((attempt, i): LogEntry =>
    i === last ? { id: p.id, attempt, state } : { id: p.id, attempt },
  );
  for (const e of entries) dispatcher.log.append(e);
  return entries;
}
