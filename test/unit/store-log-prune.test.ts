/**
 * The delivery log in the store (PostgreSQL's) prunes what is past its retention and the records
 * left without a delivery, but never a delivery written while the prune reads: its reads of the
 * three tables are not one snapshot, so an attempt written between them must not look like one
 * whose delivery is gone. (On PostgreSQL, under load, an edited replay written just after a prune
 * began was shown as `delivered` with no attempts: its attempt had been pruned as an orphan.)
 */
import t from 'tap';
import { openStoreDeliveryLog } from '../../src/delivery/store-log.js';
import type { LogEntry } from '../../src/delivery/log.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { StoredAttempt } from '../../src/model/delivery.js';
import { begunEvent } from '../helpers/log-entries.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const AT = '2026-11-27T00:00:00.000Z';

/** A delivery answered at once: its beginning, its attempt and its state in one entry (as an interaction's is). */
const delivered = (id: string, attemptId: string): LogEntry => ({
  ...begunEvent(id, AT, { text: id }),
  attempt: { id: attemptId, at: AT, retryNum: 0, latencyMs: 1, outcome: 'acked', status: 200 },
  state: { at: AT, state: 'delivered' },
});

t.test('a delivery written while the prune reads keeps its attempts; an orphan attempt still goes', async (t) => {
  const store = createMemoryStore();
  const clock = createTestClock(Date.parse(AT));
  const log = openStoreDeliveryLog({ store, retentionDays: 7, clock, logger });
  t.teardown(() => log.close());
  log.append(delivered('dlv_0', 'att_0'));
  await log.flush();
  // an attempt whose delivery is not in the log (what an interrupted prune leaves): the prune's to remove
  const orphan: StoredAttempt = {
    id: 'att_x',
    deliveryId: 'dlv_gone',
    seq: 0,
    attempt: must(delivered('x', 'att_x').attempt),
  };
  await store.commit([{ table: 'deliveryAttempts', id: orphan.id, value: orphan }]);

  // The prune's reads answer the store as it is when asked, but the attempts: as it is once dlv_1 is written
  // (announced, and no longer held by the log as unwritten), as a query whose snapshot is taken late would.
  let began!: () => void;
  const pruneReads = new Promise<void>((r) => (began = r));
  let written!: () => void;
  const dlv1Written = new Promise<void>((r) => (written = r));
  const all = store.all.bind(store);
  store.all = ((table: 'deliveryLog') => {
    began();
    const now = all(table);
    return table === ('deliveryAttempts' as string) ? dlv1Written.then(() => all(table)) : now;
  }) as typeof store.all;
  const publish = store.publish.bind(store);
  store.publish = async (channel, payload) => {
    await publish(channel, payload);
    // after the writer's continuation (it forgets the delivery in the same turn)
    if ((JSON.parse(payload) as { id: string }).id === 'dlv_1') setImmediate(written);
  };

  // the minute is up: the next write ends with a prune
  clock.set(clock.now() + 60_000);
  log.append({ id: 'dlv_0', state: { at: AT, state: 'delivered', ephemeralMessage: 'done' } });
  await pruneReads;
  log.append(delivered('dlv_1', 'att_1'));
  await log.flush();

  const rec = await log.get('dlv_1');
  t.equal(rec?.state, 'delivered');
  t.same(
    rec?.attempts.map((a) => a.id),
    ['att_1'],
    'the delivery written during the prune still has its attempt',
  );
  t.same(
    (await all('deliveryAttempts')).map((a) => a.id).sort(),
    ['att_0', 'att_1'],
    'the orphan attempt was pruned, no other',
  );
});
