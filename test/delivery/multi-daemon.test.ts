/**
 * Delivery with several daemons on one PostgreSQL database, in one process: two stores (two
 * "daemons") on one database, each with its own socket sessions, transport and delivery log.
 * The delivery log is shared; an app connected to one daemon is reached from the other; events
 * kept by one are sent by the one the app connects to. The daemons of a test share one test
 * clock: their heartbeats, budgets and reconnects run when the test advances it.
 */
import t from 'tap';
import { defaults } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import { createSocketSessions } from '../../src/services/socket-sessions.js';
import type { SocketConn } from '../../src/delivery/socket-connections.js';
import { createSocketTransport } from '../../src/delivery/socket-transport.js';
import { SOCKET_HOLDERS_TABLE } from '../../src/delivery/socket-relay.js';
import type { LogEntry } from '../../src/delivery/log.js';
import type { AttemptRecord } from '../../src/model/delivery.js';
import { openStoreDeliveryLog } from '../../src/delivery/store-log.js';
import type { SendRequest } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { sqlAt, testWithPg } from '../helpers/pg.js';
import { engineOf } from '../helpers/test-tables.js';
import { until } from '../helpers/until.js';
import { begunEvent } from '../helpers/log-entries.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

/** Everything logged at warn and above, by every daemon of the file. */
let warned = '';
const logger = createLogger({ level: 'warn', stream: { write: (s: string) => void (warned += s) } });

async function daemon(t: Tap.Test, url: string, clock: TestClock, name: string, listenRetryMs?: number) {
  const store = await openPostgresStore({ url, logger, clock, instanceId: name, listenRetryMs });
  const config = { ...defaults };
  const sessions = createSocketSessions({ store, clock, logger, config });
  const transport = createSocketTransport({
    sessions,
    clock,
    queue: {
      store,
      logger,
      config,
      instanceId: name,
      relay: true,
    },
  });
  const log = openStoreDeliveryLog({ store, retentionDays: 7, clock, logger });
  // the daemon hears the others once its LISTENs are in place (a hint sent before is lost, by design)
  await store.subscribed();
  t.teardown(async () => {
    await transport.close();
    await log.close();
    await store.close();
  });
  return { name, store, sessions, transport, log };
}

/** A socket-mode connection that answers every interactive frame with `message` (as the SDK would). */
function answeringConn(d: { sessions: ReturnType<typeof createSocketSessions> }, message = 'done') {
  const frames: any[] = [];
  const c: SocketConn = {
    id: 'sck_' + Math.random().toString(36).slice(2),
    appId: 'app_1',
    send(text, cb) {
      const f = JSON.parse(text);
      frames.push(f);
      setImmediate(() => {
        cb?.();
        if (f.payload.messageType !== 'PUMBLE_EVENT')
          d.sessions.handleFrame(c, JSON.stringify({ correlation_id: f.correlation_id, status: 200, message }));
      });
    },
    close() {},
  };
  return { c, frames };
}

const app = { id: 'app_1', manifest: { socketMode: true } } as unknown as AppRecord;
const req = (over: Partial<SendRequest> = {}): SendRequest => ({
  deliveryId: 'dlv_1',
  attemptId: 'att_1',
  app,
  interactive: true,
  budgetMs: 3000,
  retryNum: 0,
  signingSecret: '',
  payload: { messageType: 'SLASH_COMMAND', slashCommand: '/go', text: 'hi' },
  ...over,
});
/** The entry that begins delivery `id` (created at `at`). */
const begin = (id: string, at: string): LogEntry => begunEvent(id, at, { n: id }, { transport: 'socket' });
const attempt = (id: string, n: number, at: string): AttemptRecord => ({
  id: `att_${id}_${n}`,
  at,
  retryNum: n,
  latencyMs: 1,
  outcome: 'acked',
  status: 200,
});

