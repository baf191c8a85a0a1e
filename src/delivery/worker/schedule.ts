/**
 * Stage 6, schedule: a retry recorded is made on time, whatever the idle poll's pace (the poller
 * looks for due events at its time at the latest). Any daemon's claim takes it then.
 */
import type { Finished, WorkerState } from './state.js';

export function schedule(w: WorkerState, f: Finished): void {
  if (f.verdict === 'retry' && f.next) w.wakeAt(f.next.nextAt);
}
