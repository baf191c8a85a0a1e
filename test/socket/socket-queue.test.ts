/**
 * The socket-mode event queue: events for a disconnected app are kept on disk and sent in order on reconnect, never
 * twice.
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import { defaults, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/types.js';
import { createSocketSessions } from '../../src/services/socket-sessions.js';
import type { SocketConn } from '../../src/delivery/socket-connections.js';
import { createSocketTransport } from '../../src/delivery/socket-transport.js';
import { SOCKET_QUEUE_TABLE } from '../../src/delivery/socket-queue.js';
import type { SendRequest } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';

/** Whether one line of the log holds every one of `parts` (in any order: a line's fields come before its message). */
const loggedLine = (log: string, ...parts: string[]) => log.split('\n').some((l) => parts.every((p) => l.includes(p)));

function setup(opts: { store?: Store; config?: Partial<Config>; clock?: TestClock } = {}) {
  const clock = opts.clock ?? createTestClock(1_700_000_000_000);
  let logText = '';
  const logger = createLogger({ level: 'debug', stream: { write: (s: string) => (logText += s) } });
  const config = { ...defaults, ...opts.config };
  const store = opts.store ?? createMemoryStore();
  const sessions = createSocketSessions({ store, clock, logger, config });
  const transport = createSocketTransport({
    sessions,
    clock,
    queue: {
      store,
      logger,
      config,
      instanceId: 'test-daemon',
      relay: false,
    },
  });
  return { sessions, transport, store, clock, logs: () => logText };
}

function conn(appId = 'app_1', writeDelayMs = 0) {
  const sent: any[] = [];
  const c: SocketConn & { sent: any[] } = {
    id: 'sck_' + Math.random().toString(36).slice(2),
    appId,
    sent,
    send(text, cb) {
      setTimeout(() => {
        sent.push(JSON.parse(text).payload);
        cb?.();
      }, writeDelayMs);
    },
    close() {},
  };
  return c;
}

const app = { id: 'app_1', manifest: { socketMode: true } } as unknown as AppRecord;
const event = (n: number, over: Partial<SendRequest> = {}): SendRequest => ({
  deliveryId: `dlv_${n}`,
  attemptId: `att_${n}`,
  app,
  interactive: false,
  budgetMs: 10_000,
  retryNum: 0,
  signingSecret: '',
  payload: {
    messageType: 'PUMBLE_EVENT',
    eventType: 'NEW_MESSAGE',
    workspaceId: 'ws',
    workspaceUserIds: [],
    body: JSON.stringify({ n }),
  },
  ...over,
});
const ns = (c: { sent: any[] }) => c.sent.map((p) => JSON.parse(p.body).n);

t.test('events while disconnected: no_connection at once, kept on disk, sent in order on reconnect', async (t) => {
  const { sessions, transport, store } = setup();
  for (const n of [1, 2, 3]) {
    const r = await transport.send(event(n));
    t.equal(r.outcome, 'no_connection');
    t.match(r.error, /kept and sent in order when it reconnects/);
  }
  t.equal(await transport.queued('app_1'), 3);
  t.equal(await store.count(SOCKET_QUEUE_TABLE), 3, 'stored before the attempt ends');
  const c = conn();
  sessions.add(c);
  await until(() => c.sent.length === 3);
  t.same(ns(c), [1, 2, 3], 'in order');
  t.equal(await transport.queued('app_1'), 0);
  t.equal(await store.count(SOCKET_QUEUE_TABLE), 0);
  const retry = await transport.send(event(2, { retryNum: 1 }));
  t.equal(retry.outcome, 'acked', "the engine's later retry of a sent event is acked");
  t.match(retry.excerpt, /sent from the socket-mode queue/);
  t.equal((await transport.send(event(4))).outcome, 'acked');
  await until(() => c.sent.length >= 4);
  t.same(ns(c), [1, 2, 3, 4], 'and not sent twice: the next event is the next on the connection');
});

