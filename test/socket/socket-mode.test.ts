/**
 * Socket mode against a real daemon, with a client that speaks the protocol as the official SDK does.
 * The daemon and the client's own timers (its reconnect delay, its pings) run on a test clock.
 */
import t from 'tap';
import { WebSocket } from 'ws';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import {
  createSdkSocketClient,
  type SdkSocketClient,
  type SdkSocketClientOptions,
} from '../helpers/sdk-socket-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import type { SendRequest } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { must } from '../../src/must.js';
import { checkManifest } from '../../src/validation/manifest.js';

interface App {
  id: string;
  appKey: string;
  [k: string]: unknown;
}

async function createApp(d: TestDaemon, over: Record<string, unknown> = {}): Promise<App> {
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ socketMode: true, name: 'sock-' + Math.random().toString(36).slice(2, 8), ...over }),
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()) as App;
}

function client(
  t: { teardown(fn: () => unknown): void },
  d: TestDaemon,
  app: App,
  over: Partial<SdkSocketClientOptions> = {},
): SdkSocketClient {
  const c = createSdkSocketClient({
    baseUrl: d.url,
    appId: app.id,
    appKey: app.appKey,
    reconnectDelayMs: 50,
    pingIntervalMs: 0,
    clock: d.parts.clock,
    // this file hands the transport payloads of its own making ({i} bodies), not the daemon's events
    checkEvents: false,
    ...over,
  });
  t.teardown(() => c.stop());
  return c;
}

async function sendVia(d: TestDaemon, appId: string, over: Partial<SendRequest> = {}) {
  const sm = d.parts.socket;
  const app = (await d.parts.apps.byId(appId)) as AppRecord;
  return sm.transport.send({
    deliveryId: 'dlv_t',
    attemptId: 'att_t',
    app,
    payload: { messageType: 'SLASH_COMMAND', slashCommand: '/test', text: 'hi' },
    interactive: true,
    budgetMs: 3000,
    retryNum: 0,
    signingSecret: '',
    ...over,
  });
}

/** Open a raw websocket; resolves with how it ended (open, or the HTTP status that refused it). */
function rawConnect(url: string): Promise<{ ws?: WebSocket; status?: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('open', () => resolve({ ws }));
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode });
      res.resume();
      ws.terminate();
    });
    ws.on('error', () => resolve({}));
  });
}

const closed = (ws: WebSocket) =>
  new Promise<{ code: number; reason: string }>((r) =>
    ws.once('close', (code, reason) => r({ code, reason: reason.toString() })),
  );

