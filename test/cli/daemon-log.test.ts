/**
 * Issue 22 §4: the daemon's terminal says what happens. One readable info line per delivery
 * attempt (kind, command or event, app, status, outcome, ms) and per failed API call (method,
 * path, status, code); the start-up messages go through the log, JSON lines with
 * --log-format json; a field without a value is never printed as `status=undefined`.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { manifest, tempDir } from '../helpers/daemon.js';
import { runMain, serveInProcess } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';

t.test('the daemon log, pretty on a terminal', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const dir = tempDir();
  const s = await serveInProcess(['--data-dir', dir, '--log-format', 'pretty']);
  t.teardown(async () => void (await s.stop()));
  t.ok(s.url, s.out.stderr);
  t.equal(s.out.stdout, '', 'stdout carries nothing without --json');
  t.match(
    s.out.stderr,
    /^\d\d:\d\d:\d\d\.\d{3} INFO {2}first start: created workspace ws_\S+ and its owner owner@appreg.test; the CLI on this machine uses .*credentials\.json, no login needed\n/m,
  );
  t.match(
    s.out.stderr,
    /^\d\d:\d\d:\d\d\.\d{3} INFO {2}appreg listening on http:\/\/127\.0\.0\.1:\d+ \(data: .+\) pid=\d+\n/m,
  );

  const g = ['--data-dir', dir];
  const file = path.join(dir, 'm.json');
  fs.writeFileSync(
    file,
    JSON.stringify(
      manifest({
        name: 'logged',
        slashCommands: [{ command: '/standup', url: `${rx.url}/slash` }],
        eventSubscriptions: { url: 'http://127.0.0.1:9/events', events: ['NEW_MESSAGE'] },
      }),
    ),
  );
  const app = JSON.parse((await runMain([...g, 'apps', 'create', '--file', file, '--json'])).stdout) as { id: string };

  await t.test('one line per delivery: kind, command or event, app, status, outcome, milliseconds', async (t) => {
    rx.on('/slash', { json: {} });
    t.equal((await runMain([...g, 'deliver-test', app.id, '--kind', 'slash-command'])).code, 0);
    t.match(
      s.out.stderr,
      /INFO {2}slash-command \/standup → logged: 200 acked in [\d.]+ ms deliveryId=dlv_\S+ appId=app_\S+\n/,
    );
    await runMain([...g, 'deliver-test', app.id, '--kind', 'event', '--timeout-ms', '500']);
    t.match(
      s.out.stderr,
      /INFO {2}event NEW_MESSAGE → logged: connection_error in [\d.]+ ms deliveryId=/,
      'no status when none came back',
    );
    t.notMatch(s.out.stderr, /=undefined/, 'never k=undefined');
  });

  await t.test('one line per failed API call: method, path, status, code', async (t) => {
    await runMain([...g, 'apps', 'get', 'app_nope']);
    t.match(
      s.out.stderr,
      /INFO {2}GET \/workspaces\/ws_\S+\/workspaceUsers\/wu_\S+\/apps\/mine\/app_nope → 404 not_found reqId=\S+ ms=[\d.]+\n/,
    );
    const form = new FormData();
    form.append('client-id', app.id);
    form.append('client-secret', 'wrong');
    form.append('code', 'acd_nope');
    t.equal((await fetch(`${s.url}/oauth2/access`, { method: 'POST', body: form })).status, 401);
    t.match(
      s.out.stderr,
      /INFO {2}POST \/oauth2\/access → 401 invalid_client /,
      'the token endpoint, served outside express, too',
    );
    t.notMatch(s.out.stderr, /INFO {2}request /, 'a request that succeeded is not at info');
  });
});

t.test(
  '--log-format json: the start-up messages are JSON lines too; --json prints the address on stdout',
  async (t) => {
    const s = await serveInProcess(['--data-dir', tempDir(), '--log-format', 'json', '--json']);
    const code = await s.stop();
    t.equal(code, 0, s.out.stderr);
    const lines = s.out.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; msg: string; pid?: number });
    t.match(
      lines.find((l) => l.msg.startsWith('first start')),
      { level: 'info', msg: /^first start: created workspace ws_/ },
    );
    t.match(
      lines.find((l) => l.msg.startsWith('appreg listening on')),
      { level: 'info', pid: process.pid },
    );
    t.match(lines.at(-1), { msg: 'SIGTERM: shutting down' });
    t.match(JSON.parse(s.out.stdout), { url: /^http:\/\/127\.0\.0\.1:\d+$/, pid: process.pid });
  },
);