t.test('an engine retry while still disconnected keeps one copy', async (t) => {
  const { transport } = setup();
  await transport.send(event(1));
  await transport.send(event(1, { retryNum: 1 }));
  await transport.send(event(1, { retryNum: 2 }));
  t.equal(await transport.queued('app_1'), 1);
});

t.test('a new event while kept ones are being sent goes after them', async (t) => {
  const { sessions, transport } = setup();
  for (const n of [1, 2, 3]) await transport.send(event(n));
  const c = conn('app_1', 10);
  sessions.add(c); // starts sending 1, 2, 3
  const r4 = await transport.send(event(4));
  t.equal(r4.outcome, 'acked', 'acked once written, after the older ones');
  t.same(ns(c), [1, 2, 3, 4]);
  const r5 = await transport.send(event(5));
  t.equal(r5.outcome, 'acked');
  t.same(ns(c), [1, 2, 3, 4, 5], 'queue empty again: direct send');
});

t.test('kept events survive a restart', async (t) => {
  const store = createMemoryStore();
  const first = setup({ store });
  await first.transport.send(event(1));
  await first.transport.send(event(2));
  const second = setup({ store });
  t.equal(await second.transport.queued('app_1'), 2);
  await second.transport.send(event(3));
  const c = conn();
  second.sessions.add(c);
  await until(() => c.sent.length === 3);
  t.same(ns(c), [1, 2, 3]);
});

t.test('bounded: too old or too many are dropped with a warning, never silently', async (t) => {
  const clock = createTestClock(1_700_000_000_000);
  const { sessions, transport, logs } = setup({
    clock,
    config: { socketQueueMaxAgeMs: 60_000, socketQueueMaxPerApp: 3 },
  });
  await transport.send(event(1));
  clock.set(clock.now() + 61_000);
  for (const n of [2, 3, 4, 5]) await transport.send(event(n));
  t.equal(await transport.queued('app_1'), 3, 'the cap keeps the newest 3');
  t.match(logs(), /"deliveryId":"dlv_1".*more than 3 events kept/);
  clock.set(clock.now() + 30_000);
  const c = conn();
  sessions.add(c);
  await until(() => c.sent.length === 3);
  t.same(ns(c), [3, 4, 5]);
  await transport.send(event(6));
  clock.set(clock.now() + 61_000);
  sessions.remove(c);
  await transport.send(event(7));
  clock.set(clock.now() + 61_000);
  const c2 = conn();
  sessions.add(c2);
  await until(() => /older than socketQueueMaxAgeMs/.test(logs()));
  t.same(ns(c2), [], 'an event older than the horizon is dropped');
  t.match(logs(), /"deliveryId":"dlv_7".*older than socketQueueMaxAgeMs/);
});

t.test('interactive kinds are never kept: no_connection, and the engine shows the offline message', async (t) => {
  const { transport } = setup();
  const r = await transport.send(event(1, { interactive: true, payload: { messageType: 'SLASH_COMMAND' } }));
  t.equal(r.outcome, 'no_connection');
  t.equal(await transport.queued('app_1'), 0);
});

