/**
 * Pending events and their leases (delivery/pending.ts, store/lease.ts): what counts as an attempt
 * that may have reached the app unrecorded, so that the next one is marked a retry, and what counts
 * as only a lease renewed.
 */
import t from 'tap';
import { onlyLeaseRenewed } from '../../src/store/lease.js';
import { mayHaveBeenSent, PENDING_TABLE, releasedAfter, takeOverDeadLeases } from '../../src/delivery/pending.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { PendingDelivery } from '../../src/model/delivery.js';
import { must } from '../../src/must.js';

const pending = (extra: Partial<PendingDelivery> = {}): PendingDelivery => ({
  id: 'dlv_1',
  appId: 'app_1',
  workspaceId: 'ws_1',
  userId: 'wu_1',
  eventType: 'NEW_MESSAGE',
  payload: {},
  retryNum: 0,
  nextAt: 1000,
  createdAt: '2026-01-01T00:00:00.000Z',
  ...extra,
});

t.test('mayHaveBeenSent: the attempts counted, and the one of a lease taken over', async (t) => {
  t.equal(mayHaveBeenSent(pending()), 0, 'a fresh event: none');
  t.equal(mayHaveBeenSent(pending({ leaseOwner: 'a', leaseUntil: 5 })), 0, 'a lease begun on it: none');
  t.equal(mayHaveBeenSent(pending({ unrecorded: 2 })), 2, 'those counted');
  t.equal(mayHaveBeenSent(pending({ leaseOwner: 'b', leaseTakenFrom: 'a' })), 1, 'a lease taken over: one');
  t.equal(mayHaveBeenSent(pending({ unrecorded: 2, leaseTakenFrom: 'a' })), 3, 'both');
});

t.test('releasedAfter: no lease left, the attempt of a lease taken over counted', async (t) => {
  t.same(
    releasedAfter(pending({ leaseOwner: 'b', leaseUntil: 9, leaseTakenFrom: 'a', unrecorded: 1 }), 2000),
    pending({ nextAt: 2000, unrecorded: 2 }),
  );
  t.same(
    releasedAfter(pending({ leaseOwner: 'b', leaseUntil: 9 }), 2000),
    pending({ nextAt: 2000 }),
    'nothing to count',
  );
});

t.test('onlyLeaseRenewed: the same owner renewing (or taking back its own lease) is no rival change', async (t) => {
  const held = pending({ leaseOwner: 'a', leaseUntil: 10 });
  t.ok(onlyLeaseRenewed(held, { ...held, leaseUntil: 20 }), 'renewed');
  t.ok(onlyLeaseRenewed(held, { ...held, leaseUntil: 20, leaseTakenFrom: 'a' }), 'its own lease, run out, taken back');
  t.notOk(onlyLeaseRenewed(held, { ...held, leaseOwner: 'b', leaseTakenFrom: 'a' }), 'another owner');
  t.notOk(onlyLeaseRenewed(held, { ...held, leaseUntil: 20, retryNum: 1 }), 'another change');
});

t.test("takeOverDeadLeases: an earlier run's live lease is void, and its attempt counted", async (t) => {
  const store = createMemoryStore();
  await store.commit([
    { table: PENDING_TABLE, id: 'dlv_1', value: pending({ leaseOwner: 'earlier', leaseUntil: 9000, nextAt: 9000 }) },
    { table: PENDING_TABLE, id: 'dlv_2', value: pending({ id: 'dlv_2', nextAt: 3000 }) },
  ]);
  await takeOverDeadLeases(store, 'now', 2000);
  t.same(await store.get(PENDING_TABLE, 'dlv_1'), pending({ nextAt: 2000, unrecorded: 1 }), 'due now, marked');
  t.same(
    must(await store.get(PENDING_TABLE, 'dlv_2')),
    pending({ id: 'dlv_2', nextAt: 3000 }),
    'an unleased one as it was',
  );
});
