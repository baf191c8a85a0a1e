/**
 * The worker's sweep, now and then beside its polls: what nothing else ends. The events of apps
 * deleted without cancelForApp (cancel.ts), and the shared event bodies no pending record names
 * any more (event-bodies.ts): the bodies are read before the pending records, as that module's
 * reasoning needs.
 */
import { BODIES_TABLE, unreferenced } from '../event-bodies.js';
import { PENDING_TABLE } from '../pending.js';
import { sweepDeletedApps } from './cancel.js';
import type { WorkerState } from './state.js';

export async function sweep(w: WorkerState): Promise<void> {
  const { store } = w.deps;
  const bodies = await store.all(BODIES_TABLE);
  const pending = await store.all(PENDING_TABLE);
  const gone = unreferenced(bodies, pending);
  if (gone.length) await store.commit(gone);
  await sweepDeletedApps(w, pending);
}