t.test('socket mode against a real daemon', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock, config: { socketMaxConnectionsPerApp: 3, socketBadFrameLimit: 5 } });
  t.teardown(() => d.stop());

  t.test(
    'websocket-connection: a ws URL on the daemon port with a ticket; 401 for a wrong, missing or foreign key; 400 without socketMode',
    async (t) => {
      const app = await createApp(d);
      const other = await createApp(d);
      const res = await fetch(`${d.url}/apps/${app.id}/websocket-connection?appKey=${encodeURIComponent(app.appKey)}`);
      t.equal(res.status, 200);
      t.equal(res.headers.get('cache-control'), 'no-store');
      const { url } = (await res.json()) as { url: string };
      const u = new URL(url);
      t.equal(u.protocol, 'ws:');
      t.equal(u.port, String(d.port), 'shares the daemon port');
      t.match(u.searchParams.get('ticket'), /^awt_/);
      for (const key of ['apk_wrong', '', other.appKey]) {
        const r = await fetch(`${d.url}/apps/${app.id}/websocket-connection?appKey=${encodeURIComponent(key)}`);
        t.equal(r.status, 401, `appKey ${key ? key.slice(0, 8) + '…' : '(empty)'} → 401`);
        t.match(await r.json(), { code: 'invalid_client' });
      }
      t.equal((await fetch(`${d.url}/apps/${app.id}/websocket-connection`)).status, 401, 'missing appKey');
      t.equal(
        (await fetch(`${d.url}/apps/app_nope/websocket-connection?appKey=${app.appKey}`)).status,
        401,
        'unknown app: same answer as a wrong key',
      );
      const http = await createApp(d, { socketMode: false });
      const r400 = await fetch(
        `${d.url}/apps/${http.id}/websocket-connection?appKey=${encodeURIComponent(http.appKey)}`,
      );
      t.equal(r400.status, 400);
      t.match(await r400.json(), { code: 'socket_mode_disabled', message: /socketMode/ });
      t.notOk(d.logs().includes(app.appKey), 'the appKey never reaches the log');
      t.notOk(d.logs().includes(must(u.searchParams.get('ticket'))), 'nor the ticket');
    },
  );

  t.test('tickets are single-use; a made-up ticket is refused with 401', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, { autoReconnect: false });
    const url = await c.fetchUrl();
    const first = await rawConnect(url);
    t.ok(first.ws, 'first use opens');
    const second = await rawConnect(url);
    t.equal(second.status, 401, 'second use refused');
    t.equal((await rawConnect(url.replace(/ticket=[^&]+/, 'ticket=awt_forged'))).status, 401);
    t.equal((await rawConnect(`ws://127.0.0.1:${d.port}/socket`)).status, 401, 'no ticket');
    must(first.ws).close();
  });

  t.test(
    'the upgrade is answered only once the work before accepting is done (on PostgreSQL: the holder record)',
    async (t) => {
      const app = await createApp(d);
      const c = client(t, d, app, { autoReconnect: false });
      let reached = false;
      let prepared = false;
      let release!: () => void;
      const off = d.parts.socket.sessions.beforeAccept(async () => {
        reached = true;
        await new Promise<void>((r) => (release = r));
        prepared = true;
      });
      t.teardown(off);
      let opened = false;
      const connecting = rawConnect(await c.fetchUrl()).then((r) => ((opened = true), r));
      await until(() => reached);
      t.notOk(opened, 'not answered while the preparation runs');
      release();
      const { ws } = await connecting;
      t.ok(ws, 'opens');
      t.ok(prepared, 'once the preparation ended');
      if (d.parts.store.kind === 'postgres') {
        const holders = await d.parts.store.find('socketHolders', 'appId', app.id);
        t.equal(
          holders.length,
          1,
          "the daemon's holder record is there the moment the socket is open: another daemon can relay to it at once",
        );
      }
      const failing = d.parts.socket.sessions.beforeAccept(() => Promise.reject(new Error('store unreachable')));
      t.teardown(failing);
      const refused = await rawConnect(await c.fetchUrl());
      t.notOk(refused.ws, 'a preparation that fails refuses the connection');
      t.ok(refused.status && refused.status >= 500, `with an error status (${refused.status})`);
      must(ws).close();
    },
  );

  t.test('every kind is delivered and answered over the socket (binary JSON replies)', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, {
      handler: (p) => {
        switch (p.messageType) {
          case 'SLASH_COMMAND':
            return { status: 200, message: 'pong from /test' };
          case 'SHORTCUT':
            return { status: 200 };
          case 'BLOCK_INTERACTION':
            return { status: 500, message: 'handler crashed' };
          case 'VIEW_ACTION':
            return { status: 200, message: 'ok', body: { triggerId: p.triggerId, viewType: 'MODAL', action: 'CLOSE' } };
          case 'DYNAMIC_MENU':
            return { status: 200, message: 'ok', body: { onAction: p.onAction, options: [{ text: 'A', value: 'a' }] } };
          default:
            return undefined; // events: no reply, like the SDK
        }
      },
    });
    await c.start();
    const cases: Array<[Record<string, unknown>, boolean, Record<string, unknown>]> = [
      [
        { messageType: 'SLASH_COMMAND', slashCommand: '/test', text: 'x' },
        true,
        { outcome: 'acked', message: 'pong from /test' },
      ],
      [{ messageType: 'SHORTCUT', type: 'GLOBAL', shortcut: 'do_it' }, true, { outcome: 'acked', status: 200 }],
      [{ messageType: 'SHORTCUT', type: 'ON_MESSAGE', shortcut: 'do_it', messageId: 'm1' }, true, { outcome: 'acked' }],
      [
        { messageType: 'BLOCK_INTERACTION', onAction: 'a' },
        true,
        { outcome: 'nacked', status: 500, message: 'handler crashed' },
      ],
      [
        { messageType: 'VIEW_ACTION', triggerId: 'tr1' },
        true,
        { outcome: 'response', body: { triggerId: 'tr1', action: 'CLOSE' } },
      ],
      [{ messageType: 'DYNAMIC_MENU', onAction: 'menu' }, true, { outcome: 'response', body: { onAction: 'menu' } }],
      [{ messageType: 'PUMBLE_EVENT', eventType: 'NEW_MESSAGE', body: '{}' }, false, { outcome: 'acked' }],
    ];
    for (const [i, [payload, interactive, expected]] of cases.entries()) {
      const r = await sendVia(d, app.id, { payload, interactive });
      t.match(r, expected, `${payload.messageType} → ${expected.outcome}`);
      await c.waitFor(() => c.delivered.length > i, 'the frame'); // an event is acked once written
      t.same(must(c.delivered.at(-1)).payload, payload, 'payload arrives unchanged');
    }
    t.ok(c.delivered.every((x) => /^cor_/.test(x.correlationId)));
  });

  t.test('text replies are accepted too; text ping → text pong', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, { replyAsText: true, pingIntervalMs: 20, handler: () => ({ status: 200 }) });
    await c.start();
    t.match(await sendVia(d, app.id), { outcome: 'acked' });
    await clock.advance(40); // the client pings twice
    await c.waitFor(() => c.pongs >= 2, 'pongs');
    t.pass('pongs arrive');
  });

  // The real 3 s budget is checked once, over HTTP, in test/delivery/delivery.test.ts; the transport
  // takes the budget from the attempt, so a short one shows the same behaviour here.
  t.test(
    'the budget: an app that never answers → timeout at the budget; its late reply is ignored and the connection stays',
    async (t) => {
      const app = await createApp(d);
      const budgetMs = 300;
      let answer: (() => void) | undefined;
      const c = client(t, d, app, {
        handler: async () => {
          if (!answer) return undefined;
          await new Promise<void>((r) => (answer = r));
          return { status: 200, message: 'too late' };
        },
      });
      await c.start();
      let r: Awaited<ReturnType<typeof sendVia>> | undefined;
      void sendVia(d, app.id, { budgetMs }).then((x) => (r = x));
      await c.waitFor(() => c.delivered.length === 1, 'the frame');
      await clock.advance(budgetMs - 1);
      t.equal(r, undefined, 'no outcome a millisecond before the budget');
      await clock.advance(1);
      await until(() => r);
      t.equal(r?.outcome, 'timeout', 'a timeout at the 300 ms budget, not the default 3 s');
      answer = () => {};
      const late = sendVia(d, app.id, { budgetMs });
      await c.waitFor(() => c.delivered.length === 2, 'the second frame');
      await clock.advance(budgetMs);
      t.equal((await late).outcome, 'timeout');
      answer(); // the app answers after the budget
      await c.waitFor(() => /after the budget/.test(d.logs()), 'the late reply to be logged');
      t.ok(c.isOpen(), 'the connection stays open');
      t.equal(c.closes.length, 0);
    },
  );

  t.test('bad frames are logged and ignored; a flood closes with 1008', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, { autoReconnect: false, handler: () => ({ status: 200 }) });
    await c.start();
    c.sendRaw('{oops');
    c.sendRaw(Buffer.from(JSON.stringify({ correlation_id: 'cor_unknown', status: 200 })), true);
    t.match(await sendVia(d, app.id), { outcome: 'acked' }, 'still healthy after bad frames');
    t.match(d.logs(), /socket frame ignored/);
    const ended = closed(must(c.ws));
    for (let i = 0; i < 10; i++) c.sendRaw('garbage');
    const { code, reason } = await ended;
    t.equal(code, 1008);
    t.match(reason, /malformed or unknown frames/);
  });

  t.test(
    'the per-app cap refuses one more connection with 1008 and a clear reason; deliveries spread across connections',
    async (t) => {
      const app = await createApp(d);
      const seen = new Map<number, number>();
      const cs = [0, 1, 2].map((i) =>
        client(t, d, app, {
          autoReconnect: false,
          handler: () => (seen.set(i, (seen.get(i) ?? 0) + 1), { status: 200 }),
        }),
      );
      for (const c of cs) await c.start();
      const extra = client(t, d, app, { autoReconnect: false });
      await extra.start();
      await extra.waitFor(() => extra.closes.length > 0, 'the refusal');
      t.equal(must(extra.closes[0]).code, 1008);
      t.match(must(extra.closes[0]).reason, /at most 3 open connections per app/);
      for (let i = 0; i < 9; i++) t.match(await sendVia(d, app.id), { outcome: 'acked' });
      t.same([seen.get(0), seen.get(1), seen.get(2)], [3, 3, 3], 'round robin');
    },
  );

  t.test('apps get shows the open connections of a socket-mode app', async (t) => {
    const app = await createApp(d);
    const get = async () => (await (await d.api(`${d.mgmt}/apps/mine/${app.id}`)).json()) as Record<string, unknown>;
    t.equal((await get()).connections, 0);
    const a = client(t, d, app, { autoReconnect: false });
    const b = client(t, d, app, { autoReconnect: false });
    await a.start();
    await b.start();
    t.equal((await get()).connections, 2);
    t.equal((await get()).appKey, app.appKey, 'the core response is otherwise unchanged');
    await a.stop();
    await a.waitFor(() => d.parts.socket.sessions.count(app.id) === 1);
    t.equal((await get()).connections, 1);
    const http = await createApp(d, { socketMode: false });
    const httpView = (await (await d.api(`${d.mgmt}/apps/mine/${http.id}`)).json()) as object;
    t.notOk('connections' in httpView, 'not shown for HTTP-mode apps');
  });

  t.test(
    'no connection → no_connection at once; the SDK client reconnects after its delay and is served again',
    async (t) => {
      const app = await createApp(d);
      t.match(await sendVia(d, app.id), { outcome: 'no_connection' });
      const c = client(t, d, app, { reconnectDelayMs: 100, handler: () => ({ status: 200, message: 'back' }) });
      await c.start();
      const sm = d.parts.socket;
      // the daemon drops it (e.g. a half-open connection): the client comes back on its own with a new ticket
      for (const conn of sm.sessions.all()) if (conn.appId === app.id) conn.close(1011, 'test');
      await c.waitFor(() => c.closes.length === 1, 'the close');
      await clock.advance(100); // the client's reconnect delay
      await c.waitOpen(1);
      t.equal(c.opens, 2);
      t.match(await sendVia(d, app.id), { outcome: 'acked', message: 'back' });
    },
  );

  t.test('events sent while the app is disconnected arrive in order once the SDK client reconnects', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, { reconnectDelayMs: 300 });
    await c.start();
    const sm = d.parts.socket;
    for (const conn of sm.sessions.all()) if (conn.appId === app.id) conn.close(1012, 'restart');
    await c.waitFor(() => sm.sessions.count(app.id) === 0, 'the disconnect');
    for (let i = 0; i < 5; i++) {
      const r = await sendVia(d, app.id, {
        deliveryId: `dlv_off_${i}`,
        interactive: false,
        payload: { messageType: 'PUMBLE_EVENT', eventType: 'NEW_MESSAGE', body: JSON.stringify({ i }) },
      });
      t.equal(r.outcome, 'no_connection');
    }
    t.equal(
      ((await (await d.api(`${d.mgmt}/apps/mine/${app.id}`)).json()) as Record<string, unknown>).queuedEvents,
      5,
      'apps get shows the kept events',
    );
    await clock.advance(300); // the client's reconnect delay
    await c.waitFor(() => c.delivered.length === 5, 'the kept events');
    t.same(
      c.delivered.map((x) => JSON.parse(x.payload.body).i),
      [0, 1, 2, 3, 4],
    );
    const retry = await sendVia(d, app.id, {
      deliveryId: 'dlv_off_3',
      interactive: false,
      retryNum: 1,
      payload: { messageType: 'PUMBLE_EVENT', eventType: 'NEW_MESSAGE', body: JSON.stringify({ i: 3 }) },
    });
    t.equal(retry.outcome, 'acked', 'a later engine retry is acked');
    t.equal(
      (
        await sendVia(d, app.id, {
          deliveryId: 'dlv_off_5',
          interactive: false,
          payload: { messageType: 'PUMBLE_EVENT', eventType: 'NEW_MESSAGE', body: JSON.stringify({ i: 5 }) },
        })
      ).outcome,
      'acked',
    );
    await c.waitFor(() => c.delivered.length >= 6, 'a new event, sent after the retry on the same socket');
    t.same(
      c.delivered.map((x) => JSON.parse(x.payload.body).i),
      [0, 1, 2, 3, 4, 5],
      'the retry was not delivered twice',
    );
  });

  t.test(
    'churn: 100 reconnects (daemon- and client-initiated) while events stream: every event arrives once, in order',
    async (t) => {
      const app = await createApp(d);
      const c = client(t, d, app, { reconnectDelayMs: 0 });
      await c.start();
      const sm = d.parts.socket;
      let n = 0;
      // events go one after another, each once the one before was handled (sent, or kept for the app)
      let sending: Promise<unknown> = Promise.resolve();
      const send = () => {
        const i = n++;
        sending = sending.then(() =>
          sendVia(d, app.id, {
            deliveryId: `dlv_churn_${i}`,
            interactive: false,
            payload: { messageType: 'PUMBLE_EVENT', eventType: 'NEW_MESSAGE', body: JSON.stringify({ i }) },
          }),
        );
      };
      for (let k = 0; k < 100; k++) {
        await c.waitOpen(k);
        const seen = c.delivered.length;
        send();
        await c.waitFor(() => c.delivered.length > seen, 'an event on this connection'); // events stream while it is open
        for (let j = 0; j < 3; j++) send(); // and while it closes and opens again
        if (k % 2) c.ws?.close(1000, 'client restart');
        else for (const conn of sm.sessions.all()) if (conn.appId === app.id) conn.close(1012, 'churn');
      }
      await c.waitOpen(100);
      await sending;
      await c.waitFor(() => c.delivered.length >= n, `all ${n} events`).catch(() => {});
      const got = c.delivered.map((x) => JSON.parse(x.payload.body).i as number);
      t.equal(c.opens, 101);
      t.ok(n > 100, `${n} events sent during the churn`);
      t.same(
        got,
        Array.from({ length: n }, (_, i) => i),
        'each exactly once, in order',
      );
    },
  );

  t.test('churn: 100 reconnects, every interactive delivery made while connected is answered', async (t) => {
    const app = await createApp(d);
    const c = client(t, d, app, { reconnectDelayMs: 0, handler: (p) => ({ status: 200, message: String(p.text) }) });
    await c.start();
    const sm = d.parts.socket;
    let answered = 0;
    for (let i = 0; i < 100; i++) {
      await c.waitOpen(i);
      const r = await sendVia(d, app.id, {
        payload: { messageType: 'SLASH_COMMAND', slashCommand: '/test', text: `n${i}` },
      });
      if (r.outcome === 'acked' && r.message === `n${i}`) answered++;
      for (const conn of sm.sessions.all()) if (conn.appId === app.id) conn.close(1012, 'churn');
    }
    await c.waitOpen(100);
    t.equal(answered, 100);
    t.equal(c.opens, 101);
    t.equal(sm.sessions.count(app.id), 1, 'no leaked registrations');
  });
});

