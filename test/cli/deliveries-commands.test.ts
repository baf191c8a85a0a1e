/**
 * Issue 10, the CLI's side of deliveries against a real daemon: deliveries cancel (19), replays
 * marked and the schedule shown only while retrying (20), "payload not kept" after a restart (21),
 * the list's order and its CREATED column (22), deliver-test's waiting line on a terminal (31)
 * and --timeout-ms for events (18).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir, type TestDaemon } from '../helpers/daemon.js';
import { runMain, runWhileAppThinks, type CliOptions } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { must } from '../../src/must.js';

async function appOn(t: Tap.Test, d: TestDaemon, rxUrl: string): Promise<{ id: string }> {
  const m = manifest({
    slashCommands: [{ command: '/standup', url: `${rxUrl}/slash` }],
    eventSubscriptions: { url: `${rxUrl}/events`, events: ['NEW_MESSAGE'] },
  });
  const res = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: m });
  t.equal(res.status, 201);
  return (await res.json()) as { id: string };
}

t.test('deliveries against a running daemon', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];
  const app = await appOn(t, d, rx.url);
  const dt = (args: string[], opts: CliOptions = {}) => runMain([...g, 'deliver-test', app.id, ...args], opts);

  t.test('an event honours --timeout-ms; a retrying event is cancelled with deliveries cancel', async (t) => {
    rx.on('/events', { hang: true });
    const t0 = Date.now();
    const r = await dt(['--kind', 'event', '--timeout-ms', '500', '--json']);
    t.equal(r.code, 6, r.stderr);
    t.ok(Date.now() - t0 < 5000, `answered within the budget, not the 10 s event timeout (${Date.now() - t0} ms)`);
    const sent = JSON.parse(r.stdout).delivery as { id: string; state: string };
    t.equal(sent.state, 'retrying');
    const before = await runMain([...g, 'deliveries', 'show', sent.id]);
    t.match(before.stdout, /next attempt\s+\d{4}-/, 'the next attempt while retrying');

    const cancel = await runMain([...g, 'deliveries', 'cancel', sent.id]);
    t.equal(cancel.code, 0, cancel.stderr);
    t.match(cancel.stdout, /^cancelled dlv_\S+/);
    t.match(cancel.stdout, /state\s+cancelled \(.+\)/, 'the state and the reason');
    t.notMatch(cancel.stdout, /next attempt/);
    const show = await runMain([...g, 'deliveries', 'show', sent.id, '--json']);
    t.match(JSON.parse(show.stdout), { state: 'cancelled', cancelReason: String });
    const again = await runMain([...g, 'deliveries', 'cancel', sent.id, '--json']);
    t.equal(again.code, 4, 'not retrying any more: rejected like any refusal');
    t.match(JSON.parse(again.stdout), { error: { code: 'delivery_not_retrying' }, exitCode: 4 });
    const unknown = await runMain([...g, 'deliveries', 'cancel', 'dlv_nope']);
    t.equal(unknown.code, 4);
    t.match(unknown.stderr, /not found|not_found/i);
  });

  t.test('a replayed attempt is marked in deliveries show', async (t) => {
    rx.on('/events', { status: 500, text: 'down' });
    const r = await dt(['--kind', 'event', '--json']);
    t.equal(r.code, 6);
    const id = JSON.parse(r.stdout).delivery.id as string;
    rx.on('/events', { text: 'ok' });
    const replay = await runMain([...g, 'deliveries', 'replay', id, '--json']);
    t.equal(replay.code, 0, replay.stderr);
    const show = await runMain([...g, 'deliveries', 'show', id]);
    t.match(show.stdout, /^\d+ \(replay\)\s+\S+\s+acked/m, 'the replay is marked as one');
    t.match(show.stdout, /^0\s+\S+\s+http_error/m, 'the first attempt is not');
    if (JSON.parse(replay.stdout).state !== 'retrying') t.notMatch(show.stdout, /next attempt/);
    await runMain([...g, 'deliveries', 'cancel', id]); // stop its schedule, if any
  });

  t.test('deliveries list: newest first by creation time, CREATED first, and says so', async (t) => {
    rx.on('/slash', { json: {} });
    t.equal((await dt(['--kind', 'slash-command'])).code, 0);
    const list = JSON.parse((await runMain([...g, 'deliveries', 'list', '--json'])).stdout) as Array<{
      createdAt: string;
      kind: string;
    }>;
    t.ok(list.length >= 3);
    t.equal(
      must(list[0]).kind,
      'slash-command',
      'the newest is first although older ones were updated later (replay, cancel)',
    );
    const created = list.map((x) => x.createdAt);
    t.same(created, [...created].sort().reverse(), 'ordered by createdAt, newest first');
    const human = await runMain([...g, 'deliveries', 'list']);
    const lines = human.stdout.trimEnd().split('\n');
    t.match(lines[0], /^CREATED\s+ID\s+KIND/);
    t.equal(must(lines[1]).split(/\s+/)[0], created[0], 'the first row shows the newest creation time');
    t.match(lines.at(-1), /newest first by creation time/);
  });

  t.test(
    'on a terminal deliver-test says it is waiting once the wait passes a second; never on a pipe or with --json',
    async (t) => {
      const tty = await runWhileAppThinks(rx, '/slash', (o) => dt(['--kind', 'slash-command'], { ...o, isTTY: true }));
      t.equal(tty.code, 0, tty.stderr);
      t.equal(tty.stderr.match(/waiting for the app… \(budget 3000 ms\)\n/g)?.length, 1, 'one line on stderr');
      t.notMatch(tty.stdout, /waiting/);
      const pipe = await runWhileAppThinks(rx, '/slash', (o) => dt(['--kind', 'slash-command'], o));
      t.notMatch(pipe.stderr, /waiting/);
      const json = await runWhileAppThinks(rx, '/slash', (o) =>
        dt(['--kind', 'slash-command', '--json'], { ...o, isTTY: true }),
      );
      t.notMatch(json.stderr, /waiting/);
      const early = await runWhileAppThinks(
        rx,
        '/slash',
        (o) => dt(['--kind', 'slash-command'], { ...o, isTTY: true }),
        999,
      );
      t.notMatch(early.stderr, /waiting/, 'not before a second');
      rx.on('/slash', { json: {} });
      const quick = await dt(['--kind', 'slash-command'], { isTTY: true });
      t.notMatch(quick.stderr, /waiting/, 'not for an answer within a second');
    },
  );
});

t.test('after a restart, a trigger that succeeded shows "payload not kept", not null', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const dir = tempDir('appreg-restart-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const d = await startTestDaemon({ dataDir: dir });
  const app = await appOn(t, d, rx.url);
  rx.on('/slash', { json: { message: 'hi' } });
  const r = await runMain([
    '--url',
    d.url,
    '--token',
    d.token,
    'deliver-test',
    app.id,
    '--kind',
    'slash-command',
    '--json',
  ]);
  t.equal(r.code, 0, r.stderr);
  const id = JSON.parse(r.stdout).delivery.id as string;
  await d.stop();
  fs.rmSync(path.join(dir, 'daemon.json'), { force: true });
  const again = await startTestDaemon({ dataDir: dir });
  t.teardown(() => again.stop());
  const show = await runMain(['--url', again.url, '--token', again.token, 'deliveries', 'show', id]);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /sent\n\(payload not kept/);
  t.notMatch(show.stdout, /^null$/m);
  t.equal(
    JSON.parse((await runMain(['--url', again.url, '--token', again.token, 'deliveries', 'show', id, '--json'])).stdout)
      .payload,
    null,
    '--json unchanged',
  );
});
