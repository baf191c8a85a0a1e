/**
 * Stage 2, prepare: an attempt of an event this daemon holds, for its app as the app is now: the
 * delivery to send (built again from the pending record for a retry: the app's URL may have
 * changed) and the attempt number apps see.
 */
import type { AppRecord } from '../../model/identity.js';
import type { PendingDelivery } from '../../model/delivery.js';
import type { Outgoing } from '../log.js';
import { attemptNumber, NO_ATTEMPTS, NOT_SENT, outgoingOf, type Attempt, type WorkerState } from './state.js';

/**
 * `sent`: the delivery as enqueueEvents built it for a first attempt, or the record's payload with its body
 * (event-bodies.ts payloadOf) for a retry, built into one here.
 */
export function prepare(
  w: WorkerState,
  p: PendingDelivery,
  app: AppRecord,
  timeoutMs: number,
  sent: { out: Outgoing } | { payload: Record<string, unknown> },
): Attempt {
  return {
    p,
    app,
    ours: w.mine,
    retryNum: attemptNumber(p),
    out: 'out' in sent ? sent.out : outgoingOf(w, app, p, sent.payload),
    timeoutMs,
    attempts: NO_ATTEMPTS,
    result: NOT_SENT,
    final: false,
    verdict: 'failed',
    retryAt: 0,
    next: undefined,
  };
}
