/**
 * Stage 1, claim: lease the due events (store.claim; each attempt is made once across daemons) and
 * hold those this daemon is not attempting already.
 */
import type { PendingDelivery } from '../../model/delivery.js';
import { PENDING_TABLE } from '../pending.js';
import type { WorkerState } from './state.js';

/** Due events leased per tick. */
export const CLAIM_LIMIT = 200;

/** The events leased now (`leased`: how many were due) and those this daemon now holds (`held`, in inFlight). */
export async function claim(w: WorkerState, now: number): Promise<{ leased: number; held: PendingDelivery[] }> {
  const left = (w.leftDuringClaim = new Set());
  let due: PendingDelivery[];
  try {
    due = await w.deps.store.claim({
      table: PENDING_TABLE,
      dueField: 'nextAt',
      now,
      owner: w.deps.instanceId,
      leaseUntil: now + w.leaseMs,
      limit: CLAIM_LIMIT,
    });
  } finally {
    w.leftDuringClaim = undefined;
  }
  const held: PendingDelivery[] = [];
  for (const p of due) {
    // our own attempt, its lease just renewed (or since ended)
    if (w.inFlight.has(p.id) || left.has(p.id) || w.stopped) continue;
    w.inFlight.add(p.id);
    held.push(p);
  }
  return { leased: due.length, held };
}
