/**
 * Socket mode through the delivery engine: triggers, events, the budget, the log and deliver-test, as for HTTP apps.
 */
import t from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { connectTestClient } from '../helpers/sdk-socket-client.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

interface App {
  id: string;
  appKey: string;
}
const HOST = 'http://127.0.0.1:9'; // never called: socket-mode apps get everything over the socket

async function createApp(d: TestDaemon): Promise<App> {
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({
      socketMode: true,
      name: 'sock-' + Math.random().toString(36).slice(2, 8),
      displayName: 'Socket App',
      offlineMessage: 'Socket App is offline',
      scopes: { botScopes: ['messages:read', 'channels:read'], userScopes: [] },
      shortcuts: [
        { shortcutType: 'GLOBAL', url: `${HOST}/s`, name: 'start', displayName: 'Start' },
        { shortcutType: 'ON_MESSAGE', url: `${HOST}/m`, name: 'remind', displayName: 'Remind' },
      ],
      slashCommands: [{ command: '/sock', url: `${HOST}/slash` }],
      eventSubscriptions: { url: `${HOST}/events`, events: ['NEW_MESSAGE', 'CHANNEL_CREATED'] },
      blockInteraction: { url: `${HOST}/b` },
      viewAction: { url: `${HOST}/v` },
      dynamicMenus: [{ url: `${HOST}/menu`, onAction: 'pick' }],
    }),
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()) as App;
}

const connect = connectTestClient;

async function trigger(d: TestDaemon, body: Record<string, unknown>) {
  const res = await d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: body });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** Let `ms` pass on the daemon's clock, `grain` at a time, each step's attempts settled before the next. */
async function step(clock: TestClock, d: TestDaemon, ms: number, grain = ms) {
  for (let done = 0; done < ms; done += grain) {
    await clock.advance(Math.min(grain, ms - done));
    await d.parts.delivery.dispatcher.idle();
  }
}

/** The delivery as the API shows it. */
const shown = async (d: TestDaemon, id: string) =>
  (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as Record<string, any>;

t.test('every kind over the socket, answered as the SDK answers, recorded in the delivery log', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const c = connect(t, d, app, {
    handler: (p) => {
      switch (p.messageType) {
        case 'SLASH_COMMAND':
          return { status: 200, message: `got ${p.text}` };
        case 'SHORTCUT':
          return p.type === 'GLOBAL' ? { status: 200 } : { status: 500, message: 'cannot remind' };
        case 'DYNAMIC_MENU':
          return {
            status: 200,
            message: 'ok',
            body: { onAction: 'pick', options: [{ text: 'a', value: 'a' }], triggerId: p.triggerId, value: '' },
          };
        case 'VIEW_ACTION':
        case 'BLOCK_INTERACTION':
          return { status: 200 };
        default:
          return undefined; // events: no reply
      }
    },
  });
  await c.start();
  const cases: Array<[Record<string, unknown>, string, Record<string, unknown>]> = [
    [{ kind: 'slash-command', text: 'hello' }, 'acked', { ephemeralMessage: 'got hello' }],
    [{ kind: 'global-shortcut' }, 'acked', {}],
    [{ kind: 'message-shortcut', messageId: 'msg_1' }, 'nacked', { ephemeralMessage: 'cannot remind' }],
    [{ kind: 'block-interaction', onAction: 'go' }, 'acked', {}],
    [{ kind: 'view-action' }, 'acked', {}],
    [{ kind: 'dynamic-menu', query: 'a' }, 'response', { response: { options: [{ value: 'a' }] } }],
    [{ kind: 'event', event: 'NEW_MESSAGE' }, 'acked', {}],
  ];
  for (const [body, outcome, extra] of cases) {
    const r = await trigger(d, { appId: app.id, ...body });
    t.equal(r.status, 201);
    t.match(r.body, { outcome, transport: 'socket', ...extra }, `${body.kind}: ${outcome}`);
    t.notOk('url' in r.body, 'no HTTP target for a socket-mode app');
  }
  t.equal(c.delivered.length, cases.length, 'every kind arrived over the socket');
  t.same(
    c.delivered.map((x) => x.payload.messageType),
    ['SLASH_COMMAND', 'SHORTCUT', 'SHORTCUT', 'BLOCK_INTERACTION', 'VIEW_ACTION', 'DYNAMIC_MENU', 'PUMBLE_EVENT'],
  );
  t.type(must(c.delivered[6]).payload.body, 'string', 'the event body is a JSON string, as over HTTP');
  const list = (await (await d.api(`${d.mgmt}/deliveries?appId=${app.id}`)).json()) as any[];
  t.equal(list.length, cases.length);
  t.ok(list.every((x) => x.transport === 'socket'));
});

t.test('no answer within the budget: the offline message, as in HTTP mode; deliver-test exits 6', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const c = connect(t, d, app, { handler: () => undefined });
  await c.start();
  let r: Awaited<ReturnType<typeof trigger>> | undefined;
  void trigger(d, { appId: app.id, kind: 'slash-command' }).then((x) => (r = x));
  await c.waitFor(() => c.delivered.length === 1, 'the frame');
  await clock.advance(2999);
  t.equal(r, undefined, 'no answer a millisecond before the budget');
  await clock.advance(1);
  await until(() => r);
  t.match(
    must(r).body,
    { outcome: 'timeout', state: 'failed', ephemeralMessage: 'Socket App is offline' },
    'the offline message at 3 s',
  );
  const running = runMain([
    '--url',
    d.url,
    '--token',
    d.token,
    'deliver-test',
    app.id,
    '--kind',
    'global-shortcut',
    '--timeout-ms',
    '300',
    '--json',
  ]);
  await c.waitFor(() => c.delivered.length === 2, 'the second frame');
  await clock.advance(300);
  const cli = await running;
  t.equal(cli.code, 6);
  t.match(JSON.parse(cli.stdout), { passed: false, delivery: { outcome: 'timeout', transport: 'socket' } });
});

