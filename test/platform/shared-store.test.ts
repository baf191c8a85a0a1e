/**
 * The local workspace with two daemons on one store (two workspace services over one memory
 * store, and over two connections to one PostgreSQL database): what must happen once happens
 * once, and what one daemon writes the other sees and hears of.
 */
import t from 'tap';
import { silentLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import { sqlAt, testWithPg } from '../helpers/pg.js';
import type { Change, Store } from '../../src/store/types.js';
import type { Clock } from '../../src/clock.js';
import { createOutboxWriter } from '../../src/services/outbox-writer.js';
import { createWorkspace } from '../../src/services/workspace/workspace.js';
import type { MessageNotice } from '../../src/services/workspace/message-index.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

type Stores = [Store, Store];
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];
const WS = 'ws_1';
const users = ['wu_a', 'wu_b'];

async function seed(store: Store) {
  await store.commit([
    { table: 'workspaces', id: WS, value: { id: WS, name: 'Test', createdAt: '2026-01-01T00:00:00.000Z' } },
    ...users.map((id): Change => ({
      table: 'workspaceUsers',
      id,
      value: {
        id,
        workspaceId: WS,
        accountId: `acc_${id}`,
        email: `${id}@x.test`,
        name: id,
        createdAt: '2026-01-01T00:00:00.000Z',
      },
    })),
  ]);
}

/**
 * The workspace of one daemon on `store`; its time is `now`, its timers `timers`' (a test clock: nothing runs unless it
 * is advanced).
 */
function daemon(
  store: Store,
  now: () => number,
  instanceId: string,
  perChannel = 100,
  timers: Clock = createTestClock(),
) {
  const clock: Clock = { ...timers, now };
  return createWorkspace({
    store,
    clock,
    logger: silentLogger,
    config: { workspaceMessagesPerChannel: perChannel, filesMaxBytes: 1000, filesTotalMaxBytes: 1500 },
    events: createOutboxWriter({ store, clock, instanceId }), // no worker drains it here
    blobs: {
      write: async (_id, _data, max) => max,
      read: () => undefined,
      remove: async () => {},
      removeExcept: async () => {},
    },
    fileUrl: (id) => `http://x/${id}`,
    callUrl: (code) => `http://x/calls/${code}`,
    instanceId,
    countEveryPost: store.kind !== 'postgres', // as the composition root decides
  });
}

async function postingAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  // One clock for both that moves a millisecond at each reading: across daemons posting order is
  // clock order (posting reads nothing of the channel), within one daemon seq alone
  let at = 1_000_000;
  const now = () => at++;
  const one = daemon(store, now, 'd1', 10);
  const two = daemon(store2, now, 'd2', 10);
  const a = await one.person('wu_a');
  const heard: MessageNotice[] = [];
  const stop = two.onMessageChange((n) => heard.push(n));
  const general = must((await one.channels.list(a)).find((c) => c.channel.name === 'general')).channel.id as string;
  for (let i = 0; i < 6; i++) await (i % 2 ? two : one).messages.post(a, general, { text: `m${i}` });
  const listed = await two.messages.list(a, general, { limit: '20' });
  t.same(
    listed.messages.map((m) => m.text),
    ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'],
    'in posting order, whichever daemon took each',
  );
  for (let i = 0; i < 4; i++) await two.messages.post(a, general, { text: `f${i}` }); // the channel is full
  // the store may hold the bound and its slack (1 here) until a post trims; readers see the newest 10
  const held = () => store.countWhere('wsMessages', 'channelId', general);
  const seen = async (d: typeof one) =>
    (await d.messages.list(a, general, { limit: '100' })).messages.map((m) => m.text);
  await Promise.all(Array.from({ length: 8 }, (_, i) => one.messages.post(a, general, { text: `c${i}` })));
  t.ok((await held()) <= 11, 'posts made at once on one daemon keep the per-channel bound (and its slack)');
  t.same(
    (await seen(two)).sort(),
    ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'f2', 'f3'],
    'readers see the newest 10',
  );
  await Promise.all(
    Array.from({ length: 6 }, (_, i) => (i % 2 ? two : one).messages.post(a, general, { text: `d${i}` })),
  );
  t.ok((await held()) <= 13, 'on two daemons at once (3 posts each), over by at most what the other posted meanwhile');
  // A trim another daemon runs can overlap a read and show it one short for that moment (a known
  // glitch); each post waits for the trim it started (or the one under way), so once the posts are
  // answered the trims are done and readers see the bound again.
  t.equal((await seen(one)).length, 10, 'readers still see 10');
  await two.messages.post(a, general, { text: 'next' });
  await two.messages.post(a, general, { text: 'and next' });
  t.ok((await held()) <= 11, 'and the next posts trim back to the bound');
  t.match(
    (await one.messages.timeline(a, general, { limit: 3 })).messages.map((m) => m.record.text),
    [/^d\d$/, 'next', 'and next'],
    'the console timeline: the newest',
  );
  const target = (await one.messages.post(a, general, { text: 'react to me' })).id as string;
  await Promise.all([one, two, one, two].map((d) => d.reactions.react(a, target, { code: ':+1:' })));
  const m = await one.messages.get(a, general, target);
  t.same(m.reactions, [{ user: 'wu_a', code: ':+1:' }], 'the same reaction added four times at once counts once');
  await until(() => heard.some((n) => n.id === target));
  t.ok(
    heard.some((n) => n.id === target && n.channelId === general),
    'the other daemon hears of the change',
  );
  stop();
}

