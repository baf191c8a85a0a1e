/**
 * Issue 22 §4, the small items a newcomer hit: "App not found" names the id; `deliveries get`
 * works like `show`; `deliveries list --app app_nope` is an error, not "(none)"; `--url` to a
 * port where nothing listens is exit 3 "cannot reach", not "not logged in"; `say` shows a waiting
 * line on a terminal while a slow app thinks.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { runMain, runWhileAppThinks, type CliOptions } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';

/** A port nothing listens on: one the system just gave out and took back. */
async function deadPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.test('small things a newcomer hit', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];
  const cli = (args: string[], o: CliOptions = {}) => runMain([...g, ...args], o);
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ slashCommands: [{ command: '/slow', url: `${rx.url}/slash` }] }),
  });
  const app = (await res.json()) as { id: string };

  await t.test('"App not found" names the app', async (t) => {
    const r = await cli(['apps', 'get', 'app_nope']);
    t.equal(r.code, 4);
    t.equal(r.stderr, 'appreg: App app_nope not found. (not_found)\n');
    const dt = await cli(['deliver-test', 'app_nope', '--kind', 'slash-command', '--json']);
    t.match(JSON.parse(dt.stdout), { error: { code: 'not_found', message: 'App app_nope not found.' }, exitCode: 4 });
  });

  await t.test(
    'deliveries list --app: an app that is not yours is an error; yours with no delivery yet is an empty list',
    async (t) => {
      const r = await cli(['deliveries', 'list', '--app', 'app_nope']);
      t.equal(r.code, 4);
      t.match(r.stderr, 'App app_nope not found');
      t.notMatch(r.stdout, /\(none\)/);
      const mine = await cli(['deliveries', 'list', '--app', app.id]);
      t.equal(mine.code, 0, mine.stderr);
      t.match(mine.stdout, /\(none\)/);
    },
  );

  await t.test('deliveries get is deliveries show', async (t) => {
    rx.on('/slash', { json: {} });
    const sent = JSON.parse((await cli(['deliver-test', app.id, '--kind', 'slash-command', '--json'])).stdout)
      .delivery as { id: string };
    const get = await cli(['deliveries', 'get', sent.id]);
    const show = await cli(['deliveries', 'show', sent.id]);
    t.equal(get.code, 0, get.stderr);
    t.equal(get.stdout, show.stdout);
    t.match(get.stdout, new RegExp(`^delivery\\s+${sent.id}`));
    const gone = await cli(['deliveries', 'get', 'dlv_nope']);
    t.equal(gone.stderr, 'appreg: Delivery dlv_nope not found. (not_found)\n');
    t.match((await runMain(['deliveries', '--help'])).stdout, /show\|get <deliveryId>/);
  });

  await t.test('--url where nothing listens: exit 3 "cannot reach", even without a login for that URL', async (t) => {
    const url = `http://127.0.0.1:${await deadPort()}`;
    const r = await runMain(['--url', url, 'apps', 'list'], { env: { APPREG_CONFIG_DIR: d.dataDir } });
    t.equal(r.code, 3);
    t.equal(r.stderr, `appreg: cannot reach the daemon at ${url}: ECONNREFUSED. Is "appreg serve" running?\n`);
    const json = await runMain(['--url', url, 'apps', 'list', '--json'], { env: { APPREG_CONFIG_DIR: d.dataDir } });
    t.match(JSON.parse(json.stdout), { error: { code: 'daemon_unreachable' }, exitCode: 3 });
    const live = await runMain(['--url', d.url, 'apps', 'list'], { env: { APPREG_CONFIG_DIR: d.dataDir } });
    t.equal(live.code, 2, 'a daemon that answers, without a login: still "not logged in"');
    t.match(live.stderr, /not logged in to/);
  });

  await t.test(
    'say /command on a terminal: a waiting line on stderr while the app takes more than a second',
    async (t) => {
      const tty = await runWhileAppThinks(rx, '/slash', (o) =>
        cli(['say', 'general', '/slow', '--wait-ms', '0'], { ...o, isTTY: true }),
      );
      t.equal(tty.code, 0, tty.stderr);
      t.equal(tty.stderr, 'waiting for the app…\n');
      const pipe = await runWhileAppThinks(rx, '/slash', (o) => cli(['say', 'general', '/slow', '--wait-ms', '0'], o));
      t.equal(pipe.stderr, '', 'not on a pipe');
      const json = await runWhileAppThinks(rx, '/slash', (o) =>
        cli(['say', 'general', '/slow', '--wait-ms', '0', '--json'], { ...o, isTTY: true }),
      );
      t.equal(json.stderr, '', 'not with --json');
    },
  );

  await t.test(
    'deliver-test, its output piped: the waiting line still shows when stderr is a terminal, and only then',
    async (t) => {
      const piped = await runWhileAppThinks(rx, '/slash', (o) =>
        cli(['deliver-test', app.id, '--kind', 'slash-command'], { ...o, isTTY: false, stderrIsTTY: true }),
      );
      t.equal(piped.code, 0, piped.stderr);
      t.equal(piped.stderr, 'waiting for the app… (budget 3000 ms)\n');
      const noTerminal = await runWhileAppThinks(rx, '/slash', (o) =>
        cli(['deliver-test', app.id, '--kind', 'slash-command'], { ...o, isTTY: true, stderrIsTTY: false }),
      );
      t.equal(noTerminal.stderr, '', 'stderr not a terminal: no line in a log file');
    },
  );
});
