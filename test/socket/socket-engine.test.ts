/**
 * Socket mode through the delivery engine: triggers, events, the budget, the log and deliver-test, as for HTTP apps.
 */
import t from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { connectTestClient } from '../helpers/sdk-socket-client.js';
import { must } from '../../src/must.js';

interface App { id: string; appKey: string }
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
      shortcuts: [{ shortcutType: 'GLOBAL', url: `${HOST}/s`, name: 'start', displayName: 'Start' }, { shortcutType: 'ON_MESSAGE', url: `${HOST}/m`, name: 'remind', displayName: 'Remind' }],
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

t.test('every kind over the socket, answered as the SDK answers, recorded in the delivery log', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const c = connect(t, d, app, {
    handler: (p) => {
      switch (p.messageType) {
        case 'SLASH_COMMAND': return { status: 200, message: `got ${p.text}` };
        case 'SHORTCUT': return p.type === 'GLOBAL' ? { status: 200 } : { status: 500, message: 'cannot remind' };
        case 'DYNAMIC_MENU': return { status: 200, message: 'ok', body: { onAction: 'pick', options: [{ text: 'a', value: 'a' }], triggerId: p.triggerId, value: '' } };
        case 'VIEW_ACTION':
        case 'BLOCK_INTERACTION': return { status: 200 };
        default: return undefined; // events: no reply
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
  t.same(c.delivered.map((x) => x.payload.messageType), ['SLASH_COMMAND', 'SHORTCUT', 'SHORTCUT', 'BLOCK_INTERACTION', 'VIEW_ACTION', 'DYNAMIC_MENU', 'PUMBLE_EVENT']);
  t.type(must(c.delivered[6]).payload.body, 'string', 'the event body is a JSON string, as over HTTP');
  const list = (await (await d.api(`${d.mgmt}/deliveries?appId=${app.id}`)).json()) as any[];
  t.equal(list.length, cases.length);
  t.ok(list.every((x) => x.transport === 'socket'));
});

t.test('no answer within the budget: the offline message, as in HTTP mode; deliver-test exits 6', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const c = connect(t, d, app, { handler: () => undefined });
  await c.start();
  const t0 = performance.now();
  const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  const ms = performance.now() - t0;
  t.match(r.body, { outcome: 'timeout', state: 'failed', ephemeralMessage: 'Socket App is offline' });
  // not before the budget; after it by no more than a busy machine delays a timer
  t.ok(ms >= 2990 && ms < 4500, `after ${Math.round(ms)} ms`);
  const cli = await runMain(['--url', d.url, '--token', d.token, 'deliver-test', app.id, '--kind', 'global-shortcut', '--timeout-ms', '300', '--json']);
  t.equal(cli.code, 6);
  t.match(JSON.parse(cli.stdout), { passed: false, delivery: { outcome: 'timeout', transport: 'socket' } });
});

t.test('with no connection: triggers fail at once with the offline message; events wait and arrive on reconnect', async (t) => {
  const d = await startTestDaemon({ config: { deliveryRetrySchedule: '0.2,0.2,0.2,0.2,0.2' } });
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'no_connection', ephemeralMessage: 'Socket App is offline' });
  const e1 = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  const e2 = await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
  t.equal(e1.body.state, 'retrying', 'kept, not dropped');
  const c = connect(t, d, app);
  await c.start();
  await c.waitFor(() => c.delivered.length >= 2, 5000, 'the queued events');
  t.same(c.delivered.map((x) => x.payload.eventType), ['NEW_MESSAGE', 'CHANNEL_CREATED'], 'in order');
  await new Promise((res) => setTimeout(res, 1000));
  t.equal(c.delivered.length, 2, 'each delivered once');
  for (const id of [e1.body.id, e2.body.id]) {
    const shown = (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as any;
    t.equal(shown.state, 'delivered', `${id} ends delivered in the log`);
  }
});

t.test('a kept event sent on reconnect is delivered in the log at once, not at the next retry', async (t) => {
  const d = await startTestDaemon({ config: { deliveryRetrySchedule: '600' } });
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const e = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  t.match(e.body, { state: 'retrying', outcome: 'no_connection' });
  const c = connect(t, d, app);
  await c.start();
  await c.waitFor(() => c.delivered.length === 1, 5000, 'the kept event');
  let shown: any;
  for (let i = 0; i < 100; i++) {
    shown = await (await d.api(`${d.mgmt}/deliveries/${e.body.id}`)).json();
    if (shown.state !== 'retrying') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.match(shown, { state: 'delivered', outcome: 'acked' }, 'delivered, although the next retry is 10 minutes away');
  t.notOk(shown.nextAttemptAt);
  t.match(shown.attempts, [{ outcome: 'no_connection' }, { outcome: 'acked', excerpt: /sent from the socket-mode queue/ }]);
  t.equal(await d.parts.store.get('pendingDeliveries', e.body.id), undefined, 'no retry left pending');
});

t.test('when the retry schedule runs out, the kept copy goes too: the log says failed and nothing arrives later', async (t) => {
  const d = await startTestDaemon({ config: { deliveryRetrySchedule: '0.1,0.1' } });
  t.teardown(() => d.stop());
  // the kept copy's removal takes a while: the log must not say failed before it is done
  const store = d.parts.store;
  const commit = store.commit.bind(store);
  store.commit = async (changes, expect) => {
    if (changes.some((c) => c.table === 'socketEventQueue' && c.value === null)) await new Promise((r) => setTimeout(r, 400));
    return commit(changes, expect);
  };
  t.teardown(() => void (store.commit = commit));
  const app = await createApp(d);
  const e = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  let shown: any;
  for (let i = 0; i < 200; i++) {
    shown = await (await d.api(`${d.mgmt}/deliveries/${e.body.id}`)).json();
    if (shown.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  t.match(shown, { state: 'failed', outcome: 'no_connection' });
  t.equal(shown.attempts.length, 3, 'the first attempt and two retries');
  const got = (await (await d.api(`${d.mgmt}/apps/mine/${app.id}`)).json()) as Record<string, unknown>;
  t.equal(got.queuedEvents, 0, 'no longer kept');
  const c = connect(t, d, app);
  await c.start();
  await new Promise((r) => setTimeout(r, 500));
  t.equal(c.delivered.length, 0, 'a failed event is not sent after all');
});

t.test('the signature probe is refused for socket-mode apps (frames are not signed)', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const cli = await runMain(['--url', d.url, '--token', d.token, 'deliver-test', app.id, '--kind', 'slash-command', '--probe-signature']);
  t.equal(cli.code, 4, 'refused by the daemon with a clear message');
  t.match(cli.stderr, /HTTP apps only/);
  const res = await d.api(`${d.mgmt}/deliveries/probe-signature`, { method: 'POST', json: { appId: app.id, kind: 'slash-command' } });
  t.equal(res.status, 400);
  t.match(await res.json(), { code: 'invalid_request', message: /HTTP apps only/ });
});