async function namesAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  const one = daemon(store, Date.now, 'd1');
  const two = daemon(store2, Date.now, 'd2');
  const a = await one.person('wu_a');
  const results = await Promise.allSettled([
    one.channels.create(a, { name: 'ops' }),
    two.channels.create(a, { name: 'Ops' }),
    one.channels.create(a, { name: 'OPS' }),
  ]);
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one of three creations wins');
  t.ok(
    results.every((r) => r.status === 'fulfilled' || (r.reason as { code?: string }).code === 'invalid_request'),
    'the others: invalid_request',
  );
  const names = (await two.channels.list(a)).map((c) => c.channel.name);
  t.same(
    names.map((n) => String(n).toLowerCase()),
    ['general', 'random', 'ops'],
    'general and random once each, then the one ops that won',
  );
  const ops = must(await one.channels.byName(WS, '#ops'));
  await one.deleteChannel('wu_a', ops.id);
  t.ok(await two.channels.create(a, { name: 'ops' }), 'a deleted channel frees its name');
}

async function scheduledAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  const clock = createTestClock();
  const one = daemon(store, clock.now, 'd1', 100, clock);
  const two = daemon(store2, clock.now, 'd2', 100, clock);
  const a = await one.person('wu_a');
  const general =
    (await one.channels.byName(WS, 'general'))?.id ??
    (await one.channels.ensureWorkspace(WS), must(await one.channels.byName(WS, 'general')).id);
  await one.scheduled.create(a, { channelId: general, sendAt: clock.now() + 1000, text: 'later' });
  t.equal((await two.scheduled.list(a, {})).scheduledMessages.length, 1, 'seen by the other daemon');
  one.scheduled.start();
  two.scheduled.start();
  const posted = async () => (await one.messages.inChannel(general)).filter((m) => m.text === 'later');
  await clock.advance(1050); // both poll at once, then back off; at its time (on a 50 ms grain) a poll leases it
  await until(async () => (await posted()).length > 0);
  await clock.advance(5000); // and both go on polling
  await Promise.all([one.scheduled.stop(), two.scheduled.stop()]);
  t.equal((await posted()).length, 1, 'posted exactly once');
  t.equal((await one.scheduled.list(a, {})).scheduledMessages.length, 0, 'and forgotten');
}

async function filesAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  const one = daemon(store, Date.now, 'd1');
  const two = daemon(store2, Date.now, 'd2');
  const a = await one.person('wu_a');
  const up = async (d: ReturnType<typeof daemon>, n: number) => {
    const { token } = await d.files.requestToken(a, { filename: 'f.bin', length: n });
    const ticket = await d.files.beginUpload(token);
    await d.files.receive(ticket, undefined as never, 'application/octet-stream');
    return d.files.complete(a, { original: { requestedFileUploadId: ticket.fileId } });
  };
  await Promise.all([up(one, 600), up(two, 600)]);
  t.equal((await store.get('wsFileTotals', 'all'))?.bytes, 1200, 'one total, advanced by both');
  t.equal(await store.count('wsFiles'), 2);
  await t.rejects(
    two.files.requestToken(a, { filename: 'g.bin', length: 400 }),
    { code: 'payload_too_large' } as never,
    'the other daemon counts them against filesTotalMaxBytes',
  );
}

/**
 * Daemon two's trim counts the channel, then stalls before reading its oldest page; daemon one
 * trims meanwhile. Read after one's trim, two's page is the oldest of fewer records than it
 * counted: two must count again rather than delete it and cut the channel below its bound.
 */
