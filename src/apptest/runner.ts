/**
 * A run of suites: each suite's app set up once, its tests run (up to --jobs at a time, each in a
 * channel of its own), then everything torn down. A test stops at its first failing step; --bail
 * stops starting tests after the first failure; --grep keeps the tests whose "suite › test" name
 * matches. Reporters hear of each test as it ends and get the whole run at the end.
 */
import { CliError } from '../client/exit.js';
import type { Api } from './api.js';
import { runAction } from './actions.js';
import { StepFailed, TestContext, type SuiteEnv } from './context.js';
import { crashFailure, settle } from './crash.js';
import { runExpectation } from './expectations.js';
import { RefError } from './refs.js';
import { countsOf, type RunResult, type StepResult, type SuiteResult, type TestResult } from './results.js';
import { setUpSuite } from './setup.js';
import type { Suite, TestSpec } from './suite.js';
import { stepTitle } from './titles.js';
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';

export interface Reporter {
  suiteStart?(suite: Suite, info: { app?: SuiteResult['app']; tests: number }): void;
  testEnd?(suite: Suite, test: TestResult): void;
  suiteEnd?(suite: Suite, result: SuiteResult): void;
}

export interface RunOptions {
  api: Api;
  daemon: { url: string; own: boolean };
  env: Readonly<Record<string, string | undefined>>;
  jobs: number;
  bail: boolean;
  grep?: RegExp;
  /** Set when the run is asked to stop (Ctrl-C): no further test starts. */
  stopped(): boolean;
  reporter: Reporter;
}

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

/** One test in its own channel; a step that fails ends it, the steps after it are skipped. */
async function runTest(env: SuiteEnv, test: TestSpec, n: number, ownDaemon: boolean): Promise<TestResult> {
  const t0 = Date.now();
  const steps: StepResult[] = test.steps.map((s, index) => ({
    index,
    title: stepTitle(s),
    status: 'skipped',
    durationMs: 0,
  }));
  let channel: { id: string; name: string };
  try {
    channel = (
      await env.api.createChannel(`${`t${env.run.id}-${n}-${slug(test.name)}`.slice(0, 80).replace(/-+$/, '')}`)
    ).channel;
  } catch (e) {
    return {
      name: test.name,
      status: 'failed',
      durationMs: Date.now() - t0,
      steps,
      failure: { message: `the test's channel could not be made: ${messageOf(e)}` },
    };
  }
  const ctx = new TestContext(env, test, channel.id, channel.name);
  let failed = false;
  for (const [i, raw] of test.steps.entries()) {
    const r = must(steps[i]);
    if (failed) {
      r.skipReason = 'an earlier step failed';
      continue;
    }
    const s0 = Date.now();
    ctx.stepIndex = i;
    ctx.stepMs = undefined;
    try {
      const step = ctx.resolve(raw);
      const out = await ('expect' in step ? runExpectation(ctx, step) : runAction(ctx, step));
      if (typeof step.save === 'string') ctx.saved.set(step.save, out);
      r.status = 'passed';
    } catch (e) {
      if (!(e instanceof StepFailed || e instanceof RefError || e instanceof CliError)) throw e;
      r.status = 'failed';
      r.failure = ctx.failure(e instanceof StepFailed ? e : new StepFailed(e.message));
      failed = true;
    }
    // a step about the app's answer shows how long the app took to answer, not how long the check took
    r.durationMs = ctx.stepMs ?? Date.now() - s0;
    // the app it started printed a crash: the step fails with it (the last one once the app had its moment)
    if (env.proc && ctx.printedAtFirstAction !== undefined) {
      if (i === test.steps.length - 1 && !failed) await settle(Math.max(ctx.calledAt, ctx.actionAt), env.app.url);
      const crash = crashFailure(env.proc, ctx.printedAtFirstAction, ctx.lastActionTitle, r.failure);
      if (crash) [r.status, r.failure, failed] = ['failed', crash, true];
    }
  }
  // the run's own daemon goes with its store; on a shared daemon the channel is deleted with its messages
  if (!ownDaemon) await env.api.deleteChannel(channel.id).catch(() => undefined);
  return {
    name: test.name,
    status: failed ? 'failed' : 'passed',
    durationMs: Date.now() - t0,
    steps,
    channel: channel.name,
  };
}

