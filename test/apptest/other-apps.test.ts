/**
 * Issue 34, point 2: `appreg test --url` on a daemon where another app has the same command (the
 * README quickstart's Standup, installed, beside the copy the suite registers). What the run's
 * users type reaches the app under test only, so the example's suite passes there; and when an
 * expectation fails, each message it lists names who posted it, another app included.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { startExample } from '../helpers/example-app.js';
import type { RunResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

t.test('the quickstart app installed beside the suite: the commands reach the app under test', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  // the quickstart: the example app created, running, and authorized by the owner
  const other = await startExample(t, d, 'standup-app');
  const authorized = await other.cli(['authorize', other.appId, '--follow', '--json']);
  t.equal(authorized.code, 0, authorized.stderr);
  const root = path.resolve(other.dir, '../..');
  const run = (args: string[]) =>
    runMain(['test', 'examples/standup-app', '--url', d.url, '--token', d.token, '--reporter', 'json', ...args], {
      cwd: root,
    });

  await t.test('the example suite passes, every test of it', async (t) => {
    const r = await run([]);
    const result = JSON.parse(r.stdout) as RunResult;
    t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stdout.slice(0, 4000));
    t.match(result.counts, { tests: 8, passed: 8, failed: 0 });
    t.notMatch(other.out(), /\/standup: posted standup/, "the quickstart's app got none of the suite's commands");
  });

  await t.test('a failure lists who posted each message: another app, and the app under test', async (t) => {
    // the copy under test no longer answers a mention; the quickstart's app still does, in the same thread
    const standup = path.join(root, 'examples/standup-app/standup.mjs');
    const text = fs.readFileSync(standup, 'utf8');
    const from = 'if (!bot || m.aId === bot.botId || !/@standup\\b/i.test(m.tx)) return;';
    t.ok(text.includes(from), 'standup.mjs still holds the line this test changes');
    fs.writeFileSync(standup, text.replace(from, 'return;'));
    t.teardown(() => fs.writeFileSync(standup, text));
    const r = await run(['--grep', 'mentions the app']);
    t.equal(r.code, 6, 'exit 6: a test failed');
    const result = JSON.parse(r.stdout) as RunResult;
    const suite = must(result.suites[0]);
    const underTest = must(suite.app).id;
    const step = must(must(suite.tests[0]).steps.find((s) => s.status === 'failed'));
    t.match(step.title, /expect message .*Type \/standup/);
    const f = must(step.failure);
    t.match(
      f.message,
      `the app posted no such message within 3000 ms; another app did: Standup (${other.appId})`,
      'the headline says another app posted it, and which',
    );
    t.match(
      f.happened,
      new RegExp(
        `none like that from Standup \\(${underTest}\\), the app under test: .*"Here! Type /standup.*" \\(in a thread\\) by Standup \\(${other.appId}\\), another app`,
      ),
      'each message names who posted it',
    );
    t.not(underTest, other.appId);
  });
});