t.test('half-open connections are dropped within two ping intervals', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock, config: { socketPingIntervalMs: 150 } });
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const c = client(t, d, app, { autoReconnect: false });
  await c.start();
  const sm = d.parts.socket;
  let pinged = 0;
  must(c.ws).on('ping', () => pinged++);
  /**
   * The daemon pings; the client pongs; a text ping after it is answered once the daemon read that pong (one ordered
   * stream).
   */
  const pingRound = async () => {
    const [before, pongs] = [pinged, c.pongs];
    await clock.advance(150);
    await c.waitFor(() => pinged > before, 'the protocol ping');
    c.sendRaw('ping');
    await c.waitFor(() => c.pongs > pongs, 'the text pong');
  };
  for (let i = 0; i < 3; i++) await pingRound();
  t.equal(sm.sessions.count(app.id), 1, 'a live client answers protocol pings and stays');
  // Stop reading: the client no longer sees pings, so it never pongs (like a peer that vanished).
  (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  await clock.advance(150); // a ping goes unanswered
  t.equal(sm.sessions.count(app.id), 1, 'one ping missed: not yet');
  await clock.advance(150); // the next round finds no pong since the last
  await c.waitFor(() => sm.sessions.count(app.id) === 0, 'the daemon to drop the connection');
  t.match(d.logs(), /no pong within the ping interval/);
});

