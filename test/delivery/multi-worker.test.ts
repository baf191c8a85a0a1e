/**
 * The delivery worker with several daemons on one PostgreSQL database, in one process: each
 * attempt of an event is made by one daemon, and a daemon that dies mid-attempt loses its events
 * to the others once its lease runs out. Both run on one test clock: each step advances it, then
 * waits for the attempts it started to be settled, so a lease never runs out under an attempt
 * because the machine was slow.
 */
import t from 'tap';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import type { AppsService } from '../../src/services/apps.js';
import type { AppRecord } from '../../src/model/identity.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';
import type { AttemptResult, SendRequest } from '../../src/delivery/types.js';
import { testWithPg } from '../helpers/pg.js';
import { testWorker } from './worker-harness.js';
import type { OutboxEventRecord } from '../../src/model/events.js';
import type { Change } from '../../src/store/types.js';
import { until } from '../helpers/until.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const app = {
  id: 'app_1',
  ownerId: 'wu_1',
  manifest: {
    name: 'a',
    displayName: 'A',
    eventSubscriptions: { url: 'http://127.0.0.1:9/events', events: ['NEW_MESSAGE'] },
  },
} as unknown as AppRecord;
const apps = {
  byId: async (id: string) => (id === app.id ? app : undefined),
  secretsOf: () => ({ signingSecret: 'sig' }),
} as unknown as AppsService;
/** The apps every workspace event in the outbox goes to (none unless a test says). */
let fanOutTo: Array<{ app: AppRecord; workspaceUserIds: string[] }> = [];