/** The time a test takes at least: the budgets its no-message steps wait out in full. */
function leastTime(test: TestSpec, suite: Suite): number {
  return test.steps.reduce(
    (sum, s) =>
      'expect' in s && s.expect === 'no-message'
        ? sum + (s.within ?? test.within ?? suite.defaults.within ?? 3000)
        : sum,
    0,
  );
}

/**
 * The order tests start in: the suite's, one at a time; side by side, those that must wait
 * longest first (in the suite's order among equals), so that they do not end the run alone.
 */
export function startOrder(tests: TestSpec[], suite: Suite, jobs: number): TestSpec[] {
  return jobs > 1 ? [...tests].sort((a, b) => leastTime(b, suite) - leastTime(a, suite)) : tests;
}

const skipped = (test: TestSpec, reason: string): TestResult => ({
  name: test.name,
  status: 'skipped',
  durationMs: 0,
  skipReason: reason,
  steps: test.steps.map((s, index) => ({ index, title: stepTitle(s), status: 'skipped', durationMs: 0 })),
});

export async function runSuites(suites: Suite[], o: RunOptions): Promise<RunResult> {
  const t0 = Date.now();
  const startedAt = new Date().toISOString();
  const runId = Math.random().toString(36).slice(2, 8);
  const results: SuiteResult[] = [];
  let filteredOut = 0;
  let bailed = false;
  for (const suite of suites) {
    const tests = suite.tests.filter((t) => !o.grep || o.grep.test(`${suite.name} › ${t.name}`));
    filteredOut += suite.tests.length - tests.length;
    if (!tests.length) continue;
    const s0 = Date.now();
    const result: SuiteResult = {
      file: suite.file,
      name: suite.name,
      tests: [],
      durationMs: 0,
      startedAt: new Date().toISOString(),
    };
    results.push(result);
    const byIndex = new Map<TestSpec, TestResult>();
    const toRun = tests.filter((t) => {
      if (t.skip) byIndex.set(t, skipped(t, typeof t.skip === 'string' ? t.skip : 'skip: true'));
      else if (bailed || o.stopped())
        byIndex.set(t, skipped(t, bailed ? 'not run: --bail after a failure' : 'not run: the run was stopped'));
      return !byIndex.has(t);
    });
    const setup = toRun.length
      ? await setUpSuite({ api: o.api, suite, daemonUrl: o.daemon.url, runId, env: o.env, ownDaemon: o.daemon.own })
      : undefined;
    try {
      if (setup)
        result.app = { id: setup.env.app?.id, name: setup.env.app?.name, started: setup.started, ready: setup.ready };
      o.reporter.suiteStart?.(suite, { app: result.app, tests: tests.length });
      for (const t of tests) if (byIndex.has(t)) o.reporter.testEnd?.(suite, must(byIndex.get(t)));
      if (setup?.failed) {
        for (const t of toRun) {
          const r: TestResult = {
            ...skipped(t, ''),
            status: 'failed',
            skipReason: undefined,
            failure: {
              message: setup.failed.message,
              ...(setup.failed.appOutput?.length ? { appOutput: setup.failed.appOutput } : {}),
            },
          };
          byIndex.set(t, r);
          o.reporter.testEnd?.(suite, r);
        }
        if (o.bail) bailed = true;
      } else if (setup) {
        const env = must(setup.run, 'the run of a suite set up');
        const queue = startOrder(toRun, suite, o.jobs).map((t) => ({ t, n: suite.tests.indexOf(t) }));
        const worker = async () => {
          for (let next = queue.shift(); next; next = queue.shift()) {
            let r: TestResult;
            if (bailed || o.stopped())
              r = skipped(next.t, bailed ? 'not run: --bail after a failure' : 'not run: the run was stopped');
            else {
              r = await runTest(env, next.t, next.n, o.daemon.own);
              if (r.status === 'failed' && o.bail) bailed = true;
            }
            byIndex.set(next.t, r);
            o.reporter.testEnd?.(suite, r);
          }
        };
        await Promise.all(Array.from({ length: Math.max(1, Math.min(o.jobs, queue.length)) }, worker));
      }
      result.appOutput = setup?.env.proc?.lines().slice(-200);
    } finally {
      await setup?.teardown();
    }
    result.tests = tests.map((t) => must(byIndex.get(t)));
    result.durationMs = Date.now() - s0;
    o.reporter.suiteEnd?.(suite, result);
  }
  const counts = countsOf(results);
  return {
    passed: counts.failed === 0,
    counts,
    durationMs: Date.now() - t0,
    startedAt,
    daemon: o.daemon,
    suites: results,
    filteredOut,
  };
}
