import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { startReceiver, verify } from '../helpers/receiver.js';
import { must } from '../../src/must.js';

t.test('appreg deliver-test: exit codes per outcome, the signature probe, deliveries, apps sync', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const work = tempDir('appreg-dt-');
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const g = ['--url', d.url, '--token', d.token];
  const m = manifest({
    slashCommands: [{ command: '/standup', url: `${rx.url}/slash` }],
    shortcuts: [{ shortcutType: 'GLOBAL', url: `${rx.url}/shortcut`, name: 'start', displayName: 'Start' }],
    dynamicMenus: [{ url: `${rx.url}/menus`, onAction: 'pick' }],
    eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
    offlineMessage: 'CLI app is offline',
  });
  const file = path.join(work, 'm.json');
  fs.writeFileSync(file, JSON.stringify(m));
  const created = await runMain([...g, 'apps', 'create', '--file', file, '--json']);
  t.equal(created.code, 0, created.stderr);
  const app = JSON.parse(created.stdout);
  rx.secret = app.signingSecret;
  const dt = (...args: string[]) => runMain([...g, 'deliver-test', app.id, ...args]);

  t.test('ack → 0, with what was sent and what came back', async (t) => {
    rx.on('/slash', { json: { message: 'Started!' } });
    const r = await dt('--kind', 'slash-command', '--text', 'start');
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /SLASH_COMMAND/);
    t.match(r.stdout, /Started!/);
    t.match(r.stdout, /PASS/);
  });

  t.test('nack → 6 by default, 0 with --expect nack; the message is shown', async (t) => {
    rx.on('/slash', { status: 400, json: { message: 'No such option' } });
    const r = await dt('--kind', 'slash-command', '--json');
    t.equal(r.code, 6);
    const out = JSON.parse(r.stdout);
    t.match(out, { passed: false, delivery: { outcome: 'nacked', ephemeralMessage: 'No such option' } });
    t.equal((await dt('--kind', 'slash-command', '--expect', 'nack')).code, 0);
  });

  t.test('timeout → 6 with the offline message', async (t) => {
    rx.on('/shortcut', { hang: true });
    const r = await dt('--kind', 'global-shortcut', '--timeout-ms', '500', '--json');
    t.equal(r.code, 6);
    t.match(JSON.parse(r.stdout), {
      passed: false,
      delivery: { outcome: 'timeout', ephemeralMessage: 'CLI app is offline' },
    });
  });

  t.test('http error, redirect, refused connection → 6', async (t) => {
    rx.on('/shortcut', { status: 500, text: 'boom' });
    t.equal((await dt('--kind', 'global-shortcut')).code, 6);
    rx.on('/shortcut', { status: 301, headers: { location: '/x' } });
    const r = await dt('--kind', 'global-shortcut', '--json');
    t.equal(r.code, 6);
    t.equal(JSON.parse(r.stdout).delivery.outcome, 'redirect');
  });

  t.test('a menu response → 0 with --expect response, 6 with --expect ack', async (t) => {
    rx.on('/menus', { json: { onAction: 'pick', options: [{ text: 'a', value: 'a' }], triggerId: 't', value: '' } });
    t.equal((await dt('--kind', 'dynamic-menu', '--query', 'a', '--expect', 'response')).code, 0);
    t.equal((await dt('--kind', 'dynamic-menu', '--expect', 'ack')).code, 6);
  });

  t.test('events: an ack is "ok"; the body file is sent as a JSON string', async (t) => {
    rx.on('/events', { text: 'ok' });
    const body = path.join(work, 'body.json');
    fs.writeFileSync(body, JSON.stringify({ tx: 'from a file' }));
    rx.checkEvents = false; // a body of the test's own making, not the daemon's
    const r = await dt('--kind', 'event', '--event', 'NEW_MESSAGE', '--body-file', body);
    rx.checkEvents = true;
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /PASS\nan event's 200 says the app received it, not that its handler ran/, 'and what it proves');
    const last = must(rx.received.at(-1));
    t.equal(last.body.body, '{"tx":"from a file"}');
    const help = await runMain(['deliver-test', '--help']);
    t.match(help.stdout, /An event's 200 says the app received it, not that its handler ran/);
  });

  t.test(
    '--probe-signature fails against a receiver that accepts anything, passes against a checking one',
    async (t) => {
      rx.on('/slash', { json: {} });
      const loose = await dt('--kind', 'slash-command', '--probe-signature', '--wait-ms', '0', '--json');
      t.equal(loose.code, 6, 'an app that accepts unsigned calls fails the pipeline');
      t.match(JSON.parse(loose.stdout), { passed: false, probe: { refusedBoth: false } });
      rx.on('/slash', (req) =>
        verify(rx.secret, req.headers, req.raw) ? { json: {} } : { status: 403, text: 'Invalid signature!' },
      );
      const strict = await dt('--kind', 'slash-command', '--probe-signature', '--wait-ms', '0');
      t.equal(strict.code, 0, strict.stdout + strict.stderr);
      t.match(strict.stdout, /wrong signature: refused/);
    },
  );

  t.test('--probe-signature waits for what is posted after the answer, as say does (it looked once)', async (t) => {
    rx.on('/slash', (req) =>
      verify(rx.secret, req.headers, req.raw) ? { json: {} } : { status: 403, text: 'Invalid signature!' },
    );
    const clock = createTestClock();
    let done = false;
    const running = runMain([...g, 'deliver-test', app.id, '--kind', 'slash-command', '--probe-signature'], {
      clock,
    }).finally(() => (done = true));
    // its first look saw nothing: it waits on its clock for the next one
    await until(() => done || clock.pending().length > 0);
    t.notOk(done, 'still watching after its first look');
    // (the watch takes any message after the trigger as the app's answer)
    t.equal((await runMain([...g, 'say', 'general', 'posted after the answer'])).code, 0);
    while (!done) {
      await clock.advance(100);
      await until(() => done || clock.pending().length > 0);
    }
    const r = await running;
    t.equal(r.code, 0, r.stdout + r.stderr);
    t.match(r.stdout, /the app posted\n.*posted after the answer/);
    t.notMatch(r.stdout, /no message posted/);
  });

  t.test('usage errors exit 2, unknown app exits 4', async (t) => {
    t.equal((await dt('--kind', 'fax')).code, 2);
    t.equal((await dt('--kind', 'slash-command', '--expect', 'maybe')).code, 2);
    t.equal((await dt('--kind', 'slash-command', '--view-file', path.join(work, 'nope.json'))).code, 2);
    t.equal((await runMain([...g, 'deliver-test', 'app_nope', '--kind', 'slash-command'])).code, 4);
    t.equal((await dt('--kind', 'slash-command', '--command', '/missing')).code, 4);
  });

  t.test('deliveries list --failed, show, replay', async (t) => {
    const list = await runMain([...g, 'deliveries', 'list', '--app', app.id, '--failed', '--json']);
    t.equal(list.code, 0, list.stderr);
    const failed = JSON.parse(list.stdout) as Array<{ id: string; state: string }>;
    t.ok(failed.length >= 3);
    t.ok(failed.every((x) => x.state === 'failed' || x.state === 'retrying'));
    const human = await runMain([...g, 'deliveries', 'list']);
    t.match(human.stdout, /ID\s+KIND\s+APP/);
    const show = await runMain([...g, 'deliveries', 'show', must(failed[0]).id]);
    t.equal(show.code, 0);
    t.match(show.stdout, /attempts/);
    rx.on('/shortcut', { json: {} });
    rx.on('/slash', { json: {} });
    rx.on('/menus', { json: {} });
    const replay = await runMain([...g, 'deliveries', 'replay', must(failed[0]).id, '--json']);
    t.equal(replay.code, 0, replay.stderr);
    t.equal(JSON.parse(replay.stdout).state, 'delivered');
  });

  t.test('apps create --from-url and apps sync', async (t) => {
    rx.on('/manifest', { json: { ...m, name: 'from-url', id: 'app_x' } });
    const c = await runMain([...g, 'apps', 'create', '--from-url', rx.url, '--json']);
    t.equal(c.code, 0, c.stderr);
    const made = JSON.parse(c.stdout);
    t.equal(made.name, 'from-url');
    rx.on('/manifest', { json: { ...m, name: 'from-url', displayName: 'Synced' } });
    const s = await runMain([...g, 'apps', 'sync', made.id, '--from-url', rx.url, '--json']);
    t.equal(s.code, 0, s.stderr);
    t.equal(JSON.parse(s.stdout).displayName, 'Synced');
    t.equal(
      (await runMain([...g, 'apps', 'create', '--from-url', rx.url, '--file', 'x.json'])).code,
      2,
      'one of --file and --from-url',
    );
  });

  t.test('--help shows examples', async (t) => {
    const h = await runMain(['deliver-test', '--help']);
    t.equal(h.code, 0);
    t.match(h.stdout, /Examples:/);
    t.match(h.stdout, /--probe-signature/);
  });
});
