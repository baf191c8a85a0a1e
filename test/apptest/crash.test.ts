/**
 * Issue 33: a handler that crashed is a failure. The official SDK answers an event with 200 before its handler runs,
 * and a command once its handler acks, so an answer in time proves nothing about what came after. Where the run
 * started the app, a crash it prints (Node's own, or the SDK's logging of it) fails the step, with its lines, in every
 * report. The app: test/fixtures/sdk-like-app with SDK_LIKE_CRASHES=1, whose /sdk-crash acks then throws, /sdk-reject
 * acks then leaves a rejection unhandled, and REACTION_ADDED handler (answered 200 first) reads a field the body lacks.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Chalk } from 'chalk';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { findCrash } from '../../src/apptest/crash.js';
import { junitReport } from '../../src/apptest/report/junit.js';
import { prettyReporter } from '../../src/apptest/report/pretty.js';
import { tapReport } from '../../src/apptest/report/tap.js';
import type { RunResult, TestResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/sdk-like-app');

/** What Node itself prints when `code` ends it, line by line. */
const nodeSays = (code: string) => spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' }).stderr.split('\n');

t.test('what Node prints when an error nobody caught ends it is a crash; an app logging an error is not', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['setTimeout(() => null.x, 1)', /^TypeError: Cannot read properties of null \(reading 'x'\)$/],
    ["Promise.reject(new RangeError('too long'))", /^RangeError: too long$/],
    ["Promise.reject('just text')", /^UnhandledPromiseRejection: .*"just text"/],
    ["throw new Error('plain')", /^Error: plain$/],
  ];
  for (const [code, headline] of cases) {
    const found = findCrash(['listening on 5000', ...nodeSays(code)]);
    t.match(found?.headline, headline, code);
    t.ok(
      found?.shown.some((l) => /^\s+at /.test(l)),
      `${code}: with its stack`,
    );
  }
  t.equal(
    findCrash(['Error: could not fetch the feed, retrying', 'connection error', 'POST /hook 200 - 3 ms']),
    undefined,
    "an app's own error lines are not a crash",
  );
});

t.test('a handler that crashes after answering fails its step, with its lines, in every report', async (t) => {
  const dir = tempDir('appreg-crash-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of ['app.mjs', 'manifest.json', 'package.json'])
    fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  const env = { SDK_LIKE_CRASHES: '1' };
  const init = await runMain(['test', '--init'], { cwd: dir, env });
  t.equal(init.code, 0, init.stderr);
  const r = await runMain(['test', '--reporter', 'json'], { cwd: dir, env });
  t.equal(r.code, 6, 'the run fails');
  const result = JSON.parse(r.stdout) as RunResult;
  const tests = must(result.suites[0]).tests;
  const byName = (re: RegExp) => must(tests.find((x) => re.test(x.name)));
  t.same(
    tests.filter((x) => x.status === 'failed').map((x) => x.name),
    ['/sdk-crash answers in time', '/sdk-reject answers in time', 'REACTION_ADDED is accepted'],
    'exactly the handlers that crashed',
  );
  t.equal(result.counts.passed, 5, 'the others pass: the app goes on after a crash, as on the SDK');

  const stepOf = (x: TestResult) => must(x.steps.find((s) => s.status === 'failed'));
  const reaction = stepOf(byName(/REACTION_ADDED/));
  t.match(reaction.failure, {
    kind: 'app-crashed',
    message:
      /^the app crashed after event REACTION_ADDED: TypeError: Cannot read properties of undefined \(reading 'match'\)$/,
    expected: 'no uncaught error or unhandled rejection in what the app printed',
  });
  t.ok(
    reaction.failure?.appOutput?.some((l) => /^Unhandled error occurred \{/.test(l)),
    "the app's lines: the SDK's own logging",
  );
  t.match(stepOf(byName(/sdk-reject/)).failure, {
    kind: 'app-crashed',
    message: /: RangeError: the reply was too long$/,
    appOutput: [/^Unhandled Rejection: RangeError: the reply was too long$/],
  });
  t.match(stepOf(byName(/sdk-crash/)).failure?.message, /after say \/sdk-crash: TypeError: Cannot read properties/);

  const junit = junitReport(result, dir);
  t.match(
    junit,
    /<failure message="the app crashed after event REACTION_ADDED: TypeError: [^"]*" type="AppCrashed">[^<]*\| Unhandled error occurred \{/,
  );
  const tap = tapReport(result);
  t.match(
    tap,
    /not ok \d+ - SDK-like › REACTION_ADDED is accepted[^\n]*\n {2}---\n {2}message: "the app crashed after event REACTION_ADDED: TypeError/,
  );
  const tapOutput = tap.slice(tap.indexOf('REACTION_ADDED is accepted'));
  t.match(
    tapOutput.slice(tapOutput.indexOf('  appOutput: |-\n')),
    /^ {2}appOutput: \|-\n {4}Unhandled error occurred \{/m,
  );
  const shown: string[] = [];
  const pretty = prettyReporter(new Chalk({ level: 0 }), (s) => shown.push(s));
  for (const x of tests) must(pretty.testEnd)(undefined as never, x);
  const text = shown.join('');
  // the action's step, or the expectation after it: the crash is read after each step, as it comes
  const part = text.slice(text.indexOf('the app crashed after event REACTION_ADDED'));
  t.match(part, /^the app crashed after event REACTION_ADDED: TypeError: Cannot read properties of undefined/);
  t.match(part, /\n\s+\| Unhandled error occurred \{\n/, "the app's lines");
});
