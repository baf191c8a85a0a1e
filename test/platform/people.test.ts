/**
 * The workspace as a person uses it (what appreg say, messages, channels and react call), and
 * the loop a developer watches: a person types /cmd, the app acks and posts through the
 * platform API, the message is in the channel, and another subscribed app hears of it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { until } from '../helpers/until.js';
import { startReceiver } from '../helpers/receiver.js';
import { authorize, createApp, secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp, platformClient } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

const SCOPES = ['messages:read', 'messages:write', 'channels:read', 'channels:list'];

const person = (d: TestDaemon, token = d.token, mgmt = d.mgmt) => ({
  get: async (path: string) => {
    const res = await d.api(`${mgmt}${path}`, { headers: { authtoken: token } });
    return { status: res.status, body: (await res.json()) as any };
  },
  post: async (path: string, json: unknown) => {
    const res = await d.api(`${mgmt}${path}`, { method: 'POST', json, headers: { authtoken: token } });
    return { status: res.status, body: res.status === 204 ? undefined : ((await res.json()) as any) };
  },
});

t.test(
  '/cmd typed by a person: the app acks, posts through the API, the message is listed, and another app hears NEW_MESSAGE',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const listener = await startReceiver();
    t.teardown(() => listener.close());
    listener.on('/events', { text: 'ok' });
    const b = await installPlatformApp(d, {
      name: 'listener',
      events: ['NEW_MESSAGE'],
      eventsUrl: `${listener.url}/events`,
    });
    listener.secret = b.app.signingSecret;

    // app A: an SDK-like server whose /cmd handler acks at once and then says something in the channel
    let botToken = '';
    let appKey = '';
    const server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw) as { channelId: string; text: string };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ message: `on it: ${body.text}` }));
        void platformClient(d.url, botToken, appKey).postMessageToChannel(
          body.channelId,
          `standup started (${body.text})`,
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slash`;
    const a = await createApp(d, {
      name: 'standup',
      slashCommands: [{ command: '/cmd', url }],
      scopes: { botScopes: SCOPES, userScopes: SCOPES },
    });
    appKey = a.appKey;
    botToken = must(
      (await authorize(d, a, { scopes: [...SCOPES, ...SCOPES.map((s) => `bot:${s}`)].join(',') })).botToken,
    );

    const me = person(d);
    const said = await me.post('/channels/%23general/messages', { text: '/cmd hi' });
    t.equal(said.status, 201);
    t.equal(said.body.kind, 'slash-command');
    t.match(
      said.body.delivery,
      { kind: 'slash-command', outcome: 'acked', ephemeralMessage: 'on it: hi' },
      'what the person sees',
    );
    t.match(said.body.delivery.payload, {
      messageType: 'SLASH_COMMAND',
      slashCommand: '/cmd',
      text: 'hi',
      channelId: said.body.channelId,
    });

    const listed: any[] = await until(
      async () => (await me.get('/channels/general/messages')).body.messages as any[],
      (l) => l.some((m) => /standup started/.test(m.text)),
    );
    const botMessage = listed.find((m) => /standup started \(hi\)/.test(m.text));
    t.ok(botMessage, 'the bot’s message is in #general');
    const [ev] = await listener.waitFor(1);
    t.ok(must(ev).signatureValid);
    t.match(
      JSON.parse(must(ev).body.body),
      { mId: botMessage.id, tx: 'standup started (hi)', ty: 'NEW_MESSAGE' },
      'the second app heard of it',
    );
  },
);

t.test(
  'a person lists and creates channels, posts, replies in a thread and reacts; private channels stay private',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const me = person(d);
    const names = (await me.get('/channels')).body.map((c: any) => c.channel.name).sort();
    t.same(names, ['general', 'random']);
    const created = await me.post('/channels', { name: 'team-only', type: 'PRIVATE' });
    t.equal(created.status, 201);
    const said = await me.post('/channels/team-only/messages', { text: 'hello team' });
    t.equal(said.body.kind, 'message');
    const reply = await me.post('/channels/team-only/messages', {
      text: 'a reply',
      threadRootId: said.body.message.id,
    });
    t.equal(reply.status, 201);
    t.equal((await me.post(`/messages/${said.body.message.id}/reactions`, { code: ':tada:' })).status, 204);
    const other = await secondUser(d);
    const them = person(d, other.token, other.mgmt);
    t.notOk(
      (await them.get('/channels')).body.some((c: any) => c.channel.name === 'team-only'),
      'another user does not see it',
    );
    t.equal((await them.get(`/channels/${created.body.channel.id}/messages`)).status, 404);
    t.equal(
      (await me.post('/channels/general/messages', { text: '/nosuchcommand' })).status,
      404,
      'an unknown command',
    );
    t.equal((await me.post('/channels/general/messages', {})).status, 400);
  },
);

t.test('two apps with the same /command: appId says whose it is; without it, one of them gets it', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(String(req.url));
    req.resume();
    req.on('end', () => res.setHeader('content-type', 'application/json').end('{}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const first = await createApp(d, { name: 'first', slashCommands: [{ command: '/twice', url: `${base}/first` }] });
  const second = await createApp(d, { name: 'second', slashCommands: [{ command: '/twice', url: `${base}/second` }] });
  const other = await createApp(d, { name: 'other', slashCommands: [{ command: '/else', url: `${base}/else` }] });
  const me = person(d);
  for (const [app, path] of [
    [second, '/second'],
    [first, '/first'],
  ] as const) {
    const said = await me.post('/channels/general/messages', { text: '/twice go', appId: app.id });
    t.equal(said.status, 201);
    t.match(said.body.delivery, { appId: app.id, url: `${base}${path}`, outcome: 'acked' }, `appId ${path}`);
  }
  const unnamed = await me.post('/channels/general/messages', { text: '/twice go' });
  t.ok([first.id, second.id].includes(unnamed.body.delivery.appId), 'without appId, one of the two');
  const wrong = await me.post('/channels/general/messages', { text: '/twice go', appId: other.id });
  t.equal(wrong.status, 404, 'an app without the command');
  t.match(wrong.body.message, `App ${other.id} with the command /twice`);
  const bad = await me.post('/channels/general/messages', { text: '/twice go', appId: 7 });
  t.equal(bad.status, 400);
  t.match(bad.body.details, [{ pointer: '/appId' }]);
  t.same(hits, ['/second', '/first', hits[2]], 'nothing was sent for the refused ones');
});
