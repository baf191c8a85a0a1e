/**
 * Ended events' pending records are deleted in batches (src/delivery/worker/end-batch.ts): the records
 * of a fan-out whose answers come in one turn go in one commit; a batch that conflicts is ended record
 * by record (those still ours go, one taken over stays its new holder's); and a daemon that dies
 * between its attempts and their batch leaves the records pending, so each event is sent again once,
 * marked as a retry, by the next daemon (the same one restarted, on the embedded store; another one
 * once the leases ran out, on PostgreSQL). The daemons run in this process on test clocks, their HTTP
 * sends recorded and answered when the test lets them.
 */
import t from 'tap';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import type { Change, Store } from '../../src/store/types.js';
import type { OutboxEventRecord } from '../../src/model/events.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';
import type { AttemptResult, SendRequest } from '../../src/delivery/types.js';
import { onPostgres, tempDir } from '../helpers/daemon.js';
import { pgDatabaseOrSkip } from '../helpers/pg.js';
import { directoryOf, eventApp, testWorker } from './worker-harness.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';

const logger = createLogger({ level: 'error', stream: { write: () => {} } });
const N = 12;
const APPS = Array.from({ length: N }, (_, n) => eventApp(n));
const apps = directoryOf(APPS);
const config = { ...defaults, deliveryEventTimeoutMs: 200, deliveryRetrySchedule: '5,5,5', deliveryLeaseMs: 0 };
const EVENT: OutboxEventRecord = {
  id: 'evt_1',
  workspaceId: 'ws_1',
  eventType: 'NEW_MESSAGE',
  audience: { everyone: true },
  body: { mId: 'msg_1', tx: 'hello' },
  createdAt: new Date().toISOString(),
};
const acked: AttemptResult = { outcome: 'acked', status: 200, latencyMs: 1 };

interface Sent {
  appId: string;
  raw: string;
  retryNum: number;
  by: string;
}

/** The store of a daemon: embedded in `dir`, or on the database at `url` (the store matrix's PostgreSQL pass). */
async function openStore(t: Tap.Test, where: { dir?: string; url?: string }, clock: TestClock, name: string) {
  const store: Store = where.url
    ? await openPostgresStore({ url: where.url, logger, instanceId: name, clock })
    : await openEmbeddedStore({ dir: where.dir ?? tempDir(), compactIdleMs: 0, logger, clock });
  let closed = false;
  const close = async () => {
    if (!closed) await store.close();
    closed = true;
  };
  t.teardown(close);
  return { store, close };
}

/** Where this pass's daemons keep their store; undefined when PostgreSQL is missing (the test is skipped). */
async function storeHome(t: Tap.Test): Promise<{ dir?: string; url?: string } | undefined> {
  if (!onPostgres()) return { dir: tempDir() };
  const url = await pgDatabaseOrSkip(t);
  return url ? { url } : undefined;
}

/** The deletions of pending records in each commit given to `store`, from now on. */
function pendingDeletes(store: Store): number[][] {
  const seen: number[][] = [];
  const commit = store.commit.bind(store);
  store.commit = ((changes: Change[], ...rest: unknown[]) => {
    const gone = changes.filter((c) => c.table === PENDING_TABLE && c.value === null).length;
    if (gone) seen.push([gone]);
    return (commit as (...a: unknown[]) => Promise<void>)(changes, ...rest);
  }) as typeof store.commit;
  return seen;
}

/** A started worker whose sends are recorded in `sent` and answered (acked) only once `gate` resolves. */
async function worker(store: Store, clock: TestClock, name: string, sent: Sent[], gate: Promise<void>) {
  const fixed = { logger, config, apps, soleDaemon: !onPostgres() };
  const {
    worker: w,
    log,
    dispatcher,
  } = testWorker({
    ...fixed,
    store,
    clock,
    name,
    send: async (req: SendRequest) => {
      sent.push({ appId: req.app.id, raw: req.rawPayload ?? '', retryNum: req.retryNum, by: name });
      await gate;
      return acked;
    },
    recipients: () => APPS.map((app) => ({ app, workspaceUserIds: ['wu_1'] })),
  });
  let polled = false;
  const claim = store.claim.bind(store);
  store.claim = ((req: Parameters<typeof claim>[0]) => ((polled = true), claim(req))) as typeof claim;
  w.start();
  await until(async () => (await clock.advance(0), polled));
  return { w, log, idle: () => dispatcher.idle(), stop: async () => (await w.stop(), await log.close()) };
}

const post = (store: Store) => store.commit([{ table: 'eventsOutbox', id: EVENT.id, value: EVENT }]);
const opened = () => {
  let open = () => {};
  const gate = new Promise<void>((r) => (open = r));
  return { gate, open };
};

