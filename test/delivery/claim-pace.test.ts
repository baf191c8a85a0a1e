/**
 * A busy delivery worker polls every 200 ms (its outbox, the events it found) but claims due events
 * once a second at the most (src/delivery/worker.ts CLAIM_EVERY_MS): a claim reads every pending
 * record. A retry it schedules is still claimed on time. The worker runs in this process on a test
 * clock, on the store of this pass (embedded, or PostgreSQL in the store matrix's pass); a daemon alone on its
 * store, restarted, wakes for the retries its earlier run scheduled.
 */
import t from 'tap';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import type { Store } from '../../src/store/types.js';
import type { PendingDelivery } from '../../src/model/delivery.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';
import type { AttemptResult } from '../../src/delivery/types.js';
import { onPostgres, tempDir } from '../helpers/daemon.js';
import { pgDatabaseOrSkip } from '../helpers/pg.js';
import { directoryOf, eventApp, testWorker, type TestWorkerOptions } from './worker-harness.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const app = eventApp(1);
const apps = directoryOf([app]);
const config = { ...defaults, deliveryEventTimeoutMs: 200, deliveryRetrySchedule: '0.3,0.3', deliveryLeaseMs: 60_000 };

t.test('a busy worker claims once a second at the most; a retry it schedules is claimed on time', async (t) => {
  const url = onPostgres() ? await pgDatabaseOrSkip(t) : undefined;
  if (onPostgres() && !url) return;
  const clock = createTestClock();
  const store: Store = url
    ? await openPostgresStore({ url, logger, instanceId: 'a', clock })
    : await openEmbeddedStore({ dir: tempDir(), compactIdleMs: 0, logger, clock });
  t.teardown(() => store.close());
  // two events due now: the first is held by its app until the test lets it answer; the second fails once
  const due = (id: string) => pendingAt(id, clock.now(), 0);
  await store.commit(['dlv_held', 'dlv_retried'].map((id) => ({ table: PENDING_TABLE, id, value: due(id) })));
  let answer = () => {};
  const held = new Promise<void>((r) => (answer = r));
  const sends: string[] = [];
  const claims: number[] = [];
  const claim = store.claim.bind(store);
  store.claim = ((req: Parameters<typeof claim>[0]) => (claims.push(req.now), claim(req))) as typeof claim;
  const { dispatcher } = started(
    t,
    {
      store,
      clock,
      name: 'a',
      soleDaemon: !onPostgres(),
      send: async (req): Promise<AttemptResult> => {
        sends.push(req.deliveryId);
        if (req.deliveryId === 'dlv_held') await held;
        else if (sends.filter((s) => s === 'dlv_retried').length === 1)
          return { outcome: 'http_error', status: 503, latencyMs: 1 };
        return { outcome: 'acked', status: 200, latencyMs: 1 };
      },
    },
    () => answer(),
  );
  await until(async () => (await clock.advance(0), sends.length >= 2));
  t.equal(claims.length, 1, 'the first poll claimed both');
  const retried = () => sends.filter((s) => s === 'dlv_retried').length;
  // the retry of dlv_retried is due 0.24–0.36 s on: the poll keeps its minimum pace meanwhile (it found events)
  const next = await until(
    () => store.get(PENDING_TABLE, 'dlv_retried'),
    (p) => p?.retryNum === 1,
  );
  const retryAt = next?.nextAt ?? Infinity;
  // (polls are woken on a 50 ms grain)
  while (claims.length < 2 && clock.now() < retryAt + 200) await clock.advance(50);
  await until(retried, (n) => n === 2);
  t.equal(claims.length, 2, 'the retry was made by a claim of its own, and no other claim came between');
  t.ok(at(claims, 1) - retryAt < 100, 'the retry was claimed when due');
  while (clock.now() < at(claims, 1) + 900) await clock.advance(100);
  t.equal(claims.length, 2, 'no claim in the second after it, though the poll went on');
  while (clock.now() < at(claims, 1) + 1300) await clock.advance(100);
  t.equal(claims.length, 3, 'the next claim, once a second had passed');
  t.ok(at(claims, 2) - at(claims, 1) >= 1000, 'a second after the last one');
  answer();
  await dispatcher.idle();
});

/** A pending event of the app, due at `nextAt`, after `retryNum` attempts. */
const pendingAt = (id: string, nextAt: number, retryNum: number): PendingDelivery => ({
  id,
  appId: app.id,
  workspaceId: 'ws_1',
  userId: 'wu_1',
  eventType: 'NEW_MESSAGE',
  payload: { eventType: 'NEW_MESSAGE' },
  retryNum,
  nextAt,
  createdAt: new Date(nextAt).toISOString(),
});

/** A worker of the app on `o.store`, started; stopped when the test ends (after `first`). */
function started(
  t: Tap.Test,
  o: Pick<TestWorkerOptions, 'store' | 'clock' | 'name' | 'soleDaemon' | 'send'>,
  first = () => {},
) {
  const made = testWorker({ ...o, logger, config, apps, recipients: () => [] });
  t.teardown(async () => {
    first();
    await made.worker.stop();
    await made.log.close();
  });
  made.worker.start();
  return made;
}

/** The clock time of claim (or send) `i`. */
function at(claims: number[], i: number): number {
  const n = claims[i];
  if (n === undefined) throw new Error(`no claim ${i}`);
  return n;
}

t.test("a daemon alone on its store, restarted, claims its earlier run's retry at its time", async (t) => {
  // (the embedded store in either pass: only a daemon alone on its store knows every retry is its own)
  const clock = createTestClock();
  const store = await openEmbeddedStore({ dir: tempDir(), compactIdleMs: 0, logger, clock });
  t.teardown(() => store.close());
  const retryAt = clock.now() + 300;
  const waiting = pendingAt('dlv_waiting', retryAt, 1);
  await store.commit([{ table: PENDING_TABLE, id: waiting.id, value: waiting }]);
  const sent: number[] = [];
  const { dispatcher } = started(t, {
    store,
    clock,
    name: 'run2',
    soleDaemon: true,
    send: async () => (sent.push(clock.now()), { outcome: 'acked', status: 200, latencyMs: 1 }),
  });
  while (sent.length === 0 && clock.now() < retryAt + 1500) {
    await clock.advance(50);
    await dispatcher.idle();
  }
  t.equal(sent.length, 1, 'sent');
  t.ok(at(sent, 0) - retryAt < 100, `at its time (${at(sent, 0) - retryAt} ms after it), not at the next claim`);
});
