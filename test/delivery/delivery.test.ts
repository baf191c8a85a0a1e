import t from 'tap';
import type { Test } from 'tap';
import { startTestDaemon, manifest, onPostgres, tempDir, type TestDaemon } from '../helpers/daemon.js';
import { startReceiver, verify, type Receiver } from '../helpers/receiver.js';
import { EVENTS_OUTBOX } from '../../src/model/events.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

/**
 * A receiver, a daemon (on `clock`, if given: the receiver stamps requests with it too) and an app of the receiver's.
 */
async function setup(
  t: Test,
  config: Record<string, unknown> = {},
  overrides: (url: string) => Record<string, unknown> = () => ({}),
  clock?: TestClock,
) {
  const rx = await startReceiver(clock);
  t.teardown(() => rx.close());
  const d = await startTestDaemon({ config, clock });
  t.teardown(() => d.stop());
  const app = await createApp(d, rx, overrides(rx.url));
  return { d, rx, app };
}

/**
 * Let `ms` pass on the daemon's clock, `grain` at a time, waiting after each for the attempts its
 * polls started: an attempt's request reaches the app within the grain of its poll, however long the
 * request takes (time does not run on meanwhile).
 */
async function step(clock: TestClock, d: TestDaemon, ms: number, grain = ms) {
  for (let done = 0; done < ms; done += grain) {
    await clock.advance(Math.min(grain, ms - done));
    await d.parts.delivery.dispatcher.idle();
  }
}

/** The delivery as the API shows it. */
const shown = async (d: TestDaemon, id: string) =>
  (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as Record<string, any>;

function appManifest(url: string, extra: Record<string, unknown> = {}) {
  return manifest({
    name: 'rx-app',
    displayName: 'Receiver App',
    scopes: { botScopes: ['messages:read', 'messages:write', 'channels:read'], userScopes: ['messages:read'] },
    shortcuts: [
      { shortcutType: 'GLOBAL', url: `${url}/shortcut`, name: 'start', displayName: 'Start' },
      { shortcutType: 'ON_MESSAGE', url: `${url}/msg-shortcut`, name: 'remind', displayName: 'Remind' },
    ],
    slashCommands: [{ command: '/standup', url: `${url}/slash`, usageHint: '[start]' }],
    eventSubscriptions: {
      url: `${url}/events`,
      events: ['NEW_MESSAGE', 'CHANNEL_CREATED', 'APP_UNINSTALLED', 'APP_UNAUTHORIZED'],
    },
    blockInteraction: { url: `${url}/blocks` },
    viewAction: { url: `${url}/views` },
    dynamicMenus: [{ url: `${url}/menus`, onAction: 'pick_channel' }],
    offlineMessage: 'Receiver App is offline',
    ...extra,
  });
}

async function createApp(d: TestDaemon, rx: Receiver, extra: Record<string, unknown> = {}) {
  const res = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: appManifest(rx.url, extra) });
  const app = (await res.json()) as Record<string, any>;
  rx.secret = app.signingSecret;
  return app;
}

async function trigger(d: TestDaemon, body: Record<string, unknown>) {
  const res = await d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: body });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

