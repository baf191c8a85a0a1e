/**
 * TAP version 14: one test point per test ("suite › test"), a skipped one with # SKIP, and for a
 * failing one a YAML block with the failing step, what was expected, what happened, the call and
 * the app's last lines.
 */
import { failureOf, type RunResult } from '../results.js';

/** A YAML scalar that holds any text: a block literal for several lines, a quoted string for one. */
const scalar = (s: string, indent: string) =>
  s.includes('\n')
    ? `|-\n${s
        .split('\n')
        .map((l) => `${indent}  ${l}`)
        .join('\n')}`
    : JSON.stringify(s);
const desc = (s: string) => s.replace(/#/g, '\\#').replace(/\n/g, ' ');

export function tapReport(r: RunResult): string {
  const tests = r.suites.flatMap((s) => s.tests.map((t) => ({ s, t })));
  const lines = ['TAP version 14', `1..${tests.length}`];
  tests.forEach(({ s, t }, i) => {
    const name = desc(`${s.name} › ${t.name}`);
    if (t.status === 'skipped')
      return void lines.push(`ok ${i + 1} - ${name} # SKIP ${desc(t.skipReason ?? '')}`.trimEnd());
    if (t.status === 'passed') return void lines.push(`ok ${i + 1} - ${name} # time=${t.durationMs}ms`);
    lines.push(`not ok ${i + 1} - ${name} # time=${t.durationMs}ms`);
    const f = failureOf(t);
    if (!f) return;
    const y = ['  ---', `  message: ${scalar(f.failure.message, '  ')}`];
    if (f.step) y.push(`  step: ${scalar(`${f.step.index + 1}. ${f.step.title}`, '  ')}`);
    if (f.failure.expected) y.push(`  expected: ${scalar(f.failure.expected, '  ')}`);
    if (f.failure.happened) y.push(`  happened: ${scalar(f.failure.happened, '  ')}`);
    if (f.failure.call) y.push(`  call: ${scalar(JSON.stringify(f.failure.call), '  ')}`);
    if (f.failure.appOutput?.length) y.push(`  appOutput: ${scalar(f.failure.appOutput.join('\n'), '  ')}`);
    y.push(`  file: ${scalar(s.file, '  ')}`, '  ...');
    lines.push(...y);
  });
  lines.push(`# ${r.counts.passed} passed, ${r.counts.failed} failed, ${r.counts.skipped} skipped`);
  return lines.join('\n') + '\n';
}