void testWithPg(
  t,
  'the delivery log is shared: what one daemon puts, the other lists, shows and hears',
  async (t, url) => {
    const clock = createTestClock();
    const now = () => new Date(clock.now()).toISOString();
    const a = await daemon(t, url, clock, 'a');
    const b = await daemon(t, url, clock, 'b');
    const heard: string[] = [];
    b.log.onChange((r) => heard.push(`${r.id}:${r.state}`));
    a.log.append(begin('dlv_1', now()));
    a.log.append({ id: 'dlv_1', attempt: attempt('dlv_1', 0, now()), state: { at: now(), state: 'delivered' } });
    a.log.append(begin('dlv_2', now()));
    t.match(
      await a.log.get('dlv_1'),
      { state: 'delivered', attempts: [{ retryNum: 0 }] },
      'a get right after an entry answers it',
    );
    await a.log.flush();
    t.match(await b.log.get('dlv_1'), {
      id: 'dlv_1',
      state: 'delivered',
      outcome: 'acked',
      payload: { n: 'dlv_1' },
      attempts: [{ id: 'att_dlv_1_0', outcome: 'acked', status: 200 }],
    });
    // an attempt appended by the other daemon (an event it took over), later: both show the two attempts, in
    // order (across daemons the order is the clock's, to the millisecond)
    await clock.advance(1);
    b.log.append({ id: 'dlv_1', attempt: attempt('dlv_1', 1, now()), state: { at: now(), state: 'delivered' } });
    t.same(
      (await b.log.get('dlv_1'))?.attempts.map((x) => x.id),
      ['att_dlv_1_0', 'att_dlv_1_1'],
      'before it is written',
    );
    await b.log.flush();
    t.same(
      (await a.log.get('dlv_1'))?.attempts.map((x) => x.id),
      ['att_dlv_1_0', 'att_dlv_1_1'],
      'and once written, on the other daemon',
    );
    t.same(
      (await b.log.list({ ownerId: 'wu_1' })).map((r) => r.id),
      ['dlv_2', 'dlv_1'],
      'newest first',
    );
    t.same(await b.log.list({ ownerId: 'wu_1', appId: 'app_1', failed: true }), []);
    await until(() => heard.includes('dlv_1:delivered') && heard.includes('dlv_2:pending'));
    t.ok(
      heard.includes('dlv_1:delivered') && heard.includes('dlv_2:pending'),
      `b heard a's puts (${heard.join(', ')})`,
    );
  },
);

void testWithPg(
  t,
  "puts announced while a daemon's LISTEN connection was down are told once it is back",
  async (t, url) => {
    const clock = createTestClock();
    const now = () => new Date(clock.now()).toISOString();
    const a = await daemon(t, url, clock, 'a');
    const b = await daemon(t, url, clock, 'b', 1500); // b waits 1.5 s before reconnecting: a's put falls inside the gap
    const heard: string[] = [];
    b.log.onChange((r) => heard.push(`${r.id}:${r.state}`));
    a.log.append(begin('dlv_before', now()));
    await a.log.flush();
    await until(() => heard.length === 1);
    t.same(heard, ['dlv_before:pending'], 'heard while connected');
    // only b's LISTEN connection is cut (its last statement is a LISTEN), as a network blip would
    const cut = await sqlAt<{ ok: boolean }>(
      url,
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'appreg-b' AND query LIKE 'LISTEN%'",
    );
    t.same(cut, [{ ok: true }], "b's LISTEN connection was cut");
    await until(() => /LISTEN connection to PostgreSQL dropped/.test(warned)); // b knows: nothing more reaches it
    await clock.advance(1000);
    a.log.append(begin('dlv_gap', now()));
    await a.log.flush();
    t.same(heard, ['dlv_before:pending'], 'its announcement is not heard while the connection is down');
    await clock.advance(500); // b reconnects, and is told of the gap
    await until(() => heard.includes('dlv_gap:pending'));
    // what changed shortly before the gap is told again too (a live page shows it as it was)
    t.same(
      heard.slice(1),
      ['dlv_before:pending', 'dlv_gap:pending'],
      'read back and told, oldest first, once the connection is back',
    );
  },
);

