/**
 * A replay of an event (`rec`, as logged): one attempt now, marked as a replay, outside the
 * schedule. A retrying event that the replay delivered is done; one it did not deliver keeps its
 * schedule (its next attempt counts the replay). An ended event takes the replay's outcome.
 */
import type { AppRecord } from '../../model/identity.js';
import type { DeliveryRecord, StateChange } from '../../model/delivery.js';
import { applyEntry, type LogEntry } from '../log.js';
import { leasedElsewhere, PENDING_TABLE, replacePending } from '../pending.js';
import { must } from '../../must.js';
import type { WorkerState } from './state.js';

export async function replay(w: WorkerState, rec: DeliveryRecord, app: AppRecord): Promise<DeliveryRecord> {
  const { store, clock, config, dispatcher, instanceId } = w.deps;
  const { result: r, entry } = await dispatcher.track(
    dispatcher.attempt(dispatcher.resend(rec), app, {
      interactive: false,
      budgetMs: config.deliveryEventTimeoutMs,
      retryNum: rec.attempts.length,
      replay: true,
    }),
  );
  const delivered = r.outcome === 'acked' || r.outcome === 'response';
  const p = await store.get(PENDING_TABLE, rec.id);
  const at = dispatcher.iso();
  let state: StateChange;
  if (p && !w.inFlight.has(rec.id) && !leasedElsewhere(p, instanceId, clock.now())) {
    if (delivered && (await replacePending(store, p, null, () => false))) state = { at, state: 'delivered' };
    else {
      state = { at, state: 'retrying', nextAttemptAt: new Date(p.nextAt).toISOString() };
      // one try: only a number in a header
      if (!delivered) await replacePending(store, p, { ...p, replays: (p.replays ?? 0) + 1 }, () => false);
    }
  } else if (!p) state = { at, state: delivered ? 'delivered' : 'failed' };
  // an attempt of it runs now: it decides
  else state = { at, state: rec.state, ...(rec.nextAttemptAt ? { nextAttemptAt: rec.nextAttemptAt } : {}) };
  const e: LogEntry = { id: rec.id, attempt: entry, state };
  dispatcher.log.append(e);
  return must(applyEntry(rec, e));
}
