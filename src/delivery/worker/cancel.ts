/**
 * Ending events before their schedule does: `deliveries cancel`, a deleted app's events (at once,
 * or found by the sweep), and an event whose app was deleted when its retry came.
 */
import type { DeliveryRecord, PendingDelivery } from '../../model/delivery.js';
import { leasedElsewhere, PENDING_TABLE, replacePending, type Ours } from '../pending.js';
import { settled, type WorkerState } from './state.js';

/**
 * End a retrying event now: no further attempt, the log says cancelled and why. False: it was no
 * longer ours to end.
 */
export async function cancelPending(w: WorkerState, p: PendingDelivery, reason: string, ours: Ours): Promise<boolean> {
  const { store, socket, logger, dispatcher } = w.deps;
  if (!(await replacePending(store, p, null, ours))) return false;
  await socket.discard(p.appId, p.id, reason); // gone before the log says cancelled
  logger.info('delivery cancelled', { deliveryId: p.id, appId: p.appId, reason });
  dispatcher.log.append({ id: p.id, state: { at: dispatcher.iso(), state: 'cancelled', cancelReason: reason } });
  return true;
}

/**
 * `deliveries cancel`: undefined when the event is not waiting for a retry (or an attempt of it runs now, here or
 * elsewhere).
 */
export async function cancel(w: WorkerState, id: string, reason: string): Promise<DeliveryRecord | undefined> {
  const { store, instanceId, clock, dispatcher } = w.deps;
  const p = await store.get(PENDING_TABLE, id);
  if (!p || w.inFlight.has(id) || leasedElsewhere(p, instanceId, clock.now())) return undefined;
  w.inFlight.add(id);
  try {
    // one try: a change meanwhile means an attempt started somewhere
    if (!(await cancelPending(w, p, reason, () => false))) return undefined;
  } finally {
    settled(w, id);
  }
  return dispatcher.log.get(id);
}

/** A deleted app's waiting events end at once, as cancelled (those in flight end at their next attempt). */
export async function cancelForApp(w: WorkerState, appId: string, reason = 'the app was deleted'): Promise<void> {
  const { store, instanceId, clock } = w.deps;
  for (const p of await store.find(PENDING_TABLE, 'appId', appId)) {
    if (w.inFlight.has(p.id) || leasedElsewhere(p, instanceId, clock.now())) continue;
    w.inFlight.add(p.id);
    try {
      await cancelPending(w, p, reason, () => false);
    } finally {
      settled(w, p.id);
    }
  }
}

/** Fallback for deletions that did not call cancelForApp: apps of pending events (`pending`, as read) that are gone. */
export async function sweepDeletedApps(w: WorkerState, pending: readonly PendingDelivery[]): Promise<void> {
  const { apps } = w.deps;
  const appIds = new Set(pending.map((p) => p.appId));
  for (const appId of appIds) if (!(await apps.byId(appId))) await cancelForApp(w, appId);
}
