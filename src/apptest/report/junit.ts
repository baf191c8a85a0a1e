/**
 * JUnit XML, as GitHub Actions' test reporters and GitLab's artifacts:reports:junit read it: one
 * testsuite per suite file, one testcase per test (classname: the suite), a failure element with
 * the failure's text (expected, happened, the call, the app's last lines), the steps and their
 * times in system-out, and a skipped element for a test that did not run.
 */
import path from 'node:path';
import { failureOf, failureText, type RunResult, type TestResult } from '../results.js';

/** Text for XML: escaped, and without the characters XML 1.0 cannot hold. */
const xml = (s: string) =>
  s
    .replace(/[^\u0009\u000A\u000D\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
const secs = (ms: number) => (ms / 1000).toFixed(3);

function testcase(t: TestResult, suite: string, file: string): string {
  const attrs = `name="${xml(t.name)}" classname="${xml(suite)}" time="${secs(t.durationMs)}" file="${xml(file)}"`;
  const steps = t.steps
    .map(
      (s) =>
        `${s.status === 'passed' ? 'ok' : s.status === 'failed' ? 'FAILED' : 'skipped'} ${s.index + 1}. ${s.title} (${s.durationMs} ms)${s.skipReason ? ` - ${s.skipReason}` : ''}`,
    )
    .join('\n');
  if (t.status === 'skipped')
    return `    <testcase ${attrs}>\n      <skipped message="${xml(t.skipReason ?? 'skipped')}"/>\n    </testcase>`;
  const f = failureOf(t);
  const failure = f
    ? `\n      <failure message="${xml(f.failure.message)}" type="${f.failure.kind === 'app-crashed' ? 'AppCrashed' : f.step ? 'StepFailed' : 'SetupFailed'}">${xml(failureText(f.failure, f.step))}</failure>`
    : '';
  return `    <testcase ${attrs}>${failure}\n      <system-out>${xml(steps)}</system-out>\n    </testcase>`;
}

export function junitReport(r: RunResult, cwd: string): string {
  const suites = r.suites.map((s) => {
    const failures = s.tests.filter((t) => t.status === 'failed').length;
    const skippedN = s.tests.filter((t) => t.status === 'skipped').length;
    const file = path.relative(cwd, s.file) || s.file;
    return `  <testsuite name="${xml(s.name)}" tests="${s.tests.length}" failures="${failures}" errors="0" skipped="${skippedN}" time="${secs(s.durationMs)}" timestamp="${s.startedAt.replace(/\.\d+Z$/, '')}" file="${xml(file)}">\n${s.tests.map((t) => testcase(t, s.name, file)).join('\n')}\n  </testsuite>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="appreg test" tests="${r.counts.tests}" failures="${r.counts.failed}" errors="0" skipped="${r.counts.skipped}" time="${secs(r.durationMs)}">\n${suites.join('\n')}\n</testsuites>\n`;
}
