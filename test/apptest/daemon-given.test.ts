/**
 * `appreg test --url`: on a daemon that is already running, a run registers its own app and
 * channels and removes them at the end (its installation and authorizations with them), leaving
 * the delivery log; the users a suite names are made once and used again by later runs. An app
 * that is already running (app.url and app.id) keeps its registration.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { copyExamples, startExample } from '../helpers/example-app.js';
import { until } from '../helpers/until.js';
import type { RunResult } from '../../src/apptest/results.js';

t.test('a run on a daemon given with --url leaves nothing but the delivery log', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const get = async <T>(p: string) => (await (await d.api(`${d.mgmt}${p}`)).json()) as T;
  const channelsBefore = (await get<Array<{ channel: { name: string } }>>('/channels'))
    .map((c) => c.channel.name)
    .sort();
  const root = copyExamples();
  const run = () =>
    runMain(['test', 'examples/standup-app', '--url', d.url, '--token', d.token, '--reporter', 'json', '--jobs', '2'], {
      cwd: root,
    });
  const r = await run();
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stdout.slice(0, 3000) + r.stderr);
  const result = JSON.parse(r.stdout) as RunResult;
  t.match(result, { passed: true, daemon: { url: d.url, own: false } }, 'it used the daemon given');

  t.same(await get('/apps/mine'), [], 'the app it registered is deleted');
  t.same(await get('/apps/authorizations'), [], 'and its authorizations with its installation');
  t.same(
    (await get<Array<{ channel: { name: string } }>>('/channels')).map((c) => c.channel.name).sort(),
    channelsBefore,
    "each test's channel is deleted",
  );
  const users = await get<Array<{ email: string; isAddonBot: boolean }>>('/users');
  t.equal(users.filter((u) => u.isAddonBot).length, 0, 'no bot user is left');
  t.equal(
    users.filter((u) => u.email === 'dev.appreg-test@appreg.test').length,
    1,
    "the suite's user dev is kept (appreg cannot remove a user)",
  );
  const log = await get<Array<{ kind: string }>>('/deliveries?limit=1000');
  t.ok(
    log.some((x) => x.kind === 'slash-command') && log.some((x) => x.kind === 'block-interaction'),
    'the delivery log keeps what was sent',
  );

  const again = await run();
  t.equal(again.code, 0, 'a second run passes too');
  t.equal(
    (await get<Array<{ email: string }>>('/users')).filter((u) => u.email === 'dev.appreg-test@appreg.test').length,
    1,
    'and uses the same dev',
  );
});

t.test('an app already running: its registration is used as it is, and kept', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await startExample(t, d, 'standup-app');
  const dir = path.join(app.dir, 'ci');
  fs.mkdirSync(dir);
  fs.writeFileSync(
    path.join(dir, 'running.apptest.yaml'),
    `app:
  url: \${env.APP_URL}
  id: \${env.PUMBLE_APP_ID}
  manifest: { fromUrl: "\${env.APP_URL}" }
install:
  botScopes: [messages:write, messages:read, user:read]
  userScopes: []
tests:
  - name: signed calls only
    steps:
      - expect: signature-check
  - name: /standup
    steps:
      - say: /standup From CI
      - expect: ack
      - expect: message
        text: From CI
`,
  );
  // the app serves no manifest of its own: fromUrl is refused by the daemon, and the run says so
  const refused = await runMain(['test', dir, '--url', d.url, '--token', d.token], {
    cwd: app.dir,
    env: { APP_URL: app.url, PUMBLE_APP_ID: app.appId },
  });
  t.equal(refused.code, 4, 'a registration the daemon could not update: rejected');
  t.match(refused.stderr, /manifest/);
  // the app's id and URL are text: a reference naming an object (the run: {dir, id}) is refused
  const suiteText = fs.readFileSync(path.join(dir, 'running.apptest.yaml'), 'utf8');
  fs.writeFileSync(path.join(dir, 'running.apptest.yaml'), suiteText.replace('url: ${env.APP_URL}', 'url: ${run}'));
  const notText = await runMain(['test', dir, '--url', d.url, '--token', d.token], {
    cwd: app.dir,
    env: { APP_URL: app.url, PUMBLE_APP_ID: app.appId },
  });
  t.equal(notText.code, 7, 'a reference that is not text: invalid input');
  t.match(notText.stderr, /running\.apptest\.yaml: app\.url: \$\{run\} is \{"dir":.*\}, and it must be text/);
  // nor can they name the app, which is not found yet while they are read
  fs.writeFileSync(path.join(dir, 'running.apptest.yaml'), suiteText.replace('url: ${env.APP_URL}', 'url: ${app.url}'));
  const noApp = await runMain(['test', dir, '--url', d.url, '--token', d.token], {
    cwd: app.dir,
    env: { APP_URL: app.url, PUMBLE_APP_ID: app.appId },
  });
  t.equal(noApp.code, 7, 'a reference to the app in its own fields: invalid input');
  t.match(noApp.stderr, /app\.url: \$\{app\.url\}: nothing is named app/);
  fs.writeFileSync(path.join(dir, 'running.apptest.yaml'), suiteText);
  fs.writeFileSync(
    path.join(dir, 'running.apptest.yaml'),
    fs.readFileSync(path.join(dir, 'running.apptest.yaml'), 'utf8').replace(/ {2}manifest: .*\n/, ''),
  );
  const r = await runMain(['test', dir, '--url', d.url, '--token', d.token, '--reporter', 'tap'], {
    cwd: app.dir,
    env: { APP_URL: app.url, PUMBLE_APP_ID: app.appId },
  });
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stdout + r.stderr);
  t.match(r.stdout, /^TAP version 14\n1\.\.2\nok 1 - running › signed calls only/, 'the TAP report');
  t.equal((await d.api(`${d.mgmt}/apps/mine/${app.appId}`)).status, 200, "the app's registration is kept");
  const auth = (
    (await (await d.api(`${d.mgmt}/apps/authorizations`)).json()) as Array<{
      app: { id: string };
      botScopes: string[];
      userScopes: string[];
    }>
  ).find((a) => a.app.id === app.appId);
  t.match(
    auth,
    { botScopes: ['messages:write', 'messages:read', 'user:read'], userScopes: [] },
    'authorized with the scopes the install names, and kept',
  );
  // the app prints after it posted: its line may still be on its way when the run ends
  t.match(
    await until(app.out, (out) => /posted standup/.test(out)),
    /posted standup/,
    'the running app got the command',
  );
});
