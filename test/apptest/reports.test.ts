/**
 * The reports of a run, from one run result with a passing, a failing and a skipped test: pretty
 * (colour only when asked: chalk level 0 writes none), JUnit (read back with a JUnit parser; text
 * that XML cannot hold is escaped or left out), TAP (read back with tap-parser).
 */
import t from 'tap';
import { Chalk } from 'chalk';
import { parse } from 'junit2json';
import { Parser } from 'tap-parser';
import { junitReport } from '../../src/apptest/report/junit.js';
import { tapReport } from '../../src/apptest/report/tap.js';
import { prettyReporter, testText } from '../../src/apptest/report/pretty.js';
import type { RunResult, TestResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const result: RunResult = {
  passed: false,
  counts: { tests: 3, passed: 1, failed: 1, skipped: 1 },
  durationMs: 4200,
  startedAt: '2026-01-02T03:04:05.678Z',
  daemon: { url: 'http://127.0.0.1:1', own: true },
  filteredOut: 2,
  suites: [
    {
      file: '/work/app/app.apptest.yaml',
      name: 'App <&> "suite"',
      durationMs: 4100,
      startedAt: '2026-01-02T03:04:05.678Z',
      tests: [
        {
          name: 'passes',
          status: 'passed',
          durationMs: 12,
          steps: [{ index: 0, title: 'say /go', status: 'passed', durationMs: 12 }],
        },
        {
          name: 'fails # badly',
          status: 'failed',
          durationMs: 3012,
          steps: [
            { index: 0, title: 'click "Join"', status: 'passed', durationMs: 9 },
            {
              index: 1,
              title: 'expect updated "joined"',
              status: 'failed',
              durationMs: 3003,
              failure: {
                message: 'the app did not update the message within 3000 ms',
                expected: 'message msg_1 changed to hold "joined"',
                happened: 'it is unchanged: it reads "<b>\u0007"',
                call: {
                  id: 'dlv_1',
                  kind: 'block-interaction',
                  subject: 'join (MESSAGE)',
                  target: 'http://127.0.0.1:2/blocks',
                  outcome: 'acked',
                  status: 200,
                  latencyMs: 3,
                  request: { messageType: 'BLOCK_INTERACTION' },
                  answer: {},
                },
                appOutput: ['started', 'join: Owner'],
              },
            },
            { index: 2, title: 'click "Skip"', status: 'skipped', durationMs: 0, skipReason: 'an earlier step failed' },
          ],
        },
        { name: 'skipped', status: 'skipped', durationMs: 0, skipReason: 'not ready', steps: [] },
      ],
    },
  ],
};

t.test("JUnit: one testcase per test, the failure with expected, happened, the call and the app's lines", async (t) => {
  const xml = junitReport(result, '/work');
  const r = (await parse(xml)) as {
    tests: number;
    failures: number;
    skipped: number;
    testsuite: Array<{
      name: string;
      file: string;
      testcase: Array<{
        name: string;
        classname: string;
        time: number;
        failure?: Array<{ message: string; inner: string }>;
        skipped?: unknown[];
        'system-out'?: string[];
      }>;
    }>;
  };
  t.match(r, { tests: 3, failures: 1, skipped: 1 }, 'the counts');
  const [suite] = r.testsuite;
  t.equal(must(suite).name, 'App <&> "suite"', 'names escaped and read back');
  t.equal(must(suite).file, 'app/app.apptest.yaml', 'the file relative to the working directory');
  t.same(
    must(suite).testcase.map((c) => c.name),
    ['passes', 'fails # badly', 'skipped'],
  );
  t.equal(must(must(suite).testcase[1]).classname, 'App <&> "suite"');
  t.equal(must(must(suite).testcase[1]).time, 3.012);
  const f = must(must(must(must(suite).testcase[1]).failure)[0]);
  t.equal(f.message, 'the app did not update the message within 3000 ms');
  t.match(
    f.inner,
    'step 2: expect updated "joined"\nthe app did not update the message within 3000 ms\nexpected: message msg_1 changed to hold "joined"\nhappened: it is unchanged: it reads "<b>"',
  );
  t.match(
    f.inner,
    'the call: block-interaction join (MESSAGE) (dlv_1) → http://127.0.0.1:2/blocks: acked (200) in 3 ms',
  );
  t.match(
    f.inner,
    '  sent: {"messageType":"BLOCK_INTERACTION"}\n  answer: {}\nthe app printed (last 2 lines):\n  | started\n  | join: Owner',
  );
  t.notMatch(xml, /\u0007/, 'a character XML cannot hold is left out');
  t.ok(must(must(suite).testcase[2]).skipped, 'a skipped test is marked skipped');
  t.match(
    must(must(must(suite).testcase[1])['system-out'])[0],
    'ok 1. click "Join" (9 ms)\nFAILED 2. expect updated "joined" (3003 ms)\nskipped 3. click "Skip" (0 ms) - an earlier step failed',
  );
});

t.test('TAP 14: a point per test, a skip, and the failure as YAML diagnostics', async (t) => {
  const results: Array<{ ok: boolean; name: string; skip?: unknown; diag?: Record<string, unknown> }> = [];
  const p = new Parser();
  p.on('assert', (a) => results.push(a));
  const done = new Promise<{ ok: boolean; count: number; pass: number; fail: number; skip: number }>((r) =>
    p.on('complete', r),
  );
  p.end(tapReport(result));
  const summary = await done;
  t.match(summary, { ok: false, count: 3, pass: 2, fail: 1, skip: 1 });
  t.equal(must(results[1]).name, 'App <&> "suite" › fails # badly', 'a # in a name is escaped');
  t.match(must(results[1]).diag, {
    message: 'the app did not update the message within 3000 ms',
    step: '2. expect updated "joined"',
    expected: /changed to hold/,
    appOutput: 'started\njoin: Owner',
  });
  t.equal(must(results[2]).skip, 'not ready');
});

t.test('pretty: steps with their times, the failure in full, colour only when chalk has it', async (t) => {
  const plain = testText(new Chalk({ level: 0 }), must(must(result.suites[0]).tests[1]));
  t.notMatch(plain, /\u001b\[/, 'no escape codes at level 0 (off a terminal, or NO_COLOR)');
  t.match(
    plain,
    /✗ fails # badly 3\.0 s\n {4}✓ click "Join" 9 ms\n {4}✗ expect updated "joined" 3\.0 s\n {8}the app did not update/,
  );
  t.match(plain, /expected {2}message msg_1 changed/);
  t.match(plain, /happened {2}it is unchanged/);
  t.match(
    plain,
    /the call {2}block-interaction join \(MESSAGE\) → http:\/\/127\.0\.0\.1:2\/blocks: acked \(200\) in 3 ms/,
  );
  t.match(plain, /\| join: Owner/);
  t.match(plain, /- click "Skip" \(an earlier step failed\)/);
  t.match(testText(new Chalk({ level: 1 }), must(must(result.suites[0]).tests[1])), /\u001b\[31m/, 'red on a terminal');
  let out = '';
  prettyReporter(new Chalk({ level: 0 }), (s) => (out += s)).end(result);
  t.equal(out, '\n1 passed, 1 failed, 1 skipped (2 left out by --grep) in 4.2 s\n');
});

t.test('pretty: a call answered 403 says so, and the offline message as what the user saw because of it', async (t) => {
  const failed: TestResult = {
    name: 'refused',
    status: 'failed',
    durationMs: 5,
    steps: [
      {
        index: 0,
        title: 'say /go',
        status: 'failed',
        durationMs: 5,
        failure: {
          message: 'the app answered 403 to /go: the user was shown its offline message',
          call: {
            id: 'dlv_2',
            kind: 'slash-command',
            subject: '/go',
            target: 'http://127.0.0.1:2/slash',
            outcome: 'signature_rejected',
            status: 403,
            latencyMs: 2,
            shown: 'Go is not running',
            shownFrom: 'offlineMessage',
            request: {},
            answer: { message: 'Invalid signature' },
          },
        },
      },
    ],
  };
  const plain = testText(new Chalk({ level: 0 }), failed);
  t.match(
    plain,
    /the call {2}slash-command \/go → http:\/\/127\.0\.0\.1:2\/slash: answered 403 \(signature_rejected\) in 2 ms/,
  );
  t.match(plain, /  shown {3}"Go is not running", the app's offline message, shown because the call failed/);
  const acked = structuredClone(failed);
  Object.assign(must(must(acked.steps[0]).failure).call ?? {}, {
    outcome: 'acked',
    status: 200,
    shown: 'on it',
    shownFrom: 'app',
  });
  const own = testText(new Chalk({ level: 0 }), acked);
  t.match(own, /: acked \(200\) in 2 ms/);
  t.match(own, /  shown {3}"on it"\n/, "the app's own words, as they are");
});
