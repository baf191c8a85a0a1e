/**
 * Issue 24: broken copies of the example app fail its suite, each with a message that says why,
 * in the JUnit report CI shows (read back with a JUnit parser): one that never acks /standup, one
 * that accepts unsigned requests, one whose buttons do nothing. And --bail: after the first
 * failure no other test starts.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'junit2json';
import { runMain } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';
import { must } from '../../src/must.js';

interface Case {
  name: string;
  failure?: Array<{ message?: string; inner?: string }>;
  skipped?: Array<{ message?: string }>;
  'system-out'?: string[];
}

/** A copy of the examples with one file of the standup app changed (the change must apply). */
function broken(file: string, from: string, to: string): string {
  const root = copyExamples();
  const f = path.join(root, 'examples/standup-app', file);
  const text = fs.readFileSync(f, 'utf8');
  if (!text.includes(from)) throw new Error(`${file} no longer holds the text this test breaks`);
  fs.writeFileSync(f, text.replace(from, to));
  return root;
}

/** `appreg test` of the copy's suite, its JUnit report read back: the testcases by name. */
async function junitOf(
  t: Tap.Test,
  root: string,
  extra: string[],
): Promise<{ code: number | null; cases: Map<string, Case>; stdout: string }> {
  const report = path.join(root, 'report.xml');
  const r = await runMain(['test', 'examples/standup-app', '--reporter', 'junit', '--output', report, ...extra], {
    cwd: root,
  });
  const parsed = (await parse(fs.readFileSync(report, 'utf8'))) as {
    tests?: number;
    failures?: number;
    testsuite?: Array<{ name: string; testcase?: Case[] }>;
  };
  t.equal(parsed.testsuite?.length, 1, 'one testsuite per suite file');
  t.equal(must(must(parsed.testsuite)[0]).name, 'Standup');
  const cases = new Map((must(must(parsed.testsuite)[0]).testcase ?? []).map((c) => [c.name, c]));
  t.match(r.stdout, /junit report written to report\.xml/, 'the terminal says where the report went');
  return { code: r.code, cases, stdout: r.stdout };
}

t.test('an app that never acks /standup', async (t) => {
  const root = broken(
    'standup.mjs',
    'if (!tokens[p.workspaceId]) return reply(notInstalled());\n      reply({});\n      const s = { topic',
    'if (!tokens[p.workspaceId]) return reply(notInstalled());\n      const s = { topic',
  );
  const { code, cases } = await junitOf(t, root, ['--grep', 'posts a standup']);
  t.equal(code, 6, 'exit 6: a test failed');
  const c = must(cases.get('/standup posts a standup with Join and Skip'));
  t.equal(c.failure?.length, 1, 'its testcase failed');
  t.match(must(must(c.failure)[0]).message, /the app did not ack/);
  t.match(
    must(must(c.failure)[0]).inner,
    /expected: an ack within 3000 ms\nhappened: it did not answer within 3000 ms \(timeout\); so the user was shown the app's offline message "Standup is not running: [^"]*" instead/,
    'expected and happened',
  );
  t.match(
    must(must(c.failure)[0]).inner,
    /the call: slash-command \/standup .* → http:\/\/127\.0\.0\.1:\d+\/slash: timeout/,
    'the call it is about',
  );
  t.match(
    must(must(c.failure)[0]).inner,
    /sent: \{"messageType":"SLASH_COMMAND","slashCommand":"\/standup","text":"Sprint 12"/,
    'what was sent',
  );
  t.match(
    must(must(c.failure)[0]).inner,
    /the app printed \(last \d+ lines\):\n {2}\| Standup \(app_/,
    "the app's last lines",
  );
  t.match(
    c['system-out']?.[0],
    /ok 1\. say \/standup Sprint 12 \(\d+ ms\)\nFAILED 2\. expect ack/,
    'the steps and their times',
  );
});

t.test('an app that accepts a request that is not signed', async (t) => {
  const root = broken(
    'app.mjs',
    "if (!signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });",
    '',
  );
  const { code, cases } = await junitOf(t, root, ['--grep', 'not properly signed']);
  t.equal(code, 6);
  const c = must(cases.get('calls that are not properly signed are refused'));
  t.match(
    must(must(c.failure)[0]).message,
    /the app accepted a slash-command request with a wrong signature and no signature: it does not check the signature/,
  );
  t.match(must(must(c.failure)[0]).inner, /happened: wrong signature: ACCEPTED \(200\); unsigned: ACCEPTED \(200\)/);
});

t.test('an app whose buttons do nothing', async (t) => {
  const root = broken(
    'standup.mjs',
    '      reply({});\n      if (!standups.has(p.sourceId))',
    '      return reply({});\n      if (!standups.has(p.sourceId))',
  );
  const { code, cases } = await junitOf(t, root, ['--grep', 'Join and Skip update']);
  t.equal(code, 6);
  const c = must(cases.get('Join and Skip update the standup, for whoever clicks'));
  t.match(must(must(c.failure)[0]).message, /the app did not update the message within 3000 ms/);
  t.match(
    must(must(c.failure)[0]).inner,
    /step 5: expect updated "joined Owner; skipped nobody yet"/,
    'the failing step',
  );
  t.match(
    must(must(c.failure)[0]).inner,
    /happened: it is unchanged: it reads "Sprint 13: joined nobody yet; skipped nobody yet" \[Join, Skip\]/,
  );
  t.match(
    must(must(c.failure)[0]).inner,
    /the call: block-interaction standup_join \(MESSAGE\) .*: acked/,
    'the click it was about, acked',
  );
  t.match(
    c['system-out']?.[0],
    /skipped 6\. click onAction standup_skip on \$\{standup\} as dev \(0 ms\) - an earlier step failed/,
    'the steps after it did not run',
  );
});

t.test('an app that ends after it was ready: the setup failure says so, with how it ended', async (t) => {
  // its redirect page is the first thing asked of it: it ends there, printing nothing more
  const root = broken(
    'app.mjs',
    'const server = http.createServer(async (req, res) => {\n',
    'const server = http.createServer(async (req, res) => {\n  process.exit(7);\n',
  );
  const { code, cases } = await junitOf(t, root, ['--grep', 'not properly signed']);
  t.equal(code, 6);
  const c = must(cases.get('calls that are not properly signed are refused'));
  t.match(
    must(must(c.failure)[0]).message,
    /authorized the app, but it did not exchange the code .*; the app has ended \(exit code 7\)/,
  );
});

t.test('--bail: after the first failure no other test starts', async (t) => {
  const root = broken(
    'app.mjs',
    "if (!signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });",
    '',
  );
  const { code, cases } = await junitOf(t, root, ['--bail']);
  t.equal(code, 6);
  t.ok(must(cases.get('calls that are not properly signed are refused')).failure, 'the first test failed');
  const rest = [...cases.values()].slice(1);
  t.ok(rest.length >= 6);
  t.ok(
    rest.every((c) => c.skipped?.[0]?.message === 'not run: --bail after a failure'),
    'every other test is reported as not run',
  );
});