t.test(
  'with no connection: triggers fail at once with the offline message; events wait and arrive on reconnect',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock, config: { deliveryRetrySchedule: '0.2,0.2,0.2,0.2,0.2' } });
    t.teardown(() => d.stop());
    const app = await createApp(d);
    const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
    t.match(r.body, { outcome: 'no_connection', ephemeralMessage: 'Socket App is offline' });
    const e1 = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
    const e2 = await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
    t.equal(e1.body.state, 'retrying', 'kept, not dropped');
    await step(clock, d, 300); // a retry each, still without a connection
    const c = connect(t, d, app);
    await c.start();
    await c.waitFor(() => c.delivered.length >= 2, 'the queued events');
    t.same(
      c.delivered.map((x) => x.payload.eventType),
      ['NEW_MESSAGE', 'CHANNEL_CREATED'],
      'in order',
    );
    for (const id of [e1.body.id, e2.body.id])
      t.equal(
        (
          await until(
            () => shown(d, id),
            (s) => s.state !== 'retrying',
          )
        ).state,
        'delivered',
        `${id} ends delivered in the log`,
      );
    await step(clock, d, 2000, 100); // the rest of the schedule, were anything still pending
    t.equal(c.delivered.length, 2, 'each delivered once');
  },
);

t.test('a kept event sent on reconnect is delivered in the log at once, not at the next retry', async (t) => {
  const d = await startTestDaemon({ config: { deliveryRetrySchedule: '600' } });
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const e = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  t.match(e.body, { state: 'retrying', outcome: 'no_connection' });
  const c = connect(t, d, app);
  await c.start();
  await c.waitFor(() => c.delivered.length === 1, 'the kept event');
  const after = await until(
    () => shown(d, e.body.id),
    (s) => s.state !== 'retrying',
  );
  t.match(after, { state: 'delivered', outcome: 'acked' }, 'delivered, although the next retry is 10 minutes away');
  t.notOk(after.nextAttemptAt);
  t.match(after.attempts, [
    { outcome: 'no_connection' },
    { outcome: 'acked', excerpt: /sent from the socket-mode queue/ },
  ]);
  t.equal(await d.parts.store.get('pendingDeliveries', e.body.id), undefined, 'no retry left pending');
});

t.test(
  'when the retry schedule runs out, the kept copy goes too: the log says failed and nothing arrives later',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock, config: { deliveryRetrySchedule: '0.1,0.1' } });
    t.teardown(() => d.stop());
    // the kept copy's removal is held until the test lets it go: the log must not say failed before it is done
    const store = d.parts.store;
    const commit = store.commit.bind(store);
    let removing = false;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    store.commit = async (changes, expect) => {
      if (changes.some((c) => c.table === 'socketEventQueue' && c.value === null)) {
        removing = true;
        await released;
      }
      return commit(changes, expect);
    };
    t.teardown(() => void (store.commit = commit));
    const app = await createApp(d);
    const e = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
    await clock.advance(170); // the first retry (0.1 s ± 20 %, woken on a 50 ms grain)
    await until(
      () => store.get('pendingDeliveries', e.body.id),
      (p) => p?.retryNum === 2,
    ); // retryNum: the number of the next attempt
    await clock.advance(170); // the last one: then the kept copy goes
    await until(() => removing);
    t.match(
      await shown(d, e.body.id),
      { state: 'retrying' },
      'while the kept copy is being removed the log does not say failed',
    );
    release();
    const ended = await until(
      () => shown(d, e.body.id),
      (s) => s.state === 'failed',
    );
    t.match(ended, { state: 'failed', outcome: 'no_connection' });
    t.equal(ended.attempts.length, 3, 'the first attempt and two retries');
    const got = (await (await d.api(`${d.mgmt}/apps/mine/${app.id}`)).json()) as Record<string, unknown>;
    t.equal(got.queuedEvents, 0, 'no longer kept');
    const c = connect(t, d, app);
    await c.start();
    const later = await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
    t.equal(later.body.outcome, 'acked');
    await c.waitFor(() => c.delivered.length > 0, 'the event sent once connected');
    t.same(
      c.delivered.map((x) => x.payload.eventType),
      ['CHANNEL_CREATED'],
      'a failed event is not sent after all: the next one is the first',
    );
  },
);

t.test('the signature probe is refused for socket-mode apps (frames are not signed)', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const cli = await runMain([
    '--url',
    d.url,
    '--token',
    d.token,
    'deliver-test',
    app.id,
    '--kind',
    'slash-command',
    '--probe-signature',
  ]);
  t.equal(cli.code, 4, 'refused by the daemon with a clear message');
  t.match(cli.stderr, /HTTP apps only/);
  const res = await d.api(`${d.mgmt}/deliveries/probe-signature`, {
    method: 'POST',
    json: { appId: app.id, kind: 'slash-command' },
  });
  t.equal(res.status, 400);
  t.match(await res.json(), { code: 'invalid_request', message: /HTTP apps only/ });
});
