/**
 * Issue 34, point 8: a call the app does not answer well is a failure the user saw. A slow
 * Standup (it posts the standup but never acknowledges /standup: the daemon gives up after its
 * 3 s, on the test's clock) and one that answers /standup 403: the step that typed the command
 * fails even when the test only expects a message, naming what the app answered and the offline
 * message the user was shown because of it; and `expect ack` shows the time the app took to
 * answer, not the time its check took.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { failureText, type RunResult, type TestResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const OFFLINE = 'Standup is not running: start it with node examples/standup-app/app.mjs';

/** A copy of the examples whose standup app has `file` changed (the change must apply), and a suite of two tests. */
function variant(file: string, from: string, to: string): string {
  const root = copyExamples();
  const dir = path.join(root, 'examples/standup-app');
  const text = fs.readFileSync(path.join(dir, file), 'utf8');
  if (!text.includes(from)) throw new Error(`${file} no longer holds the text this test changes`);
  fs.writeFileSync(path.join(dir, file), text.replace(from, to));
  fs.writeFileSync(
    path.join(dir, 'calls.apptest.yaml'),
    `name: Calls
app:
  manifest: manifest.json
  start:
    command: node app.mjs
    env: { STANDUP_TOKENS_FILE: "\${run.dir}/tokens.json" }
    ready: { output: listening on }
tests:
  - name: only a message expected
    steps:
      - say: /standup Sprint 12
      - expect: message
        text: Sprint 12
  - name: the ack expected
    steps:
      - say: /standup Sprint 13
      - expect: ack
`,
  );
  return root;
}

const run = (d: TestDaemon, root: string) =>
  runMain(
    ['test', 'examples/standup-app/calls.apptest.yaml', '--url', d.url, '--token', d.token, '--reporter', 'json'],
    { cwd: root },
  );

function testsOf(stdout: string): TestResult[] {
  return must((JSON.parse(stdout) as RunResult).suites[0]).tests;
}

t.test('an app that does not acknowledge /standup in time (it posts the standup all the same)', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const mark = path.join(d.dataDir, 'posted.txt');
  // it posts the standup, then never answers: the daemon gives up when its budget has passed on the test's clock
  const root = variant(
    'standup.mjs',
    "reply({});\n      const s = { topic: p.text.trim() || 'Daily standup'",
    "const s = { topic: p.text.trim() || 'Daily standup'",
  );
  const standup = path.join(root, 'examples/standup-app/standup.mjs');
  const posted = 'console.log(`${p.slashCommand}: posted standup ${msg.id} in ${p.channelId}`);';
  const text = fs.readFileSync(standup, 'utf8');
  t.ok(text.includes(posted), 'standup.mjs still says when it posted');
  fs.writeFileSync(
    standup,
    text.replace(
      posted,
      `${posted}\n      (await import('node:fs')).appendFileSync(${JSON.stringify(mark)}, 'posted\\n');`,
    ),
  );
  const running = run(d, root);
  const postedCount = () => (fs.existsSync(mark) ? fs.readFileSync(mark, 'utf8').split('\n').length - 1 : 0);
  for (const n of [1, 2]) {
    t.equal(await until(postedCount, (c) => c >= n), n, `standup ${n} posted, its command not acknowledged`);
    await clock.advance(3000);
  }
  const r = await running;
  t.equal(r.code, 6, 'exit 6');
  const [onlyMessage, ack] = testsOf(r.stdout);

  t.equal(must(onlyMessage).status, 'failed', 'a test that only expects the message fails: the user saw a failure');
  const say = must(must(onlyMessage).steps[0]);
  t.equal(say.status, 'failed', 'at the step that typed the command');
  const f = must(say.failure);
  t.equal(f.message, 'the app did not acknowledge /standup within 3000 ms: the user was shown its offline message');
  t.equal(f.expected, 'the app acknowledges /standup (a 2xx answer) within 3000 ms');
  t.equal(
    f.happened,
    `it did not answer within 3000 ms (timeout); so the user was shown the app's offline message ${JSON.stringify(OFFLINE)} instead`,
  );
  t.match(f.call, { outcome: 'timeout', shown: OFFLINE, shownFrom: 'offlineMessage' });
  t.match(
    failureText(f),
    `  shown to the user: ${JSON.stringify(OFFLINE)}, the app's offline message, shown because the call failed`,
  );
  t.equal(must(onlyMessage).steps[1]?.status, 'skipped', 'the expectation after it did not run');

  const expectAck = must(must(ack).steps[1]);
  t.equal(expectAck.status, 'failed', 'expect ack judges the answer itself');
  t.match(must(expectAck.failure).message, 'the app did not ack');
  t.equal(must(ack).steps[0]?.status, 'passed', 'and the command step before it passes');
  t.equal(
    expectAck.durationMs,
    Math.round(must(must(expectAck.failure).call?.latencyMs)),
    "expect ack shows the time the app took to answer (the call's), not its own",
  );
});

t.test('an app that answers /standup 403: the 403 is named, the offline message as its consequence', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const root = variant(
    'app.mjs',
    "    if (!signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });",
    "    if (url.pathname === '/slash' || !signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });",
  );
  const r = await run(d, root);
  t.equal(r.code, 6, 'exit 6');
  const [onlyMessage, ack] = testsOf(r.stdout);
  const f = must(must(must(onlyMessage).steps[0]).failure);
  t.equal(f.message, 'the app answered 403 to /standup: the user was shown its offline message');
  t.match(f.happened, /^it answered 403 after [\d.]+ ms: it refused the request, usually its signature check/);
  t.match(f.happened, `; so the user was shown the app's offline message ${JSON.stringify(OFFLINE)} instead`);
  t.match(
    failureText(f),
    /the call: slash-command \/standup \(dlv_[^)]+\) → http:\/\/127\.0\.0\.1:\d+\/slash: answered 403 \(signature_rejected\) in [\d.]+ ms/,
  );
  const fa = must(must(must(ack).steps[1]).failure);
  t.equal(fa.message, 'the app did not ack');
  t.match(fa.happened, /^it answered 403 after [\d.]+ ms: .*; so the user was shown the app's offline message/);
});

t.test('an app that answers in time: expect ack shows the time of its answer', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const root = variant('app.mjs', 'Standup (${config.appId}) listening', 'Standup (${config.appId}) listening');
  const r = await run(d, root);
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stdout.slice(0, 3000));
  const expectAck = must(must(testsOf(r.stdout)[1]).steps[1]);
  const deliveries = (await (await d.api(`${d.mgmt}/deliveries?limit=10`)).json()) as Array<{
    kind: string;
    payload: { text?: string };
    attempts: Array<{ latencyMs: number }>;
  }>;
  const call = must(deliveries.find((x) => x.kind === 'slash-command' && x.payload.text === 'Sprint 13'));
  t.equal(expectAck.durationMs, Math.round(must(call.attempts.at(-1)).latencyMs), 'the ack time of the call');
});