t.test(
  'by default a kept event waits as long as the retry schedule runs, then is dropped and the engine told',
  async (t) => {
    const clock = createTestClock(1_700_000_000_000);
    // horizon: (10 s + 20 s) × 1.2 jitter + 3 × 1 s of attempt timeouts = 39 s, plus a minute's slack
    const { sessions, transport, logs } = setup({
      clock,
      config: { socketQueueMaxAgeMs: 0, deliveryRetrySchedule: '10,20', deliveryEventTimeoutMs: 1000 },
    });
    const told: Array<{ id: string; outcome: string; error?: string }> = [];
    transport.onKeptSettled((id, _appId, r) => told.push({ id, outcome: r.outcome, error: r.error }));
    await transport.send(event(1));
    clock.set(clock.now() + 98_000);
    await transport.send(event(2));
    clock.set(clock.now() + 2_000); // event 1 is now 100 s old: past 99 s; event 2 is 2 s old
    const c = conn();
    sessions.add(c);
    await until(() => c.sent.length === 1);
    await until(() => told.length === 2);
    t.same(ns(c), [2], 'the event past the horizon is not sent');
    t.match(logs(), /"deliveryId":"dlv_1".*older than the retry schedule's horizon \(99 s\)/);
    t.match(
      told,
      [
        { id: 'dlv_1', outcome: 'no_connection', error: /dropped from the socket-mode queue/ },
        { id: 'dlv_2', outcome: 'acked' },
      ],
      'the engine hears of both, in order',
    );
  },
);

t.test('discard: the engine gave up, so the kept copy goes (logged, and not reported back)', async (t) => {
  const { sessions, transport, store, logs } = setup();
  const told: string[] = [];
  transport.onKeptSettled((id) => told.push(id));
  for (const n of [1, 2, 3]) await transport.send(event(n));
  t.equal(await transport.discard('app_1', 'dlv_2', 'the retry schedule ran out'), true);
  t.equal(await transport.discard('app_1', 'dlv_2', 'again'), false, 'only once');
  t.equal(await transport.discard('app_1', 'dlv_9', 'never kept'), false);
  t.equal(await transport.queued('app_1'), 2);
  await until(async () => (await store.count(SOCKET_QUEUE_TABLE)) === 2);
  t.equal(await store.count(SOCKET_QUEUE_TABLE), 2, 'gone from disk too');
  t.match(logs(), /"deliveryId":"dlv_2".*the retry schedule ran out/);
  const c = conn();
  sessions.add(c);
  await until(() => c.sent.length === 2);
  t.same(ns(c), [1, 3]);
  t.same(told, ['dlv_1', 'dlv_3'], 'sent events are reported, the discarded one is not');
});

t.test('discard never rejects: a store that fails is logged and the answer is false', async (t) => {
  const failing = { ...createMemoryStore(), get: () => Promise.reject(new Error('store unreachable')) } as Store;
  const { transport, logs } = setup({ store: failing });
  t.equal(await transport.discard('app_1', 'dlv_1', 'the retry schedule ran out'), false);
  t.ok(loggedLine(logs(), 'could not be dropped from the queue', 'store unreachable'));
});

/** A memory store whose commits and reads of the queue a test can hold (`hold` decides, per call, what to wait for). */
function heldStore(hold: {
  commit?: (changes: Parameters<Store['commit']>[0]) => { before?: Promise<void>; after?: Promise<void> } | undefined;
  read?: () => { before?: Promise<void>; after?: Promise<void> } | undefined;
}) {
  const base = createMemoryStore();
  const store = {
    ...base,
    commit: (async (...args: Parameters<Store['commit']>) => {
      const h = hold.commit?.(args[0]);
      await h?.before;
      await base.commit(...args);
      await h?.after;
    }) as Store['commit'],
    find: (async (...args: Parameters<Store['find']>) => {
      const h = args[0] === SOCKET_QUEUE_TABLE ? hold.read?.() : undefined;
      await h?.before;
      const found = await base.find(...args);
      await h?.after;
      return found;
    }) as Store['find'],
  } as Store;
  return { store, base };
}

const gate = () => {
  let open: () => void = () => {};
  const shut = new Promise<void>((r) => (open = r));
  return { shut, open };
};
const keeps = (changes: Parameters<Store['commit']>[0]) =>
  changes.some((c) => c.table === SOCKET_QUEUE_TABLE && c.value !== null);

t.test(
  'an event kept while a connection of the app opens goes out on it (its flush read the queue before the keep)',
  async (t) => {
    const keepWrite = gate();
    let keepAsked = false;
    let reads = 0;
    const { store } = heldStore({
      commit: (changes) =>
        keeps(changes) && !keepAsked ? ((keepAsked = true), { before: keepWrite.shut }) : undefined,
      read: () => void reads++,
    });
    const { sessions, transport } = setup({ store });
    const r = transport.send(event(1)); // no connection: kept (after a read of the queue), its write held
    await until(() => keepAsked);
    const c = conn();
    sessions.add(c); // the connection's flush reads the queue: nothing kept yet
    await until(() => reads >= 2);
    await new Promise((r) => setImmediate(r));
    keepWrite.open();
    t.equal((await r).outcome, 'no_connection', 'no connection when it was sent');
    await until(() => c.sent.length === 1);
    t.same(ns(c), [1], 'sent on the connection that opened while it was being kept');
    t.equal(await transport.queued('app_1'), 0);
  },
);

for (const when of ['before', 'after'] as const)
  t.test(
    `an event sent while a flush takes its last look is sent by that flush (the look read ${when} the keep landed)`,
    async (t) => {
      const look = gate();
      let reads = 0;
      const { store, base } = heldStore({
        // the connection's flush: its first read finds nothing; its last look is answered when the test says
        read: () => (++reads === 2 ? { [when === 'before' ? 'after' : 'before']: look.shut } : undefined),
      });
      const { sessions, transport } = setup({ store });
      const c = conn();
      sessions.add(c);
      await until(() => reads >= 2);
      let outcome: string | undefined;
      void transport.send(event(1)).then((r) => (outcome = r.outcome)); // a flush runs: it waits its turn, kept
      await until(async () => (await base.count(SOCKET_QUEUE_TABLE)) === 1);
      await new Promise((r) => setImmediate(r)); // the keep is done (and its flush asked for)
      look.open();
      await until(() => outcome);
      t.equal(outcome, 'acked', 'sent on the open connection, not left kept');
      t.same(ns(c), [1]);
    },
  );

t.test(
  'an event whose keep is written but not yet done when a flush takes its last look is sent by that flush',
  async (t) => {
    const keepDone = gate();
    let reads = 0;
    const look = gate();
    const { store, base } = heldStore({
      commit: (changes) => (keeps(changes) ? { after: keepDone.shut } : undefined),
      read: () => (++reads === 2 ? { before: look.shut } : undefined),
    });
    const { sessions, transport } = setup({ store });
    const c = conn();
    sessions.add(c);
    await until(() => reads >= 2);
    let outcome: string | undefined;
    void transport.send(event(1)).then((r) => (outcome = r.outcome));
    await until(async () => (await base.count(SOCKET_QUEUE_TABLE)) === 1); // written, its keep not yet done
    look.open(); // the last look sees it
    await new Promise((r) => setImmediate(r));
    keepDone.open();
    await until(() => outcome);
    t.equal(outcome, 'acked', 'sent on the open connection, its sender not told it stays kept');
    t.same(ns(c), [1]);
  },
);

t.test("the relay heartbeat's flush of a held app never rejects: a store that fails is logged", async (t) => {
  const clock = createTestClock(1_700_000_000_000);
  let logText = '';
  const logger = createLogger({ level: 'debug', stream: { write: (s: string) => (logText += s) } });
  const base = createMemoryStore();
  let failing = false;
  const store = {
    ...base,
    find: (async (...args: Parameters<Store['find']>) => {
      if (failing) throw new Error('store is closed');
      return base.find(...args);
    }) as Store['find'],
  } as Store;
  const config = { ...defaults };
  const sessions = createSocketSessions({ store, clock, logger, config });
  const transport = createSocketTransport({
    sessions,
    clock,
    queue: {
      store,
      logger,
      config,
      instanceId: 'test-daemon',
      relay: true,
    },
  });
  t.teardown(() => transport.close());
  sessions.add(conn());
  await clock.advance(100); // the holder record is written
  failing = true;
  await clock.advance(5000); // the heartbeat: the app is held here, its queue flushed (a read that fails)
  await until(() => loggedLine(logText, 'socket-mode queue flush failed', 'store is closed'));
  t.pass('logged, not an unhandled rejection');
});