void testWithPg(
  t,
  'a trigger reaches the app through the daemon that holds its connection, big payloads too',
  async (t, url) => {
    const clock = createTestClock();
    const a = await daemon(t, url, clock, 'a');
    const b = await daemon(t, url, clock, 'b');
    const { c, frames } = answeringConn(b, 'from b');
    b.sessions.add(c);
    await until(async () => (await a.store.find(SOCKET_HOLDERS_TABLE, 'appId', 'app_1')).length === 1);
    const r = await a.transport.send(req());
    t.match(
      r,
      { outcome: 'acked', message: 'from b' },
      'relayed to b and answered, the clock standing still: within the budget',
    );
    const big = await a.transport.send(
      req({ deliveryId: 'dlv_2', payload: { messageType: 'SLASH_COMMAND', text: 'x'.repeat(20_000) } }),
    );
    t.match(
      big,
      { outcome: 'acked', message: 'from b' },
      'a payload over the notification limit goes through a record',
    );
    t.equal(frames.length, 2);
    // b stops: its holder record goes, and a behaves as for an app with no connection
    b.sessions.remove(c);
    await b.transport.close();
    const none = await a.transport.send(req({ deliveryId: 'dlv_3' }));
    t.equal(none.outcome, 'no_connection');
  },
);

void testWithPg(t, 'events kept while the app was away are sent by the daemon it connects to', async (t, url) => {
  const clock = createTestClock();
  const a = await daemon(t, url, clock, 'a');
  const b = await daemon(t, url, clock, 'b');
  const ev = (n: number) =>
    req({ deliveryId: `dlv_${n}`, interactive: false, payload: { messageType: 'PUMBLE_EVENT', n } });
  for (const n of [1, 2]) t.equal((await a.transport.send(ev(n))).outcome, 'no_connection');
  t.equal(await b.transport.queued('app_1'), 2, 'kept in the shared store');
  const { c, frames } = answeringConn(b);
  b.sessions.add(c);
  await until(() => frames.length === 2);
  t.same(
    frames.map((f) => f.payload.n),
    [1, 2],
    'sent in order by b',
  );
  t.equal(await a.transport.queued('app_1'), 0);
  await until(async () => (await a.store.find(SOCKET_HOLDERS_TABLE, 'appId', 'app_1')).length === 1);
  const retry = await a.transport.send({ ...ev(1), retryNum: 1 });
  t.equal(retry.outcome, 'acked', 'a retry of a sent event is acked, not sent twice');
  const live = await a.transport.send(ev(3));
  t.equal(live.outcome, 'acked', 'a new event goes to b at once');
  await until(() => frames.length === 3);
  t.same(
    frames.map((f) => f.payload.n),
    [1, 2, 3],
  );
});

void testWithPg(
  t,
  'the log in the database is bounded: past the retention and past the count, the oldest go',
  async (t, url) => {
    const clock = createTestClock();
    const store = await openPostgresStore({ url, logger, clock, instanceId: 'p' });
    const log = openStoreDeliveryLog({ store, retentionDays: 1, clock, logger, maxRecords: 3 });
    t.teardown(async () => {
      await log.close();
      await store.close();
    });
    const at = (ms: number) => new Date(ms).toISOString();
    const withAttempt = (id: string, ms: number) => {
      log.append(begin(id, at(ms)));
      log.append({ id, attempt: attempt(id, 0, at(ms)), state: { at: at(ms), state: 'delivered' } });
    };
    withAttempt('dlv_old', clock.now() - 2 * 86_400_000);
    // a whole delivery as an earlier appreg stored it, in its old shape: read, and pruned alike
    const legacy = {
      id: 'dlv_legacy',
      kind: 'event',
      appId: 'app_1',
      appName: 'a',
      ownerId: 'wu_1',
      workspaceId: 'ws_1',
      userId: 'wu_1',
      transport: 'socket',
      createdAt: at(clock.now()),
      updatedAt: at(clock.now()),
      state: 'failed',
      payload: { n: 0 },
      attempts: [attempt('dlv_legacy', 0, at(clock.now()))],
    };
    await engineOf(store).commit([
      {
        table: 'deliveryLog',
        id: legacy.id,
        value: {
          id: legacy.id,
          appId: 'app_1',
          ownerId: 'wu_1',
          createdAt: legacy.createdAt,
          updatedAt: legacy.updatedAt,
          seq: 0,
          rec: legacy,
        },
      },
    ]);
    t.match(
      await log.get('dlv_legacy'),
      { state: 'failed', attempts: [{ id: 'att_dlv_legacy_0' }] },
      'a delivery in the old shape is shown',
    );
    for (let i = 1; i <= 5; i++) withAttempt(`dlv_${i}`, clock.now() + i);
    await log.flush();
    t.equal(await store.count('deliveryLog'), 7, 'nothing pruned within the minute');
    t.equal(await store.count('deliveryAttempts'), 6, 'each attempt a record of its own');
    clock.set(clock.now() + 61_000);
    withAttempt('dlv_6', clock.now());
    await log.flush();
    t.same(
      (await log.list({ ownerId: 'wu_1', limit: 10 })).map((r) => r.id),
      ['dlv_6', 'dlv_5', 'dlv_4'],
      'the 3 newest are kept',
    );
    t.equal(await log.get('dlv_old'), undefined, 'past the retention');
    t.equal(await store.count('deliveryAttempts'), 3, 'the attempts of those pruned went with them');
    t.equal(await store.count('deliveryStates'), 3, 'and their states');
  },
);