t.test('the sockets of an app that is deleted or leaves socket mode are closed with 1008', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock, config: { socketPingIntervalMs: 100 } });
  t.teardown(() => d.stop());
  const gone = await createApp(d);
  const toHttp = await createApp(d, { name: 'to-http' });
  const a = client(t, d, gone, { reconnectDelayMs: 20 });
  const b = client(t, d, toHttp, { reconnectDelayMs: 20 });
  await a.start();
  await b.start();
  t.equal((await d.api(`${d.mgmt}/apps/${gone.id}`, { method: 'DELETE' })).status, 204);
  t.equal(
    (
      await d.api(`${d.mgmt}/apps/${toHttp.id}`, {
        method: 'PUT',
        json: manifest({ name: 'to-http', socketMode: false }),
      })
    ).status,
    200,
  );
  await clock.advance(100); // the ping round finds both apps no longer in socket mode
  for (const c of [a, b]) await c.waitFor(() => c.closes.length > 0, 'the close');
  await clock.advance(20); // their reconnect delay: the URL fetch is refused
  for (const c of [a, b]) {
    t.equal(must(c.closes[0]).code, 1008);
    t.match(must(c.closes[0]).reason, /deleted or no longer uses socket mode/);
    await c.waitFor(() => c.gaveUp, 'the SDK client to give up after the refused URL fetch');
  }
  t.equal(a.opens + b.opens, 2, 'no reconnect loop');
});