t.test('every kind: payload shape, headers and a signature the receiver verifies independently', async (t) => {
  const { d, rx, app } = await setup(t);
  const common = { workspaceId: d.workspaceId, userId: d.workspaceUserId };
  const cases: Array<[Record<string, unknown>, string, Record<string, unknown>]> = [
    [
      { kind: 'slash-command', command: '/standup', text: 'start now' },
      '/slash',
      {
        messageType: 'SLASH_COMMAND',
        slashCommand: '/standup',
        text: 'start now',
        channelId: String,
        triggerId: String,
        ...common,
      },
    ],
    [
      { kind: 'global-shortcut', shortcut: 'start' },
      '/shortcut',
      { messageType: 'SHORTCUT', type: 'GLOBAL', shortcut: 'start', channelId: String, triggerId: String, ...common },
    ],
    [
      { kind: 'message-shortcut', shortcut: 'remind', messageId: 'msg_1' },
      '/msg-shortcut',
      {
        messageType: 'SHORTCUT',
        type: 'ON_MESSAGE',
        shortcut: 'remind',
        messageId: 'msg_1',
        triggerId: String,
        ...common,
      },
    ],
    [
      { kind: 'block-interaction', onAction: 'approve', value: 'yes' },
      '/blocks',
      {
        messageType: 'BLOCK_INTERACTION',
        sourceType: 'MESSAGE',
        sourceId: String,
        actionType: String,
        onAction: 'approve',
        payload: '{"value":"yes"}',
        triggerId: String,
        loadingTimeout: Number,
        ...common,
      },
    ],
    [
      { kind: 'view-action', view: { callbackId: 'cb_1' } },
      '/views',
      {
        messageType: 'VIEW_ACTION',
        viewActionType: 'SUBMIT',
        view: { type: 'MODAL', callbackId: 'cb_1', id: String, blocks: [], state: Object },
        triggerId: String,
        ...common,
      },
    ],
    [
      { kind: 'dynamic-menu', onAction: 'pick_channel', query: 'gen' },
      '/menus',
      { messageType: 'DYNAMIC_MENU', onAction: 'pick_channel', query: 'gen', triggerId: String, ...common },
    ],
    [
      { kind: 'event', event: 'NEW_MESSAGE' },
      '/events',
      {
        messageType: 'PUMBLE_EVENT',
        eventType: 'NEW_MESSAGE',
        workspaceId: d.workspaceId,
        workspaceUserIds: [d.workspaceUserId],
        body: String,
      },
    ],
  ];
  for (const [i, [body, path, shape]] of cases.entries()) {
    const r = await trigger(d, { appId: app.id, ...body });
    t.equal(r.status, 201, `${body.kind}: accepted`);
    t.equal(r.body.outcome, 'acked', `${body.kind}: acked`);
    const got = must(rx.received[i]);
    t.equal(got.path, path, `${body.kind}: sent to the manifest's URL`);
    t.ok(got.signatureValid, `${body.kind}: signature verifies`);
    t.equal(got.headers['content-type'], 'application/json');
    t.match(got.headers['x-pumble-request-timestamp'], /^\d{13}$/, 'epoch milliseconds');
    t.match(got.headers['x-pumble-request-signature'], /^[0-9a-f]{64}$/, 'lowercase hex');
    t.equal(got.headers['x-appreg-delivery-id'], r.body.id);
    t.match(got.body, shape, `${body.kind}: body shape`);
    t.same(r.body.payload, got.body, 'the log holds exactly what was sent');
  }
  const ev = must(rx.received[6]).body;
  t.type(ev.body, 'string', 'an event body is a JSON string');
  t.match(JSON.parse(ev.body), { ty: 'NEW_MESSAGE', tx: String, wId: d.workspaceId });
});

t.test('interactive outcomes: ack message, nack message, modal response, offline message on failure', async (t) => {
  const { d, rx, app } = await setup(t);
  rx.on('/slash', { json: { message: 'Standup started' } });
  let r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'acked', state: 'delivered', ephemeralMessage: 'Standup started' });

  rx.on('/slash', { status: 400, json: { message: 'Unknown option' } });
  r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(
    r.body,
    { outcome: 'nacked', state: 'failed', ephemeralMessage: 'Unknown option' },
    "a nack's message is shown to the user",
  );

  rx.on('/shortcut', { json: { triggerId: 'trg', view: { type: 'MODAL' }, viewType: 'MODAL', action: 'OPEN' } });
  r = await trigger(d, { appId: app.id, kind: 'global-shortcut' });
  t.match(r.body, { outcome: 'response', state: 'delivered', response: { action: 'OPEN' } });

  rx.on('/menus', {
    json: { onAction: 'pick_channel', options: [{ text: 'general', value: 'c1' }], triggerId: 'x', value: '' },
  });
  r = await trigger(d, { appId: app.id, kind: 'dynamic-menu' });
  t.match(r.body, { outcome: 'response', response: { options: [{ value: 'c1' }] } });

  rx.on('/slash', { status: 500, text: 'boom' });
  r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'http_error', ephemeralMessage: 'Receiver App is offline' });

  rx.on('/slash', { status: 403, text: 'Invalid signature!' });
  r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'signature_rejected', ephemeralMessage: 'Receiver App is offline' });

  rx.on('/blocks', { status: 302, headers: { location: `${rx.url}/elsewhere` } });
  const before = rx.received.length;
  r = await trigger(d, { appId: app.id, kind: 'block-interaction' });
  t.match(r.body, { outcome: 'redirect', ephemeralMessage: 'Receiver App is offline' });
  // a redirect followed would have been requested within the attempt, before its outcome was answered
  t.equal(rx.received.length, before + 1, 'the redirect was not followed');
  t.notOk(rx.received.some((x) => x.path === '/elsewhere'));
});