t.test('the records of a fan-out answered in one turn are deleted in one commit', async (t) => {
  const home = await storeHome(t);
  if (!home) return;
  const clock = createTestClock();
  const { store } = await openStore(t, home, clock, 'a');
  const deletes = pendingDeletes(store);
  const sent: Sent[] = [];
  const { gate, open } = opened();
  const d = await worker(store, clock, 'a', sent, gate);
  t.teardown(d.stop);
  await post(store);
  await clock.advance(1000); // a poll drains the outbox; the attempts wait for the gate
  await until(() => sent.length === N);
  open(); // every app answers in the same turn
  await d.idle();
  t.same(deletes, [[N]], `one commit deleted the ${N} delivered records`);
  t.equal(await store.count(PENDING_TABLE), 0, 'none is left pending');
  await d.log.flush();
  for (const app of APPS) {
    const rec = (await d.log.list({ ownerId: 'wu_1', appId: app.id }))[0];
    t.equal(rec?.state, 'delivered', `the log says ${app.id}'s delivery was delivered`);
  }
});

t.test('a batch that conflicts is ended record by record: the one taken over stays', async (t) => {
  const home = await storeHome(t);
  if (!home) return;
  const clock = createTestClock();
  const { store } = await openStore(t, home, clock, 'a');
  const sent: Sent[] = [];
  const { gate, open } = opened();
  const d = await worker(store, clock, 'a', sent, gate);
  t.teardown(d.stop);
  await post(store);
  await clock.advance(1000);
  await until(() => sent.length === N);
  // meanwhile another daemon took one of them over (as when this one's lease ran out)
  const [taken] = (await store.all(PENDING_TABLE)).filter((p) => p.appId === 'app_3');
  if (!taken) throw new Error('app_3 has no pending record');
  const theirs = { ...taken, leaseOwner: 'b', leaseUntil: clock.now() + 60_000, leaseTakenFrom: 'a' };
  await store.commit([{ table: PENDING_TABLE, id: taken.id, value: theirs }]);
  const deletes = pendingDeletes(store);
  open();
  await d.idle();
  t.same(
    (await store.all(PENDING_TABLE)).map((p) => [p.id, p.leaseOwner]),
    [[taken.id, 'b']],
    'the records still ours are gone; the one taken over is left to its holder',
  );
  t.equal(deletes[0]?.[0], N, 'the batch was tried first, in one commit');
  t.equal(deletes.length, 1 + N, 'then each record on its own');
  await d.log.flush();
  const states = await Promise.all(
    APPS.map(async (a) => (await d.log.list({ ownerId: 'wu_1', appId: a.id }))[0]?.state),
  );
  t.same(
    states,
    APPS.map((a) => (a.id === 'app_3' ? 'pending' : 'delivered')),
    'the log says delivered for the records ended here, and leaves the one taken over to its holder',
  );
});

t.test(
  'a daemon that dies between its attempts and their batched delete: each event comes again once, marked',
  async (t) => {
    const home = await storeHome(t);
    if (!home) return;
    const first = createTestClock();
    const a = await openStore(t, home, first, 'a');
    const sent: Sent[] = [];
    const { gate, open } = opened();
    await worker(a.store, first, 'a', sent, gate);
    // the batch of deletions never reaches the store: the daemon dies with it under way
    const commit = a.store.commit.bind(a.store);
    a.store.commit = ((changes: Change[], ...rest: unknown[]) =>
      changes.some((c) => c.table === PENDING_TABLE && c.value === null)
        ? new Promise<void>(() => {})
        : (commit as (...x: unknown[]) => Promise<void>)(changes, ...rest)) as typeof a.store.commit;
    await post(a.store);
    await first.advance(1000);
    await until(() => sent.length === N);
    open(); // every app got its event and acked it
    await until(async () => (await a.store.count(PENDING_TABLE)) === N && sent.length === N);
    await a.close(); // a is gone (its clock never moves again): nothing of the batch was written

    // the next daemon, once a's leases ran out (PostgreSQL), or a itself restarted (embedded)
    const later = createTestClock(first.now() + 60_000);
    const b = await openStore(t, home, later, 'b');
    t.equal(await b.store.count(PENDING_TABLE), N, 'the delivered events are still pending');
    const again: Sent[] = [];
    const d = await worker(b.store, later, 'b', again, Promise.resolve());
    t.teardown(d.stop);
    await until(async () => (await later.advance(1000), await d.idle(), again.length >= N));
    await d.idle();
    const byApp = (s: Sent[]) => [...s].sort((x, y) => (x.appId < y.appId ? -1 : x.appId > y.appId ? 1 : 0));
    t.same(
      byApp(again).map((s) => [s.appId, s.raw, s.retryNum]),
      byApp(sent).map((s) => [s.appId, s.raw, 1]),
      'each event was sent again once, with the same bytes, marked as a retry',
    );
    t.equal(await b.store.count(PENDING_TABLE), 0, 'and ended then');
  },
);