t.test('behind a public https URL the socket URL is wss:// on the same host', async (t) => {
  const d = await startTestDaemon({ config: { publicUrl: 'https://appreg.example.com/' } });
  t.teardown(() => d.stop());
  // d.url is the public URL now: create the app in-process and call the daemon on its local port.
  const app = await d.parts.apps.create(
    { workspaceId: d.workspaceId, workspaceUserId: d.workspaceUserId, jti: 'test' },
    checkManifest(manifest({ socketMode: true }), {}).manifest,
  );
  const res = await fetch(
    `http://127.0.0.1:${d.port}/apps/${app.id}/websocket-connection?appKey=${encodeURIComponent(String(app.appKey))}`,
  );
  const { url } = (await res.json()) as { url: string };
  t.match(url, /^wss:\/\/appreg\.example\.com\/socket\?ticket=awt_/);
});

t.test('graceful shutdown closes every socket with 1001', async (t) => {
  const d = await startTestDaemon();
  let stopped = false;
  t.teardown(() => (stopped ? undefined : d.stop()));
  const app = await createApp(d);
  const a = client(t, d, app, { autoReconnect: false });
  const b = client(t, d, app, { autoReconnect: false });
  await a.start();
  await b.start();
  const ends = [closed(must(a.ws)), closed(must(b.ws))];
  await d.stop();
  stopped = true;
  for (const e of await Promise.all(ends)) {
    t.equal(e.code, 1001);
    t.match(e.reason, /shutting down/);
  }
});
