/**
 * Issue 37, from the terminal: `appreg test --record` records what is done with `appreg say` (as two people) until
 * Ctrl-C and writes it as a suite beside the app's manifest, its app started as `--init` guesses; `appreg test` on
 * that file passes. `--stop` without a recording on, and `--record-out` alone, are clear usage errors.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { copyExamples } from '../helpers/example-app.js';
import { standupWithTwoPeople } from '../helpers/standup-two-people.js';
import { runMain } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { createTestClock } from '../helpers/test-clock.js';

t.test('record with the CLI, save beside the manifest, run it', async (t) => {
  const { d, app } = await standupWithTwoPeople(t);
  const g = ['--url', d.url, '--token', d.token];
  const file = path.join(app.dir, 'standup-recorded.apptest.yaml');

  await t.test('usage errors change nothing', async (t) => {
    const stop = await runMain([...g, 'test', '--record', '--stop', '--record-out', file]);
    t.equal(stop.code, 2);
    t.match(stop.stderr, /no recording is on/);
    const alone = await runMain([...g, 'test', '--record-out', file]);
    t.equal(alone.code, 2);
    t.match(alone.stderr, /--record-out and --stop go with --record/);
    const badName = await runMain([...g, 'test', '--record', '--record-out', path.join(app.dir, 'x.yaml')]);
    t.equal(badName.code, 2);
    t.match(badName.stderr, /\.apptest\.yaml/);
    t.notOk(fs.existsSync(file));
  });

  await t.test('a stop in the console ends the recording the CLI waits on', async (t) => {
    const clock = createTestClock();
    const other = path.join(app.dir, 'stopped-elsewhere.apptest.yaml');
    const waiting = runMain([...g, 'test', '--record', '--record-out', other, '--json'], { clock });
    const [on] = await until(
      async () =>
        ((await (await d.api(`${d.mgmt}/recordings`)).json()) as { recordings: Array<{ id: string }> }).recordings,
      (l) => l.length === 1,
    );
    t.equal((await app.cli(['say', 'general', '/standup Sprint 13'])).code, 0);
    const info = async () =>
      ((await (await d.api(`${d.mgmt}/recordings/${on?.id}`)).json()) as { recording: { events: number } }).recording;
    await until(info, (r) => r.events >= 2);
    // the console's Stop is this call, made by the console's page for the signed-in person
    t.equal((await d.api(`${d.mgmt}/recordings/${on?.id}/stop`, { method: 'POST' })).status, 200);
    await clock.advance(1000);
    const r = await waiting;
    t.equal(r.code, 0, r.stderr);
    t.match(YAML.parse(fs.readFileSync(other, 'utf8')).tests[0].steps[0], { say: '/standup Sprint 13' });
  });

  let stop: (s: string) => void = () => {};
  const recording = runMain([...g, 'test', '--record', '--record-out', file, '--json'], {
    stop: new Promise<string>((r) => (stop = r)),
  });
  const on = await until(
    async () =>
      ((await (await d.api(`${d.mgmt}/recordings`)).json()) as { recordings: Array<{ id: string }> }).recordings,
    (l) => l.length === 1,
  );
  t.equal(on.length, 1, 'the recording is on');
  t.equal((await app.cli(['say', 'general', '/standup Sprint 14'])).code, 0);
  const inGeneral = async () =>
    (
      (await (await d.api(`${d.mgmt}/channels/general/messages`)).json()) as {
        messages: Array<{ id: string; text: string }>;
      }
    ).messages;
  const messages = await until(inGeneral, (l) => l.some((m) => m.text.startsWith('Sprint 14')));
  const standup = messages.find((m) => m.text.startsWith('Sprint 14'));
  const clicked = await app.cli([
    'deliver-test',
    app.appId,
    '--kind',
    'block-interaction',
    '--message-id',
    String(standup?.id),
    '--on-action',
    'standup_join',
    '--value',
    'join',
    '--channel',
    'general',
  ]);
  t.equal(clicked.code, 0, clicked.stderr);
  await until(inGeneral, (l) => l.some((m) => m.text.startsWith('Sprint 14: joined Owner')));
  const said = await app.cli(['say', 'general', 'good morning team', '--as', 'dev@example.com']);
  t.equal(said.code, 0, said.stderr);
  await until(
    async () =>
      ((await (await d.api(`${d.mgmt}/recordings/${on[0]?.id}`)).json()) as { recording: { events: number } }).recording
        .events,
    (n) => n >= 6,
  );
  stop('SIGINT');
  const r = await recording;
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.match(JSON.parse(lines[0] ?? '{}'), { recording: { id: on[0]?.id }, consoleUrl: /\/console\/recordings\/rec_/ });
  t.match(JSON.parse(lines.slice(1).join('\n')), { file, tests: 2, steps: 8 });
  const suite = YAML.parse(fs.readFileSync(file, 'utf8'));
  t.same(
    suite.app,
    {
      manifest: 'manifest.json',
      start: { command: 'node app.mjs', env: { STANDUP_TOKENS_FILE: '${run.dir}/standup-tokens.json' } },
    },
    'started as --init guesses',
  );
  t.same(suite.users, { dev: { name: 'Dev' } });
  t.same(suite.tests[0].steps, [
    { say: '/standup Sprint 14' },
    { expect: 'ack' },
    {
      expect: 'message',
      text: 'Sprint 14: joined nobody yet; skipped nobody yet',
      buttons: ['Join', 'Skip'],
      save: 'standup',
    },
    { click: 'Join', message: '${standup}' },
    { expect: 'ack' },
    { expect: 'updated', text: 'Sprint 14: joined Owner; skipped nobody yet', buttons: ['Join', 'Skip'] },
    { say: 'good morning team', as: 'dev' },
    { expect: 'event', type: 'NEW_MESSAGE' },
  ]);

  t.same(suite.tests[1], {
    name: 'calls that are not properly signed are refused',
    steps: [{ expect: 'signature-check' }],
  });

  const run = await runMain(['test', file], { cwd: app.dir });
  t.equal(run.code, 0, `the recorded suite passes:\n${run.stdout}\n${run.stderr}`);

  /** The recorded suite on a copy of the app with one file changed (the change must apply): its pretty report. */
  const onBroken = async (name: string, edit: string, from: string, to: string) => {
    const root = copyExamples();
    const dir = path.join(root, 'examples/standup-app');
    const f = path.join(dir, edit);
    const text = fs.readFileSync(f, 'utf8');
    if (!text.includes(from)) throw new Error(`${edit} no longer holds the text the "${name}" variant breaks`);
    fs.writeFileSync(f, text.replace(from, to));
    fs.copyFileSync(file, path.join(dir, path.basename(file)));
    return runMain(['test', path.join(dir, path.basename(file))], { cwd: root });
  };
  const broken: Array<[string, string, string, string, RegExp]> = [
    [
      'wrong signature check',
      'app.mjs',
      "if (!signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });",
      '',
      /✗ expect signature-check[\s\S]*it does not check the signature/,
    ],
    [
      'slow ack',
      'standup.mjs',
      'if (!tokens[p.workspaceId]) return reply(notInstalled());\n      reply({});',
      'if (!tokens[p.workspaceId]) return reply(notInstalled());\n      await new Promise((r) => setTimeout(r, 4000));\n      reply({});',
      /✗ expect ack[\s\S]*the app did not ack/,
    ],
    [
      'wrong answer',
      'standup.mjs',
      "if (p.onAction === 'standup_join') s.joined.add(who), s.skipped.delete(who);",
      "if (p.onAction === 'standup_join') s.skipped.add(who);",
      /✗ expect updated "Sprint 14: joined Owner; skipped nobody yet"[\s\S]*it reads "Sprint 14: joined nobody yet; skipped Owner"/,
    ],
    [
      'crash',
      'standup.mjs',
      'const who = await nameOf(p.workspaceId, p.userId);',
      'const who = await nameOf(p.workspaceId, p.userId);\n      if (p.onAction === "standup_join") setImmediate(() => who.crash.here);',
      /✗ [\s\S]*the app crashed[\s\S]*TypeError/,
    ],
  ];
  for (const [name, edit, from, to, reason] of broken)
    await t.test(`on the broken variant "${name}" it fails with the reason`, async (t) => {
      const r = await onBroken(name, edit, from, to);
      t.equal(r.code, 6, 'exit 6: a test failed');
      t.match(r.stdout, reason);
    });
});