t.test('an app that hangs: the offline message at the 3 s budget', async (t) => {
  const clock = createTestClock();
  const { d, rx, app } = await setup(t, {}, undefined, clock);
  rx.on('/slash', { hang: true });
  let r: { status: number; body: Record<string, any> } | undefined;
  void trigger(d, { appId: app.id, kind: 'slash-command' }).then((x) => (r = x));
  await rx.waitFor(1); // the app has the request, and holds it
  await clock.advance(2999);
  t.equal(r, undefined, 'no answer a millisecond before the budget');
  await clock.advance(1);
  await until(() => r);
  t.match(
    must(r).body,
    { outcome: 'timeout', state: 'failed', ephemeralMessage: 'Receiver App is offline' },
    'the offline message at 3 s',
  );
});

t.test(
  'without an offlineMessage, a default sentence names the app; a refused connection is a connection_error',
  async (t) => {
    const { d, app } = await setup(t, {}, () => ({ offlineMessage: undefined }));
    const put = await d.api(`${d.mgmt}/apps/${app.id}`, {
      method: 'PUT',
      json: appManifest('http://127.0.0.1:9', { offlineMessage: undefined }),
    });
    t.equal(put.status, 200);
    const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
    t.equal(r.body.outcome, 'connection_error');
    t.match(r.body.ephemeralMessage, /Receiver App is not responding/);
  },
);

t.test('events are retried, re-signed, with a stable delivery id; 410 stops', async (t) => {
  const clock = createTestClock();
  const { d, rx, app } = await setup(t, { deliveryRetrySchedule: '10,10,10' }, undefined, clock);
  let n = 0;
  rx.on('/events', () => (++n < 3 ? { status: 503, text: 'busy' } : { text: 'ok' }));
  const r = await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
  t.equal(r.body.state, 'retrying');
  await step(clock, d, 12_050); // 10 s ± 20 %, on the wakes' 50 ms grain
  await step(clock, d, 12_050);
  const got = await rx.waitFor(3);
  t.equal(new Set(got.map((x) => x.headers['x-appreg-delivery-id'])).size, 1, 'one delivery id across retries');
  t.ok(
    got.every((x) => x.signatureValid),
    'every retry signed validly',
  );
  t.equal(
    new Set(got.map((x) => x.headers['x-pumble-request-timestamp'])).size,
    3,
    'each retry re-signed with a fresh timestamp',
  );
  t.same(
    got.map((x) => x.headers['x-appreg-retry-num']),
    [undefined, '1', '2'],
  );
  const done = await shown(d, r.body.id);
  t.match(done, { state: 'delivered', outcome: 'acked' });
  t.equal(done.attempts.length, 3);

  rx.on('/events', { status: 410, text: 'gone' });
  const before = rx.received.length;
  const g = await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
  t.equal(g.body.state, 'failed', '410: failed at once');
  t.equal(await d.parts.store.get(PENDING_TABLE, g.body.id), undefined, 'nothing left to retry');
  await step(clock, d, 40_000); // the whole schedule and more
  t.equal(rx.received.length, before + 1, '410: no retry');
});

t.test('an idle daemon polls about once a second, yet makes a retry at its time', async (t) => {
  const clock = createTestClock();
  const { d, rx, app } = await setup(t, { deliveryRetrySchedule: '0.3' }, undefined, clock);
  const store = d.parts.store;
  const claim = store.claim.bind(store);
  const claims: Array<{ table: string; at: number }> = [];
  store.claim = (req) => {
    claims.push({ table: req.table, at: clock.now() });
    return claim(req);
  };
  t.teardown(() => void (store.claim = claim));
  await step(clock, d, 2500); // nothing to do: both pollers back off
  const from = clock.now();
  await step(clock, d, 2000);
  const idle = claims.filter((c) => c.at >= from && c.at < from + 2000);
  const per = (table: string) => idle.filter((c) => c.table === table).length;
  t.equal(per('pendingDeliveries'), 2, 'due events claimed twice in 2 s (every 200 ms: 10)');
  t.equal(per('wsScheduledMessages'), 2, 'scheduled messages claimed twice in 2 s (every 250 ms: 8)');
  // a retry 0.3 s (±20 %) after a failed attempt is made then (on the wakes' 50 ms grain), not at the next backed-off
  // poll
  const gaps: number[] = [];
  for (let i = 0; i < 3; i++) {
    await step(clock, d, 1500);
    let n = 0;
    rx.on('/events', () => (++n === 1 ? { status: 503, text: 'busy' } : { text: 'ok' }));
    const before = rx.received.length;
    await trigger(d, { appId: app.id, kind: 'event', event: 'CHANNEL_CREATED' });
    await step(clock, d, 1000, 10);
    const got = rx.received.slice(before);
    t.equal(got.length, 2, 'the attempt and its retry');
    gaps.push(must(got[1]).at - must(got[0]).at);
  }
  // 240-360 ms, woken on a 50 ms grain, seen within the 10 ms step; the next idle poll was up to a second away
  t.ok(
    gaps.every((g) => g >= 240 && g < 420),
    `the retries came ${gaps.join(', ')} ms after the first attempts`,
  );
});

