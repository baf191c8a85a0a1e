/**
 * Issue 24: the example app's suite (examples/standup-app/standup.apptest.yaml) passes against the
 * example, run as CI runs it: `appreg test examples/standup-app` as a process, which starts a daemon
 * of its own and the app, and leaves nothing behind: no process listening, no file in its TMPDIR.
 * The suite covers the command, the buttons (as two users), the menu and the select, the modal
 * (submitted and closed), the thread reply and the signature check.
 */
import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { runCli, runMain } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';
import { tempDir } from '../helpers/daemon.js';
import type { RunResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(false)));
    s.once('error', () => resolve(true));
  });

t.test("the example's suite passes, and the run leaves nothing running or on disk", async (t) => {
  const root = copyExamples();
  const tmp = tempDir('appreg-apptest-tmp-');
  const r = await runCli(['test', 'examples/standup-app', '--reporter', 'json'], {
    cwd: root,
    env: { TMPDIR: tmp },
    timeoutMs: 120_000,
  });
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stderr + r.stdout.slice(0, 4000));
  const result = JSON.parse(r.stdout) as RunResult;
  t.match(
    result,
    { passed: true, counts: { failed: 0, skipped: 0 }, daemon: { own: true } },
    'the run passed, on a daemon of its own',
  );
  const [suite] = result.suites;
  t.equal(must(suite).name, 'Standup');
  t.ok(must(suite).tests.length >= 8, `${must(suite).tests.length} tests`);
  const steps = must(suite)
    .tests.flatMap((x) => x.steps.map((s) => s.title))
    .join('\n');
  for (const [what, re] of [
    ['the command', /say \/standup/],
    ['the buttons, by label and by onAction, as another user', /click onAction standup_skip .* as dev/],
    ['a reply in a thread', /say @standup are you still there\? in the thread of \$\{hello\} as dev/],
    ['the menu', /menu pick_mood/],
    ['the select', /select "Great"/],
    ['the modal', /submit the modal/],
    ['closing it', /close the modal/],
    ['the thread reply', /expect message "Type \/standup" in the thread/],
    ['the signature check', /signature-check/],
  ] as const) {
    t.match(steps, re, `it covers ${what}`);
  }
  t.ok(
    must(suite).tests.every((x) => x.status === 'passed' && x.steps.every((s) => s.status === 'passed')),
    'every test and step passed',
  );
  t.same(fs.readdirSync(tmp), [], "the daemon's data dir and the run's folder are gone");
  const daemonPort = Number(new URL(result.daemon.url).port);
  t.ok(await refused(daemonPort), 'the daemon is stopped');
  const appPort = Number(must(/port (\d+)/.exec(must(must(must(suite).app).started)))[1]);
  t.ok(await refused(appPort), 'the app is stopped');
  t.notOk(
    fs.existsSync(path.join(root, 'examples/standup-app/tokens.json')),
    "the app kept its tokens in the run's folder, not beside it",
  );
});

t.test('--jobs 4 runs the same suite in parallel, as well; pretty output without colour off a terminal', async (t) => {
  const root = copyExamples();
  const r = await runMain(['test', '--jobs', '4'], { cwd: path.join(root, 'examples/standup-app') });
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stdout);
  t.match(r.stdout, /Standup \(.*standup\.apptest\.yaml, \d+ tests\)/, 'the suite, its file and its count');
  // a time as the pretty report writes it: "862 ms", or "1.2 s" from a second on (a loaded machine)
  const time = String.raw`(\d+ ms|\d+\.\d s)`;
  t.match(
    r.stdout,
    new RegExp(
      String.raw`✓ the shortcut opens a modal whose answer is posted ${time}\n\s+✓ shortcut Start standup ${time}`,
    ),
    'each test and step with its time',
  );
  t.match(r.stdout, /\n\d+ passed, 0 failed, 0 skipped in /, 'the counts at the end');
  t.notMatch(r.stdout, /\u001b\[/, 'no colour codes');
});

t.test('a socket-mode app: ready once connected, every call over its websocket; no signature to check', async (t) => {
  const root = copyExamples();
  const dir = path.join(root, 'examples/standup-socket');
  fs.writeFileSync(
    path.join(dir, 'socket.apptest.yaml'),
    `app:
  manifest: manifest.json
  start:
    command: node app.mjs
    env: { STANDUP_TOKENS_FILE: "\${run.dir}/tokens.json" }
tests:
  - name: /standup-socket over the websocket
    steps:
      - say: /standup-socket Socket sprint
      - expect: ack
      - expect: message
        text: "Socket sprint: joined nobody yet"
      - click: Join
      - expect: updated
        text: joined Owner
  - name: a signature check
    steps:
      - expect: signature-check
`,
  );
  const r = await runMain(['test', dir, '--reporter', 'json'], { cwd: root });
  t.equal(r.code, 6, 'the signature check cannot pass');
  const result = JSON.parse(r.stdout) as RunResult;
  const [conversation, signature] = must(result.suites[0]).tests;
  t.equal(
    must(conversation).status,
    'passed',
    must(conversation).status === 'passed' ? 'the conversation passed over the socket' : JSON.stringify(conversation),
  );
  t.match(must(result.suites[0]).app, { started: /node app\.mjs/, ready: /ms$/ });
  t.match(must(must(signature).steps[0]).failure, {
    message: 'a socket-mode app gets no signed requests: signature-check is for apps in HTTP mode',
  });
});

t.test('asked to stop before a test starts: none starts, the run fails and leaves nothing', async (t) => {
  const root = copyExamples();
  const r = await runMain(['test', 'examples/standup-app', '--reporter', 'json'], {
    cwd: root,
    stop: Promise.resolve('SIGINT'),
  });
  t.equal(r.code, 6);
  t.match(r.stderr, /stopping: no more tests start/);
  const result = JSON.parse(r.stdout) as RunResult;
  t.equal(result.passed, false);
  t.ok(
    must(result.suites[0]).tests.every(
      (x) => x.status === 'skipped' && x.skipReason === 'not run: the run was stopped',
    ),
    'every test reported as not run',
  );
  t.ok(await refused(Number(new URL(result.daemon.url).port)), 'the daemon is stopped');
});