async function daemon(
  t: Tap.Test,
  url: string,
  clock: TestClock,
  name: string,
  send: (req: SendRequest) => Promise<AttemptResult>,
) {
  const store = await openPostgresStore({ url, logger, instanceId: name, clock });
  const config = { ...defaults, deliveryEventTimeoutMs: 200, deliveryRetrySchedule: '0.3,0.3,0.3', deliveryLeaseMs: 0 };
  // who a workspace event goes to: as the test says
  const { worker, log, dispatcher } = testWorker({
    store,
    clock,
    logger,
    config,
    apps,
    name,
    soleDaemon: false,
    send,
    recipients: () => fanOutTo,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await worker.stop();
  };
  t.teardown(async () => {
    await stop();
    await log.close();
    await store.close();
  });
  return { store, worker, log, stop, idle: () => dispatcher.idle() };
}

/** Let `ms` pass on `clock`, then wait until the attempts the daemons started meanwhile are settled. */
async function step(clock: TestClock, ms: number, ...daemons: Array<{ idle(): Promise<void> }>) {
  await clock.advance(ms);
  await Promise.all(daemons.map((d) => d.idle()));
}

void testWithPg(t, 'two workers: each attempt of a retried event is made once, by one of them', async (t, url) => {
  const calls: string[] = [];
  const sender =
    (who: string) =>
    async (req: SendRequest): Promise<AttemptResult> => {
      calls.push(`${who}:${req.deliveryId}`);
      return calls.length < 4
        ? { outcome: 'http_error', status: 503, latencyMs: 1 }
        : { outcome: 'acked', status: 200, latencyMs: 1 };
    };
  const clock = createTestClock();
  const a = await daemon(t, url, clock, 'a', sender('a'));
  const b = await daemon(t, url, clock, 'b', sender('b'));
  a.worker.start();
  b.worker.start();
  const first = await a.worker.enqueueEvent(app, 'ws_1', 'wu_1', 'NEW_MESSAGE', { eventType: 'NEW_MESSAGE' });
  t.match(first, { state: 'retrying' });
  const id = must(first).id;
  // the retries are 0.3 s (±20 %) apart: three steps of 0.4 s make them all, a fourth would show a duplicate
  for (let i = 0; i < 4; i++) await step(clock, 400, a, b);
  t.equal(await a.store.get(PENDING_TABLE, id), undefined, 'delivered: nothing pending');
  await step(clock, 5000, a, b); // polls enough to take the event again, were it there
  t.equal(calls.length, 4, `four attempts in all (${calls.join(', ')})`);
  await a.log.flush();
  await b.log.flush();
  t.match(await b.log.get(id), { state: 'delivered' });
});

void testWithPg(
  t,
  'a daemon killed mid-attempt: another takes its event over when the lease runs out',
  async (t, url) => {
    const clock = createTestClock();
    const a = await daemon(t, url, clock, 'a', () => new Promise(() => {})); // its attempt never ends: it "died"
    const bCalls: string[] = [];
    const b = await daemon(
      t,
      url,
      clock,
      'b',
      async (req) => (bCalls.push(req.deliveryId), { outcome: 'acked', status: 200, latencyMs: 1 }),
    );
    void a.worker.enqueueEvent(app, 'ws_1', 'wu_1', 'NEW_MESSAGE', { eventType: 'NEW_MESSAGE' });
    await until(async () => (await a.store.all(PENDING_TABLE)).length === 1);
    const [p] = await a.store.all(PENDING_TABLE);
    t.equal(p?.leaseOwner, 'a', 'written leased to the daemon that made it');
    t.equal((p?.leaseUntil ?? 0) - clock.now(), 1200, 'for the attempt timeout (200 ms) and a second');
    void a.stop(); // no more ticks from a (its attempt stays stuck, as in a killed process)
    b.worker.start();
    await step(clock, 1199, b);
    t.same(bCalls, [], 'b polled meanwhile, but took nothing while the lease ran');
    await step(clock, 2000, b); // b's backed-off poll comes within a second or two
    t.same(bCalls, [must(p).id], 'b made the attempt once the lease ran out');
    t.equal(await b.store.get(PENDING_TABLE, must(p).id), undefined, 'delivered and done');
  },
);

void testWithPg(t, 'the events outbox is drained once across daemons', async (t, url) => {
  const calls: string[] = [];
  const sender =
    (who: string) =>
    async (req: SendRequest): Promise<AttemptResult> => (
      calls.push(`${who}:${req.deliveryId}`),
      { outcome: 'acked', status: 200, latencyMs: 1 }
    );
  const clock = createTestClock();
  const a = await daemon(t, url, clock, 'a', sender('a'));
  const b = await daemon(t, url, clock, 'b', sender('b'));
  const subscribed = {
    ...app,
    manifest: {
      ...app.manifest,
      eventSubscriptions: { url: 'http://127.0.0.1:9/events', events: ['APP_UNINSTALLED'] },
    },
  };
  (apps as unknown as { byId: (id: string) => Promise<AppRecord | undefined> }).byId = async (id) =>
    id === app.id ? subscribed : undefined;
  const subscribed2 = { ...subscribed, id: 'app_2' };
  fanOutTo = [
    { app: subscribed, workspaceUserIds: ['wu_1'] },
    { app: subscribed2, workspaceUserIds: ['wu_1', 'wu_2'] },
  ];
  t.teardown(() => void (fanOutTo = []));
  const at = new Date().toISOString();
  const evs: OutboxEventRecord[] = [
    ...[1, 2, 3, 4, 5].map((n): OutboxEventRecord => ({
      id: `evt_${n}`,
      appId: app.id,
      workspaceId: 'ws_1',
      eventType: 'APP_UNINSTALLED',
      workspaceUserIds: ['wu_1'],
      body: { n },
      createdAt: at,
    })),
    // workspace events: each fanned out to two apps
    ...[6, 7, 8].map((n): OutboxEventRecord => ({
      id: `evt_${n}`,
      workspaceId: 'ws_1',
      eventType: 'NEW_MESSAGE',
      audience: { everyone: true },
      body: { n },
      createdAt: at,
    })),
  ];
  await a.store.commit(evs.map((e): Change => ({ table: 'eventsOutbox', id: e.id, value: e })));
  a.worker.start();
  b.worker.start();
  await step(clock, 0, a, b); // both poll at once: each drains what it can take
  await step(clock, 5000, a, b); // and on, were anything left or taken twice
  t.equal(await a.store.count('eventsOutbox'), 0, 'consumed');
  t.equal(calls.length, 11, `one event per app record, one per app and workspace record (${calls.join(', ')})`);
  t.equal(new Set(calls.map((c) => c.split(':')[1])).size, 11, 'each a delivery of its own');
});

void testWithPg(
  t,
  'a poll that renewed the lease of an event whose attempt ended meanwhile does not make the attempt again',
  async (t, url) => {
    const clock = createTestClock();
    const sends: string[] = [];
    let releaseRetry!: () => void;
    const a = await daemon(t, url, clock, 'a', async (req) => {
      sends.push(req.deliveryId);
      if (sends.length === 1) return { outcome: 'http_error', status: 503, latencyMs: 1 };
      // the retry is under way until the test lets it end
      if (sends.length === 2) await new Promise<void>((r) => (releaseRetry = r));
      return { outcome: 'acked', status: 200, latencyMs: 1 };
    });
    // the next poll's claim renews this daemon's lease on the event (its attempt still under way) and is
    // answered only once that attempt has ended and the event is gone from the pending table
    const claim = a.store.claim.bind(a.store);
    let hold: ((due: object[]) => Promise<void>) | undefined;
    a.store.claim = (async (req: Parameters<typeof claim>[0]) => {
      const due = await claim(req);
      await hold?.(due);
      return due;
    }) as typeof claim;
    a.worker.start();
    const first = await a.worker.enqueueEvent(app, 'ws_1', 'wu_1', 'NEW_MESSAGE', { eventType: 'NEW_MESSAGE' });
    const id = must(first).id;
    await clock.advance(410); // the retry's poll (0.3 s ± 20 %, on the 50 ms grain)
    await until(() => sends.length === 2);
    hold = async (due) => {
      if (!due.some((p) => (p as { id: string }).id === id)) return;
      hold = undefined;
      releaseRetry();
      await until(async () => (await a.store.get(PENDING_TABLE, id)) === undefined);
    };
    await clock.advance(1000); // the next claim, a busy worker's claim interval later: it claims the event again
    await a.idle();
    t.equal(hold, undefined, 'the poll renewed the lease while the retry was under way');
    t.same(sends, [id, id], 'the first attempt and the retry, and no third');
  },
);

void testWithPg(
  t,
  "an attempt's outcome is written however often this daemon's own polls renew its lease meanwhile",
  async (t, url) => {
    const clock = createTestClock();
    const sends: string[] = [];
    const a = await daemon(t, url, clock, 'a', async (req) => {
      sends.push(req.deliveryId);
      return sends.length === 1
        ? { outcome: 'http_error', status: 503, latencyMs: 1 }
        : { outcome: 'acked', status: 200, latencyMs: 1 };
    });
    // Each write ending the retry finds the lease renewed just before it by a claim of this daemon's own
    // (a poll landing between the write's read and its commit, as polls do back to back on a loaded
    // machine): more often than a rival's change would be retried after.
    const commit = a.store.commit.bind(a.store);
    const claim = a.store.claim.bind(a.store);
    let renewals = 0;
    a.store.commit = (async (...args: Parameters<typeof commit>) => {
      const [changes] = args;
      const ends = changes.some((c) => c.table === PENDING_TABLE && c.value === null);
      if (ends && sends.length === 2 && renewals < 6) {
        renewals++;
        const now = clock.now();
        const renewed = await claim({
          table: PENDING_TABLE,
          dueField: 'nextAt',
          now,
          owner: 'a',
          leaseUntil: now + 1200 + renewals,
          limit: 10,
        });
        t.equal(renewed.length, 1, `renewal ${renewals} of a's lease`);
      }
      return commit(...args);
    }) as typeof commit;
    a.worker.start();
    const first = await a.worker.enqueueEvent(app, 'ws_1', 'wu_1', 'NEW_MESSAGE', { eventType: 'NEW_MESSAGE' });
    t.match(first, { state: 'retrying' });
    const id = must(first).id;
    await step(clock, 410, a); // the retry's poll (0.3 s ± 20 %, on the 50 ms grain)
    t.equal(renewals, 6, 'the retry ended while the lease was renewed six times');
    t.equal(await a.store.get(PENDING_TABLE, id), undefined, 'delivered: nothing pending');
    await step(clock, 5000, a); // polls enough to take the event again, were it left pending
    t.same(sends, [id, id], 'the first attempt and the retry, and no third');
    await a.log.flush();
    t.match(await a.log.get(id), { state: 'delivered' });
  },
);