t.test('a retry pending across a daemon restart still arrives', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const dataDir = tempDir();
  const clock = createTestClock();
  let d = await startTestDaemon({ dataDir, clock, config: { deliveryRetrySchedule: '1' } });
  const app = await createApp(d, rx);
  rx.on('/events', { status: 503 });
  const r = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  t.equal(r.body.state, 'retrying');
  await d.stop();
  rx.on('/events', { text: 'ok' });
  d = await startTestDaemon({ dataDir, clock, config: { deliveryRetrySchedule: '1' } });
  t.teardown(() => d.stop());
  await step(clock, d, 1250); // 1 s ± 20 %
  const got = rx.received;
  t.equal(got.length, 2, 'retried by the daemon started again');
  t.equal(must(got[1]).headers['x-appreg-delivery-id'], r.body.id, 'the same delivery, after the restart');
  t.ok(must(got[1]).signatureValid);
  t.equal(must(got[1]).headers['x-appreg-retry-num'], '1');
  const after = await shown(d, r.body.id);
  t.match(
    after,
    { id: r.body.id, state: 'delivered', payload: { eventType: 'NEW_MESSAGE' } },
    'the delivery log was read back from disk after the restart',
  );
  t.equal(after.attempts.length, 2, 'both attempts, across the restart');
});

t.test('APP_UNINSTALLED written to the outbox is delivered as an APP_EVENT and removed', async (t) => {
  const clock = createTestClock();
  const { d, rx, app } = await setup(t, {}, undefined, clock);
  // written without the hint a change gives: the worker's poll finds it (idle, once a second)
  await d.parts.store.commit([
    {
      table: EVENTS_OUTBOX,
      id: 'evt_1',
      value: {
        id: 'evt_1',
        appId: app.id,
        workspaceId: d.workspaceId,
        eventType: 'APP_UNINSTALLED',
        workspaceUserIds: [d.workspaceUserId],
        body: {
          id: 'x',
          app: app.id,
          workspace: d.workspaceId,
          installedBy: d.workspaceUserId,
          botUser: null,
          uninstalledAt: new Date(clock.now()).toISOString(),
        },
        createdAt: new Date(clock.now()).toISOString(),
      },
    },
  ]);
  await step(clock, d, 1000);
  t.equal(rx.received.length, 1);
  const [got] = rx.received;
  t.match(must(got).body, {
    messageType: 'APP_EVENT',
    eventType: 'APP_UNINSTALLED',
    workspaceUserIds: [d.workspaceUserId],
  });
  t.match(JSON.parse(must(got).body.body), { id: 'x', app: app.id });
  t.ok(must(got).signatureValid);
  t.equal(await d.parts.store.count(EVENTS_OUTBOX), 0, 'outbox emptied');
});

t.test(
  'deliveries: list (--failed, by app), show, replay (a new, re-signed attempt); other users see nothing',
  async (t) => {
    const { d, rx, app } = await setup(t);
    rx.on('/slash', { status: 500 });
    const failed = await trigger(d, { appId: app.id, kind: 'slash-command' });
    rx.on('/slash', { json: {} });
    await trigger(d, { appId: app.id, kind: 'global-shortcut' });
    // the delivery log is written after the attempt answered (in batches on PostgreSQL): a busy machine delays it
    const all = await until(
      async () => (await (await d.api(`${d.mgmt}/deliveries?appId=${app.id}`)).json()) as any[],
      (l) => l.length >= 2,
    );
    t.equal(all.length, 2);
    t.equal(all[0].kind, 'global-shortcut', 'newest first');
    const onlyFailed = (await (await d.api(`${d.mgmt}/deliveries?failed=true`)).json()) as any[];
    t.same(
      onlyFailed.map((x) => x.id),
      [failed.body.id],
    );
    const replayed = (await (
      await d.api(`${d.mgmt}/deliveries/${failed.body.id}/replay`, { method: 'POST' })
    ).json()) as any;
    t.match(replayed, { id: failed.body.id, state: 'delivered', outcome: 'acked' });
    t.equal(replayed.attempts.length, 2);
    const slashCalls = rx.received.filter((x) => x.path === '/slash');
    t.not(
      must(slashCalls[0]).headers['x-pumble-request-timestamp'],
      must(slashCalls[1]).headers['x-pumble-request-timestamp'],
    );
    t.ok(must(slashCalls[1]).signatureValid);
    t.equal((await d.api(`${d.mgmt}/deliveries/dlv_nope`)).status, 404);
  },
);

