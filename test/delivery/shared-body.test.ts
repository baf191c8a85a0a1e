/**
 * A workspace event's body is stored once for all the apps it goes to (src/delivery/event-bodies.ts):
 * one body record beside one pending record per app that names it. Each app is sent the payload as
 * it was built (the same bytes at every attempt, retries after a restart and a compaction included,
 * and through another daemon of a shared store), the body stays while any pending record names it and
 * goes once none does, and pending records of the earlier shape (each holding its body) are still
 * delivered as they are. The daemons run in this process on a test clock, their HTTP sends recorded.
 */
import t from 'tap';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import type { Store } from '../../src/store/types.js';
import type { OutboxEventRecord } from '../../src/model/events.js';
import type { PendingDelivery } from '../../src/model/delivery.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';
import { BODIES_TABLE } from '../../src/delivery/event-bodies.js';
import { eventPayload } from '../../src/delivery/payloads.js';
import type { AttemptResult, SendRequest } from '../../src/delivery/types.js';
import { testWithPg } from '../helpers/pg.js';
import { directoryOf, eventApp, testWorker } from './worker-harness.js';
import { tempDir } from '../helpers/daemon.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const APPS = [1, 2, 3].map(eventApp);
const apps = directoryOf(APPS);
/** Who the event goes to: each app with users of its own (the payloads differ in workspaceUserIds only). */
const fanOut = APPS.map((app, i) => ({ app, workspaceUserIds: ['wu_1', `wu_${i + 2}`].slice(0, i + 1) }));
/** The retries come 5 s apart (±20 %): the sweep (each second) runs while they wait. */
const config = { ...defaults, deliveryEventTimeoutMs: 200, deliveryRetrySchedule: '5,5,5', deliveryLeaseMs: 0 };

/** A post's body as the platform sends it: quotes, a newline and non-ASCII text, escaped twice in a record. */
const BODY = { mId: 'msg_1', tx: 'a "quoted" line\nand ünïcode', rid: 'req_1' };
const EVENT: OutboxEventRecord = {
  id: 'evt_1',
  workspaceId: 'ws_1',
  eventType: 'NEW_MESSAGE',
  audience: { everyone: true },
  body: BODY,
  createdAt: new Date().toISOString(),
};
/** The bytes app `i` must get: the payload as the drain builds it, serialised. */
const wireOf = (i: number) =>
  JSON.stringify(eventPayload('NEW_MESSAGE', 'ws_1', must(fanOut[i]).workspaceUserIds, JSON.stringify(BODY)));

interface Sent {
  appId: string;
  raw: string;
  retryNum: number;
  by: string;
}

/**
 * A daemon's delivery worker on `store`, once it has polled (a sole daemon's first poll waits for its take-over of
 * dead leases); its HTTP sends are recorded in `sent` and answered by `answer`.
 */