void testWithPg(
  t,
  'a delivery whose payload or answer holds a NUL is kept, the NUL as U+FFFD (the database keeps none)',
  async (t, url) => {
    const clock = createTestClock();
    const store = await openPostgresStore({ url, logger, clock, instanceId: 'nul' });
    const log = openStoreDeliveryLog({ store, retentionDays: 1, clock, logger });
    t.teardown(async () => {
      await log.close();
      await store.close();
    });
    const payload = { text: 'a\u0000b', ['k\u0000']: ['\u0000'] };
    const at = new Date(clock.now()).toISOString();
    const b = begin('dlv_nul', at);
    log.append({ ...b, begun: { ...must(b.begun), payload, raw: JSON.stringify(payload) } });
    log.append({
      id: 'dlv_nul',
      attempt: { ...attempt('dlv_nul', 0, at), response: 'x\u0000' },
      state: { at, state: 'delivered' },
    });
    await log.flush();
    // read back by a second log on the same database: what was written, not this log's own copy
    const other = openStoreDeliveryLog({ store, retentionDays: 1, clock, logger });
    t.teardown(() => other.close());
    const kept = await other.get('dlv_nul');
    t.same(kept?.payload, { text: 'a\ufffdb', ['k\ufffd']: ['\ufffd'] }, 'written, every NUL replaced');
    t.equal(kept?.response, 'x\ufffd');
    t.equal(kept?.state, 'delivered');
  },
);

void testWithPg(
  t,
  "an app's connections are counted across daemons: each holder record says how many it holds",
  async (t, url) => {
    const clock = createTestClock();
    const a = await daemon(t, url, clock, 'a');
    const b = await daemon(t, url, clock, 'b');
    const count = () => a.transport.connections('app_1');
    t.equal(await count(), 0, 'none anywhere');
    const [one, two, mine] = [answeringConn(b).c, answeringConn(b).c, answeringConn(a).c];
    b.sessions.add(one);
    b.sessions.add(two);
    a.sessions.add(mine);
    await clock.advance(100); // each daemon writes its count 100 ms after a connection opened
    t.equal(await count(), 3, "a counts its own and b's two");
    t.equal(await b.transport.connections('app_1'), 3, 'and so does b');
    // b's heartbeat comes every 5 s: a close is written 100 ms after it
    b.sessions.remove(two);
    await clock.advance(99);
    t.equal(await count(), 3, 'not yet');
    await clock.advance(1);
    t.equal(await count(), 2, 'a connection closed on b is counted out 100 ms later');
    b.sessions.remove(one);
    await clock.advance(100);
    t.equal(await count(), 1, 'b holds none now');
    t.same(
      (await a.store.find(SOCKET_HOLDERS_TABLE, 'appId', 'app_1')).map((h) => h.instanceId),
      ['a'],
      "and b's holder record is gone",
    );
  },
);