t.test('bad triggers are refused with a clear error and nothing is sent', async (t) => {
  const { d, rx, app } = await setup(t);
  const bad: Array<[Record<string, unknown>, number, RegExp]> = [
    [{ appId: app.id, kind: 'fax' }, 400, /kind must be one of/],
    [{ appId: app.id, kind: 'slash-command', command: '/nope' }, 400, /no slash command \/nope/],
    [{ appId: app.id, kind: 'global-shortcut', shortcut: 'remind' }, 400, /no GLOBAL shortcut named remind/],
    [{ appId: app.id, kind: 'event', event: 'REACTION_ADDED' }, 400, /does not subscribe/],
    [{ appId: app.id, kind: 'event', event: 'BOGUS' }, 400, /not a known event/],
    [{ appId: 'app_other', kind: 'slash-command' }, 404, /not found/],
    [{ kind: 'slash-command' }, 400, /appId is required/],
    [{ appId: app.id, kind: 'slash-command', timeoutMs: 0 }, 400, /timeoutMs/],
  ];
  for (const [body, status, msg] of bad) {
    const r = await trigger(d, body);
    t.equal(r.status, status, JSON.stringify(body));
    t.match(r.body.message, msg);
  }
  t.equal(rx.received.length, 0, 'nothing reached the app');
});

t.test('egress policy: loopback can be denied; private ranges are denied by default', async (t) => {
  const { d, rx, app } = await setup(t, { egressAllowLoopback: false });
  const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'egress_denied', ephemeralMessage: 'Receiver App is offline' });
  t.equal(rx.received.length, 0);
  const put = await d.api(`${d.mgmt}/apps/${app.id}`, { method: 'PUT', json: appManifest('http://10.1.2.3:80') });
  t.equal(put.status, 200);
  const p = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(p.body, { outcome: 'egress_denied' });
  t.match(p.body.attempts[0].error, /private/);
});

t.test(
  'signature probe: a receiver that checks signatures refuses both; one that accepts anything does not',
  async (t) => {
    const { d, rx, app } = await setup(t);
    rx.on('/slash', (req) =>
      verify(rx.secret, req.headers, req.raw) ? { json: {} } : { status: 403, text: 'Invalid signature!' },
    );
    let r = await d.api(`${d.mgmt}/deliveries/probe-signature`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command' },
    });
    t.match(await r.json(), {
      refusedBoth: true,
      wrongSignature: { status: 403, refused: true },
      unsigned: { status: 403, refused: true },
    });
    rx.on('/slash', { json: {} });
    r = await d.api(`${d.mgmt}/deliveries/probe-signature`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command' },
    });
    t.match(await r.json(), { refusedBoth: false, wrongSignature: { status: 200, refused: false } });
  },
);