async function worker(
  t: Tap.Test,
  store: Store,
  clock: TestClock,
  name: string,
  sent: Sent[],
  answer: (req: SendRequest) => AttemptResult,
  soleDaemon: boolean,
) {
  const send = async (req: SendRequest): Promise<AttemptResult> => {
    sent.push({
      appId: req.app.id,
      raw: req.rawPayload ?? JSON.stringify(req.payload),
      retryNum: req.retryNum,
      by: name,
    });
    return answer(req);
  };
  const {
    worker: w,
    log,
    dispatcher,
  } = testWorker({
    store,
    clock,
    logger,
    config,
    apps,
    name,
    soleDaemon,
    send,
    recipients: () => fanOut,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await w.stop();
    await log.close();
  };
  t.teardown(stop);
  let polled = false;
  const claim = store.claim.bind(store);
  store.claim = ((req: Parameters<typeof claim>[0]) => ((polled = true), claim(req))) as typeof claim;
  w.start();
  await until(async () => (await clock.advance(0), polled));
  return { stop, log, idle: () => dispatcher.idle() };
}

/** Let `ms` pass on `clock`, then wait until the attempts started meanwhile are settled. */
async function step(clock: TestClock, ms: number, ...workers: Array<{ idle(): Promise<void> }>) {
  await clock.advance(ms);
  await Promise.all(workers.map((w) => w.idle()));
}

/** The sends after the three first attempts, by app. */
const retries = (sent: Sent[]) => sent.slice(3).sort((x, y) => (x.appId < y.appId ? -1 : 1));

const acked: AttemptResult = { outcome: 'acked', status: 200, latencyMs: 1 };
const unavailable: AttemptResult = { outcome: 'http_error', status: 503, latencyMs: 1 };
/** app_1 acks at once; the others answer 503 to their first attempt, then ack. */
const firstFailsBut1 = (sent: Sent[]) => (req: SendRequest) =>
  req.app.id === 'app_1' || sent.filter((s) => s.appId === req.app.id).length > 1 ? acked : unavailable;

/**
 * The post's event written to the outbox, once the worker runs (a sole daemon sends what it finds there at
 * start marked as a retry: its earlier run may have sent it).
 */
const post = (store: Store) => store.commit([{ table: 'eventsOutbox', id: EVENT.id, value: EVENT }]);

/** A pending record of app_1's NEW_MESSAGE whose first retry is due now. */
const dueRetry = (
  clock: TestClock,
  id: string,
  o: Pick<PendingDelivery, 'payload'> & Partial<PendingDelivery>,
): PendingDelivery => ({
  id,
  appId: 'app_1',
  workspaceId: 'ws_1',
  userId: 'wu_1',
  eventType: 'NEW_MESSAGE',
  retryNum: 1,
  nextAt: clock.now(),
  createdAt: new Date(clock.now()).toISOString(),
  ...o,
});

const openEmbedded = (dir: string, clock: TestClock) => openEmbeddedStore({ dir, compactIdleMs: 0, logger, clock });

t.test('one body record for the apps of an event; each app gets the payload as built, at every attempt', async (t) => {
  const clock = createTestClock();
  const store = await openEmbedded(tempDir(), clock);
  t.teardown(() => store.close());
  const sent: Sent[] = [];
  const w = await worker(t, store, clock, 'a', sent, firstFailsBut1(sent), true);
  await post(store);
  await step(clock, 1000, w); // a poll drains the outbox (1 s apart at the most): the first attempts end

  t.same(
    sent.map((s) => [s.appId, s.raw, s.retryNum]),
    [0, 1, 2].map((i) => [must(APPS[i]).id, wireOf(i), 0]),
    'each app was sent its payload as built',
  );
  const pending = await store.all(PENDING_TABLE);
  t.same(pending.map((p) => p.appId).sort(), ['app_2', 'app_3'], 'the two that failed wait for their retry');
  for (const p of pending) {
    t.equal(p.bodyId, EVENT.id, `${p.appId}'s record names the shared body`);
    t.notOk('body' in p.payload, `${p.appId}'s record holds no copy of it`);
    t.notOk(JSON.stringify(p).includes('quoted'), `nothing of the body is in ${p.appId}'s record`);
  }
  t.same(await store.all(BODIES_TABLE), [{ id: EVENT.id, body: JSON.stringify(BODY) }], 'the body, once');

  await step(clock, 2100, w); // two sweeps while both records name it
  t.equal(await store.count(BODIES_TABLE), 1, 'kept while pending records name it');
  await step(clock, 4000, w); // the retries (5 s ± 20 %)
  t.same(
    retries(sent).map((s) => [s.appId, s.raw, s.retryNum]),
    [1, 2].map((i) => [must(APPS[i]).id, wireOf(i), 1]),
    'the retries are sent the same bytes',
  );
  t.equal(await store.count(PENDING_TABLE), 0, 'all delivered');
  await step(clock, 1100, w); // the next sweep
  t.equal(await store.count(BODIES_TABLE), 0, 'the body goes once no record names it');
});

t.test('retries after a restart and a compaction find the shared body', async (t) => {
  const clock = createTestClock();
  const dir = tempDir();
  const sent: Sent[] = [];
  let store = await openEmbedded(dir, clock);
  const first = await worker(t, store, clock, 'run1', sent, firstFailsBut1(sent), true);
  await post(store);
  await step(clock, 1000, first);
  t.equal(sent.length, 3, 'the first attempts');
  // the daemon goes between its deliveries: app_1's done, the others' waiting for their retry
  await first.stop();
  await store.close({ compact: false });

  store = await openEmbedded(dir, clock);
  t.equal(await store.count(PENDING_TABLE), 2, 'after the restart: the two retries wait');
  t.equal(await store.count(BODIES_TABLE), 1, 'and their body');
  await store.compact();
  await store.close({ compact: false });

  store = await openEmbedded(dir, clock); // from the compacted data file alone
  t.teardown(() => store.close());
  t.equal(await store.count(BODIES_TABLE), 1, 'the body is in the compacted data file');
  const second = await worker(t, store, clock, 'run2', sent, firstFailsBut1(sent), true);
  await step(clock, 6100, second); // the retries, and a sweep after them
  t.same(
    retries(sent).map((s) => [s.appId, s.raw, s.retryNum, s.by]),
    [1, 2].map((i) => [must(APPS[i]).id, wireOf(i), 1, 'run2']),
    'the restarted daemon sends each retry the same bytes',
  );
  await step(clock, 1100, second);
  t.equal(await store.count(PENDING_TABLE), 0, 'all delivered');
  t.equal(await store.count(BODIES_TABLE), 0, 'the body is gone after them');
});

t.test('a pending record of the earlier shape, holding its own body, is delivered as it is', async (t) => {
  const clock = createTestClock();
  const store = await openEmbedded(tempDir(), clock);
  t.teardown(() => store.close());
  const payload = eventPayload('NEW_MESSAGE', 'ws_1', ['wu_1'], JSON.stringify(BODY));
  // as an appreg before shared bodies wrote it: a retry waiting, its payload whole, no bodyId
  const old = dueRetry(clock, 'dlv_old', { payload });
  await store.commit([{ table: PENDING_TABLE, id: old.id, value: old }]);
  const sent: Sent[] = [];
  const w = await worker(t, store, clock, 'a', sent, () => acked, true);
  await step(clock, 0, w);
  t.same(sent, [{ appId: 'app_1', raw: JSON.stringify(payload), retryNum: 1, by: 'a' }], 'sent as it was stored');
  t.equal(await store.count(PENDING_TABLE), 0, 'delivered');
});

t.test('a record whose shared body is missing is cancelled, not sent without it', async (t) => {
  const clock = createTestClock();
  const store = await openEmbedded(tempDir(), clock);
  t.teardown(() => store.close());
  const lost = dueRetry(clock, 'dlv_lost', { payload: { workspaceUserIds: ['wu_1'] }, bodyId: 'evt_gone' });
  await store.commit([{ table: PENDING_TABLE, id: lost.id, value: lost }]);
  const sent: Sent[] = [];
  const w = await worker(t, store, clock, 'a', sent, () => acked, true);
  await step(clock, 0, w);
  t.same(sent, [], 'nothing sent');
  t.equal(await store.count(PENDING_TABLE), 0, 'the record ended');
});

void testWithPg(t, 'another daemon of the shared store makes the retry with the same bytes', async (t, url) => {
  const clock = createTestClock();
  const open = async (name: string) => {
    const s = await openPostgresStore({ url, logger, instanceId: name, clock });
    t.teardown(() => s.close());
    return s;
  };
  const [sa, sb] = [await open('a'), await open('b')];
  const sent: Sent[] = [];
  // a's attempts of app_2 and app_3 fail; b acks whatever it sends
  const a = await worker(t, sa, clock, 'a', sent, (req) => (req.app.id === 'app_1' ? acked : unavailable), false);
  await post(sa);
  await step(clock, 1000, a);
  t.equal(sent.length, 3, "a's first attempts");
  await a.stop(); // a goes: b, started now, makes the retries
  t.equal(await sb.count(BODIES_TABLE), 1, 'b sees the body a wrote');
  const b = await worker(t, sb, clock, 'b', sent, () => acked, false);
  // (a's retries are due within 6 s; b, which did not schedule them, claims a second apart: up to a second late)
  await step(clock, 7100, b);
  // (PostgreSQL gave the drain the post's body with its keys in jsonb's order: the bytes are a's, not wireOf's)
  t.same(
    retries(sent).map((s) => [s.appId, s.raw, s.retryNum, s.by]),
    [1, 2].map((i) => [must(APPS[i]).id, must(sent.find((s) => s.appId === must(APPS[i]).id)).raw, 1, 'b']),
    'b sends each retry the bytes a sent first',
  );
  await step(clock, 1100, b);
  t.equal(await sb.count(PENDING_TABLE), 0, 'all delivered');
  t.equal(await sb.count(BODIES_TABLE), 0, "b's sweep removed the body");
});
