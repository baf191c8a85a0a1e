/**
 * Stage 4, classify: what an attempt's outcome means. `classify` takes the attempt's result, and the
 * socket-mode queue's word when the queue sent (or dropped) a kept copy of the event meanwhile;
 * `decide`, once the event's own write is durable, what follows as of now: delivered, a retry (and
 * when, on the schedule), failed, or released (the worker stops).
 */
import { nextRetryDelayMs, retryable } from '../retry-policy.js';
import type { Attempted } from '../dispatcher.js';
import type { Attempt, Finished, WorkerState } from './state.js';

export function classify(w: WorkerState, a: Attempt, made: Attempted): void {
  a.result = made.result;
  const kept = w.keptWhileInFlight.get(a.p.id);
  if (kept) w.keptWhileInFlight.delete(a.p.id);
  if (kept && made.result.outcome !== 'acked') {
    a.attempts = [made.entry, w.deps.dispatcher.entryOf(kept, a.retryNum + 1)];
    a.result = kept;
    a.final = true;
  } else a.attempts = [made.entry];
}

export function decide(w: WorkerState, f: Finished): void {
  const r = f.result;
  const delivered = r.outcome === 'acked' || r.outcome === 'response';
  const delay =
    !f.final && !delivered && retryable(r) && !w.stopped ? nextRetryDelayMs(w.schedule, f.p.retryNum) : undefined;
  if (delay !== undefined) {
    f.verdict = 'retry';
    f.retryAt = w.deps.clock.now() + delay;
  } else if (delivered) f.verdict = 'delivered';
  else if (!w.stopped || !retryable(r) || f.final) f.verdict = 'failed';
  // stopping: the event stays pending, free for the next daemon (or this one's restart) at once
  else f.verdict = 'released';
}