t.test('an app from its own /manifest: create, then sync; bad answers are clear errors', async (t) => {
  const { d, rx } = await setup(t);
  const served = { ...appManifest(rx.url), id: 'app_served', name: 'served-app' };
  rx.on('/manifest', { json: served });
  const c = await d.api(`${d.mgmt}/apps/from-url`, { method: 'POST', json: { url: rx.url } });
  t.equal(c.status, 201);
  const created = (await c.json()) as any;
  t.match(created, { name: 'served-app', id: /^app_/, clientSecret: String });
  t.not(created.id, 'app_served', 'the served id is not taken over');
  rx.on('/manifest', { json: { ...served, displayName: 'Synced' } });
  const s = await d.api(`${d.mgmt}/apps/from-url`, { method: 'POST', json: { url: rx.url + '/', appId: created.id } });
  t.equal(s.status, 200);
  t.equal(((await s.json()) as any).displayName, 'Synced');
  rx.on('/manifest', { json: { ...served, shortcutz: [] } });
  const bad = await d.api(`${d.mgmt}/apps/from-url`, { method: 'POST', json: { url: rx.url } });
  t.equal(bad.status, 400);
  t.match(await bad.json(), { code: 'invalid_manifest', details: [{ pointer: '/shortcutz' }] });
  rx.on('/manifest', { status: 404, json: {} });
  const missing = await d.api(`${d.mgmt}/apps/from-url`, { method: 'POST', json: { url: rx.url } });
  t.equal(missing.status, 502);
  t.match(await missing.json(), { code: 'manifest_unavailable', message: /404/ });
  rx.on('/manifest', { status: 302, headers: { location: 'http://127.0.0.1:9/manifest' } });
  const redirected = await d.api(`${d.mgmt}/apps/from-url`, { method: 'POST', json: { url: rx.url } });
  t.match(await redirected.json(), { code: 'manifest_unavailable', message: /redirect/ });
});

t.test('an answer is read only up to the cap (deliveryMaxResponseBytes)', async (t) => {
  const { d, rx, app } = await setup(t, { deliveryMaxResponseBytes: 1000 });
  rx.on('/slash', { status: 200, text: 'x'.repeat(500_000) });
  const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.equal(r.body.outcome, 'acked');
  t.ok(r.body.attempts[0].excerpt.length <= 1000, `excerpt of ${r.body.attempts[0].excerpt.length} characters`);
});

t.test(
  'after a restart: failed triggers keep their payload (replayable), succeeded ones are kept without it (embedded) or with it (PostgreSQL)',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const dataDir = tempDir();
    let d = await startTestDaemon({ dataDir });
    const app = await createApp(d, rx);
    rx.on('/slash', { json: {} });
    const ok = await trigger(d, { appId: app.id, kind: 'slash-command' });
    rx.on('/slash', { status: 500 });
    const bad = await trigger(d, { appId: app.id, kind: 'slash-command' });
    await d.stop();
    d = await startTestDaemon({ dataDir });
    t.teardown(() => d.stop());
    const okShown = (await (await d.api(`${d.mgmt}/deliveries/${ok.body.id}`)).json()) as any;
    const okReplay = await d.api(`${d.mgmt}/deliveries/${ok.body.id}/replay`, { method: 'POST' });
    if (onPostgres()) {
      // the database's delivery log keeps every payload: a succeeded trigger is replayable too
      t.match(okShown, {
        state: 'delivered',
        outcome: 'acked',
        payload: { messageType: 'SLASH_COMMAND' },
        attempts: [{ status: 200 }],
      });
      t.equal(okReplay.status, 200);
    } else {
      t.match(okShown, { state: 'delivered', outcome: 'acked', payload: null, attempts: [{ status: 200 }] });
      t.equal(okReplay.status, 409);
      t.match(await okReplay.json(), { code: 'payload_not_kept' });
    }
    rx.on('/slash', { json: {} });
    const badReplay = (await (
      await d.api(`${d.mgmt}/deliveries/${bad.body.id}/replay`, { method: 'POST' })
    ).json()) as any;
    t.match(
      badReplay,
      { state: 'delivered', payload: { messageType: 'SLASH_COMMAND' } },
      'a failed trigger is replayable after a restart',
    );
  },
);

t.test('TLS is verified: an app behind a self-signed certificate is a connection error, not a call', async (t) => {
  const https = await import('node:https');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { ROOT } = await import('../helpers/cli.js');
  let reached = 0;
  const server = https.createServer(
    {
      key: fs.readFileSync(path.join(ROOT, 'test/fixtures/tls/self-signed.key')),
      cert: fs.readFileSync(path.join(ROOT, 'test/fixtures/tls/self-signed.crt')),
    },
    (_req, res) => {
      reached++;
      res.end('{}');
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as import('node:net').AddressInfo).port;
  const { d, app } = await setup(t);
  const put = await d.api(`${d.mgmt}/apps/${app.id}`, {
    method: 'PUT',
    json: appManifest(`https://127.0.0.1:${port}`),
  });
  t.equal(put.status, 200);
  const r = await trigger(d, { appId: app.id, kind: 'slash-command' });
  t.match(r.body, { outcome: 'connection_error', ephemeralMessage: 'Receiver App is offline' });
  t.match(r.body.attempts[0].error, /TLS|certificate|self.signed/i);
  t.equal(reached, 0, 'no request reached the unverified server');
});
