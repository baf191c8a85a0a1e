/**
 * appreg say: a plain post, a thread reply, a slash command whose app acks and then posts (in the
 * channel and ephemerally to the person) through the platform API, a modal, a nack, an offline
 * app, --expect-message, and --as another user of the workspace.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp, platformClient } from '../helpers/platform-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

t.test('appreg say', async (t) => {
  const clock = createTestClock(); // the daemon's: an app too slow is too slow when the test advances 3 s
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  // an SDK-like app: /standup acks, then its bot posts in the channel and ephemerally to the person
  const bot = { client: undefined as ReturnType<typeof platformClient> | undefined };
  const slow: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as {
        slashCommand: string;
        channelId: string;
        text: string;
        userId: string;
        threadRootId?: string;
      };
      res.setHeader('content-type', 'application/json');
      if (body.text === 'modal')
        return res.end(
          JSON.stringify({
            triggerId: 't',
            viewType: 'MODAL',
            action: 'OPEN',
            view: {
              type: 'MODAL',
              callbackId: 'standup_form',
              title: { type: 'plain_text', text: 'Standup' },
              blocks: [{ type: 'input' }],
            },
          }),
        );
      if (body.text === 'bad') {
        res.statusCode = 400;
        return res.end(JSON.stringify({ message: 'unknown option bad' }));
      }
      if (body.text === 'slow') return void slow.push(res); // answered when the test ends
      res.end(JSON.stringify({ message: `on it: ${body.text}` }));
      // then its bot posts (after the ack, as an app does)
      res.on(
        'finish',
        () =>
          void must(bot.client)
            .postMessageToChannel(body.channelId, `standup started (${body.text})`)
            .then(() => must(bot.client).postEphemeral(body.channelId, 'only you see this', body.userId)),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const res of slow) res.end('{}');
        server.close(() => r());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slash`;
  const app = await installPlatformApp(d, {
    name: 'standup',
    manifest: {
      displayName: 'Standup',
      slashCommands: [{ command: '/standup', url }],
      offlineMessage: 'Standup is offline',
    },
  });
  bot.client = app.bot;
  // a second app, subscribed to NEW_MESSAGE
  const listener = await startReceiver();
  t.teardown(() => listener.close());
  listener.on('/events', { text: 'ok' });
  await installPlatformApp(d, { name: 'listener', events: ['NEW_MESSAGE'], eventsUrl: `${listener.url}/events` });

  t.test(
    'end to end: say /standup hi → the app acks and posts → messages list shows it → the second app hears NEW_MESSAGE',
    async (t) => {
      const said = await runMain([
        ...g,
        'say',
        'general',
        '/standup hi',
        '--wait-ms',
        '30000',
        '--expect-message',
        'standup started \\(hi\\)',
        '--json',
      ]);
      t.equal(said.code, 0, said.stderr);
      const list = await runMain([...g, 'messages', 'list', 'general', '--json']);
      const botMessage = (JSON.parse(list.stdout).messages as Array<{ id: string; text: string; author: string }>).find(
        (m) => m.text === 'standup started (hi)',
      );
      t.ok(botMessage, 'messages list shows the bot’s message');
      t.match(must(botMessage).author, /^bot_/);
      const heard = await until(() =>
        listener.received
          .map((r) => JSON.parse(r.body.body))
          .find((b: { mId?: string }) => b.mId === must(botMessage).id),
      );
      t.match(
        heard,
        { ty: 'NEW_MESSAGE', tx: 'standup started (hi)', aId: must(botMessage).author },
        'the second app heard of it',
      );
    },
  );

  t.test('a plain message, then a thread reply to it', async (t) => {
    const r = await runMain([...g, 'say', 'general', 'hello', 'there', '--json']);
    t.equal(r.code, 0, r.stderr);
    const posted = JSON.parse(r.stdout);
    t.match(posted, { kind: 'message', message: { text: 'hello there', author: d.workspaceUserId } });
    const reply = await runMain([...g, 'say', '#general', 'a reply', '--thread', posted.message.id]);
    t.equal(reply.code, 0, reply.stderr);
    t.match(reply.stdout, new RegExp(`posted msg_\\S+ in #general \\(thread ${posted.message.id}\\)`));
    t.equal((await runMain([...g, 'say', 'nosuchchannel', 'hi'])).code, 4);
  });

  t.test('/standup: what the person sees, then what the app posted', async (t) => {
    const r = await runMain([...g, 'say', 'general', '/standup', 'start', '--wait-ms', '30000']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /\/standup → standup \(app_\S+\): acked, [\d.]+ ms/);
    t.match(r.stdout, /standup \(only visible to you\): on it: start/);
    t.match(
      r.stdout,
      /then in the channel:\n\s+\d\d:\d\d:\d\d Standup: standup started \(start\)/,
      'the bot’s message, by its name',
    );
    t.match(r.stdout, /only you see this/, 'the ephemeral message to the person');
    t.match(r.stdout, /PASS/);
    const j = await runMain([
      ...g,
      'say',
      'general',
      '/standup go',
      '--wait-ms',
      '30000',
      '--expect-message',
      'started \\(go\\)',
      '--json',
    ]);
    t.equal(j.code, 0, j.stderr);
    const out = JSON.parse(j.stdout);
    t.match(out, { kind: 'slash-command', passed: true, outcome: 'acked', shown: 'on it: go', modal: null });
    t.ok(out.messages.some((m: { text: string }) => m.text === 'standup started (go)'));
    t.equal(out.delivery.payload.text, 'go');
  });

  t.test('a modal the app opens; a nack and an app too slow exit 6', async (t) => {
    const m = await runMain([...g, 'say', 'general', '/standup modal', '--wait-ms', '0']);
    t.equal(m.code, 0, m.stderr);
    t.match(m.stdout, /modal opened: "Standup" \(callbackId standup_form, 1 block\)/);
    const nack = await runMain([...g, 'say', 'general', '/standup bad', '--wait-ms', '0', '--json']);
    t.equal(nack.code, 6);
    t.match(JSON.parse(nack.stdout), { passed: false, outcome: 'nacked', shown: 'unknown option bad' });
    t.equal((await runMain([...g, 'say', 'general', '/standup bad', '--wait-ms', '0', '--expect', 'nack'])).code, 0);
    const running = runMain([...g, 'say', 'general', '/standup slow', '--wait-ms', '0']);
    await until(() => slow.length === 1); // the app has the command, and takes its time
    await clock.advance(3000); // the 3 s budget
    const late = await running;
    t.equal(late.code, 6);
    t.match(late.stdout, /timeout[\s\S]*Standup is offline[\s\S]*FAIL: expected ok, got timeout/);
    const miss = await runMain([
      ...g,
      'say',
      'general',
      '/standup x',
      '--expect-message',
      'never said',
      '--wait-ms',
      '1',
    ]);
    t.equal(miss.code, 6, 'no matching message');
    t.match(miss.stdout, /FAIL: the app posted no message matching \/never said\//);
    t.equal((await runMain([...g, 'say', 'general', '/nosuchcommand'])).code, 4, 'no app has the command');
    t.equal((await runMain([...g, 'say', 'general', '/standup', '--wait-ms', '-1'])).code, 2);
  });

  t.test('--as another user of the workspace (the owner signs them in for the command)', async (t) => {
    const made = await runMain([
      ...g,
      'users',
      'create',
      '--workspace',
      d.workspaceId,
      '--email',
      'dev@example.com',
      '--name',
      'Dev',
      '--json',
    ]);
    t.equal(made.code, 0, made.stderr);
    const dev = JSON.parse(made.stdout) as { id: string };
    // dev is in the middle of an official-CLI login: acting as dev must leave it alone
    const lead = (await (
      await d.api('/lead', { method: 'POST', noAuth: true, json: { email: 'dev@example.com' } })
    ).json()) as { id: string };
    const codeLines = () =>
      d
        .logs()
        .split('\n')
        .filter((l) => /login code \d{6} for dev@example\.com/.test(l)).length;
    t.equal(codeLines(), 1);
    const r = await runMain([...g, 'say', 'general', 'hi from dev', '--as', 'dev@example.com', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.equal(JSON.parse(r.stdout).message.author, dev.id);
    const byId = await runMain([...g, 'say', 'general', '/standup as-dev', '--as', dev.id, '--json']);
    t.equal(byId.code, 0, byId.stderr);
    t.equal(JSON.parse(byId.stdout).delivery.payload.userId, dev.id, 'the command came from dev');
    const me = await runMain([...g, 'say', 'general', 'as myself', '--as', d.workspaceUserId, '--json']);
    t.equal(JSON.parse(me.stdout).message.author, d.workspaceUserId);
    t.equal(codeLines(), 1, 'acting as dev logged no login code');
    const code = (await (await d.api(`${d.mgmt}/login-codes?email=dev%40example.com`)).json()) as { code: string };
    const activated = await d.api('/lead/activate', {
      method: 'POST',
      noAuth: true,
      json: { email: 'dev@example.com', code: code.code, leadId: lead.id },
    });
    t.equal(activated.status, 200, "dev's pending login still activates");
    const loggedIn = await d.api('/lead/login', { method: 'POST', noAuth: true, json: { leadId: lead.id } });
    t.equal(loggedIn.status, 200, 'and logs in');
    t.match(d.logs(), /acting as another user of the workspace/);
    t.equal((await runMain([...g, 'say', 'general', 'x', '--as', 'wu_nobody'])).code, 4);
    t.equal((await runMain([...g, 'say', 'general', 'x', '--as', 'nobody@example.com'])).code, 4);
    // a user who does not own the workspace cannot act as someone else
    const login = await d.api('/auth/login', {
      method: 'POST',
      noAuth: true,
      json: { email: 'dev@example.com', password: JSON.parse(made.stdout).password },
    });
    const devToken = ((await login.json()) as { authToken: string }).authToken;
    const refused = await runMain([
      '--url',
      d.url,
      '--token',
      devToken,
      'say',
      'general',
      'x',
      '--as',
      d.workspaceUserId,
    ]);
    t.equal(refused.code, 4);
    t.match(refused.stderr, /only the owner of the workspace/);
  });
});
