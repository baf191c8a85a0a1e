/**
 * The delivery log in the store (PostgreSQL's) reads a delivery as one consistent picture: an
 * attempt is committed with the state it left, so a delivery shown as failed shows every attempt
 * that made it fail, even when the attempt and the state are written while the read is under way.
 */
import t from 'tap';
import { openStoreDeliveryLog } from '../../src/delivery/store-log.js';
import type { LogEntry } from '../../src/delivery/log.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { DeliveryHead } from '../../src/model/delivery.js';
import { createTestClock } from '../helpers/test-clock.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const head: DeliveryHead = {
  id: 'dlv_1',
  kind: 'event',
  subject: 'NEW_MESSAGE',
  appId: 'app_1',
  appName: 'a',
  ownerId: 'wu_1',
  workspaceId: 'ws_1',
  userId: 'wu_1',
  transport: 'socket',
  createdAt: '2026-11-27T00:00:00.000Z',
};
const attempt = (n: number): LogEntry['attempt'] => ({
  id: `att_${n}`,
  at: '2026-11-27T00:00:00.000Z',
  retryNum: n,
  latencyMs: 0,
  outcome: 'no_connection',
});

t.test('a state written while a delivery is read comes with the attempt committed beside it', async (t) => {
  const store = createMemoryStore();
  const log = openStoreDeliveryLog({ store, retentionDays: 7, clock: createTestClock(), logger });
  t.teardown(() => log.close());
  log.append({ id: head.id, begun: { head, payload: {}, raw: '' }, state: { at: head.createdAt, state: 'pending' } });
  log.append({ id: head.id, attempt: attempt(0), state: { at: head.createdAt, state: 'retrying' } });
  await log.flush();

  // The read's first query waits until the last attempt and the final state are committed; a query
  // the read issues at once (before that commit) sees the store as it was.
  let release!: () => void;
  const committed = new Promise<void>((r) => (release = r));
  const getMany = store.getMany.bind(store);
  const find = store.find.bind(store);
  let firstQuery = true;
  const held = async <R>(read: () => Promise<R>): Promise<R> => {
    if (firstQuery) {
      firstQuery = false;
      await committed;
    }
    return read();
  };
  store.getMany = ((keys: Parameters<typeof getMany>[0]) => held(() => getMany(keys))) as typeof store.getMany;
  const findAt = (table: string, field: string, value: string) => {
    const now = find(table as 'deliveryAttempts', field as 'deliveryId', value); // what the store holds when asked
    return held(() => now);
  };
  store.find = findAt as typeof store.find;

  const reading = log.get(head.id);
  log.append({ id: head.id, attempt: attempt(1), state: { at: head.createdAt, state: 'failed' } });
  await log.flush();
  release();
  const rec = await reading;
  t.equal(rec?.state, 'failed');
  t.same(
    rec?.attempts.map((a) => a.id),
    ['att_0', 'att_1'],
    'the failed state comes with the attempt that failed',
  );
});