async function trimsAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  let at = 1_000_000;
  const now = () => at++;
  let stall: Promise<void> | undefined;
  let reached!: () => void;
  const stalled = new Promise<void>((r) => (reached = r));
  const slow = new Proxy(store2, {
    get(target, prop) {
      if (prop === 'findPage') {
        return async (...args: Parameters<Store['findPage']>) => {
          const wait = stall;
          if (wait && !args[3].desc) {
            stall = undefined;
            reached();
            await wait;
          }
          return target.findPage(...args);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const one = daemon(store, now, 'd1', 10);
  const two = daemon(slow, now, 'd2', 10);
  const a = await one.person('wu_a');
  const general = must((await one.channels.list(a)).find((c) => c.channel.name === 'general')).channel.id as string;
  const held = () => store.countWhere('wsMessages', 'channelId', general);
  for (let i = 0; i < 11; i++) await one.messages.post(a, general, { text: `m${i}` });
  t.equal(await held(), 11, 'the bound and its slack: no trim yet');
  let release!: () => void;
  stall = new Promise<void>((r) => (release = r));
  const posting = two.messages.post(a, general, { text: 'from two' }); // 12: two's trim counts 12, then stalls
  await stalled;
  await one.messages.post(a, general, { text: 'from one' }); // 13: one's trim deletes the oldest 3
  t.equal(await held(), 10, 'one trimmed to the bound');
  release();
  await posting;
  t.equal(await held(), 10, 'two counted before one trimmed: it deletes nothing more');
  t.same(
    (await two.messages.list(a, general, { limit: '20' })).messages.map((m) => m.text),
    ['m3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9', 'm10', 'from two', 'from one'],
  );
}

/**
 * Asked for at once through two daemons, a user's permanent call is made once: both answers are the same call, and its
 * link's code finds it.
 */
async function callsAcross(t: TapTest, [store, store2]: Stores) {
  await seed(store);
  const one = daemon(store, Date.now, 'd1');
  const two = daemon(store2, Date.now, 'd2');
  const a = await one.person('wu_a');
  const [x, y] = await Promise.all([one.calls.permanent(a), two.calls.permanent(a)]);
  t.same(y, x, 'one call');
  t.match(await two.calls.byCode(x.code), { id: x.id, workspaceUserId: 'wu_a', userName: 'wu_a' });
}

const cases: Array<[string, (t: TapTest, stores: Stores) => Promise<void>]> = [
  ['posting order, the bound, reactions and live notices across two daemons', postingAcross],
  ['channel names are unique, and initial channels made once, across daemons', namesAcross],
  ['a scheduled message is posted once by two daemons', scheduledAcross],
  ['the files total counts every daemon', filesAcross],
  ['two daemons trimming a channel at once keep its bound', trimsAcross],
  ['a permanent call is made once across daemons', callsAcross],
];

for (const [name, fn] of cases) {
  t.test(`${name} (embedded)`, async (t) => {
    const store = createMemoryStore();
    await fn(t, [store, store]);
  });
  void testWithPg(t, `${name} (PostgreSQL)`, async (t, url) => {
    const stores: Stores = [
      await openPostgresStore({ url, logger: silentLogger, instanceId: 'd1' }),
      await openPostgresStore({ url, logger: silentLogger, instanceId: 'd2' }),
    ];
    t.teardown(() => Promise.all(stores.map((s) => s.close())));
    await fn(t, stores);
  });
}

void testWithPg(
  t,
  'a daemon whose LISTEN connection dropped is told its message notices were lost once it is back (PostgreSQL)',
  async (t, url) => {
    const clock = createTestClock();
    let warned = '';
    const s1 = await openPostgresStore({ url, logger: silentLogger, clock, instanceId: 'd1' });
    const s2 = await openPostgresStore({
      url,
      logger: { warn: (m) => void (warned += m + '\n') },
      clock,
      instanceId: 'd2',
      listenRetryMs: 1500,
    }); // the gap lasts 1.5 s
    t.teardown(() => Promise.all([s1.close(), s2.close()]));
    await seed(s1);
    const one = daemon(s1, clock.now, 'd1', 100, clock);
    const two = daemon(s2, clock.now, 'd2', 100, clock);
    const a = await one.person('wu_a');
    const general = must((await one.channels.list(a)).find((c) => c.channel.name === 'general')).channel.id as string;
    const heard: string[] = [];
    let lost = 0;
    const stop = two.onMessageChange(
      (n) => heard.push(n.id),
      () => lost++,
    );
    t.teardown(stop);
    await s2.subscribed(); // two's LISTEN is in place
    const m1 = await one.messages.post(a, general, { text: 'before' });
    await until(() => heard.length === 1);
    t.same(heard, [m1.id], 'heard while connected');
    const cut = await sqlAt<{ ok: boolean }>(
      url,
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'appreg-d2' AND query LIKE 'LISTEN%'",
    );
    t.same(cut, [{ ok: true }], "two's LISTEN connection was cut");
    await until(() => /LISTEN connection to PostgreSQL dropped/.test(warned)); // two knows: nothing more reaches it
    await one.messages.post(a, general, { text: 'in the gap' });
    t.same([heard.length, lost], [1, 0], 'not heard while the connection is down');
    await clock.advance(1500); // two reconnects
    await until(() => lost > 0);
    t.equal(lost, 1, 'told once, when the connection is back, that any message may have changed');
    t.equal(heard.length, 1, 'the lost notice itself is not made up');
  },
);
