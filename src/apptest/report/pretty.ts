/**
 * The report for people (a terminal or a CI log): each test as it ends, with its steps and their
 * times; a failing step with what was expected, what happened, the call it is about (what was sent,
 * what the app answered) and the app's last lines; the counts at the end. Colour only when the
 * output is a terminal and NO_COLOR is not set (the caller's chalk says).
 */
import type { ChalkInstance } from 'chalk';
import type { Reporter } from '../runner.js';
import { callOutcome, shownText, type Failure, type RunResult, type StepResult, type TestResult } from '../results.js';

const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${n} ms`);
const json = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
const cut = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function failureLines(c: ChalkInstance, f: Failure, indent: string): string[] {
  const out: string[] = [`${indent}${c.red(f.message)}`];
  const row = (k: string, v: string) => out.push(`${indent}${c.bold(k.padEnd(9))} ${v}`);
  if (f.expected) row('expected', f.expected);
  if (f.happened) row('happened', f.happened);
  if (f.call) {
    const x = f.call;
    row(
      'the call',
      `${x.kind}${x.subject ? ` ${x.subject}` : ''} → ${x.target ?? '?'}: ${callOutcome(x)} ${c.dim(x.id)}`,
    );
    if (x.shown) row('  shown', shownText(x));
    if (x.error) row('  error', x.error);
    row('  sent', cut(json(x.request)));
    if (x.answer !== undefined) row('  answer', cut(json(x.answer)));
  }
  if (f.appOutput?.length) {
    out.push(`${indent}${c.bold(`the app printed (last ${f.appOutput.length} lines):`)}`);
    for (const l of f.appOutput) out.push(`${indent}  ${c.dim('|')} ${l}`);
  }
  return out;
}

function stepLine(c: ChalkInstance, s: StepResult): string {
  if (s.status === 'passed') return `    ${c.green('✓')} ${s.title} ${c.dim(ms(s.durationMs))}`;
  if (s.status === 'failed') return `    ${c.red('✗')} ${s.title} ${c.dim(ms(s.durationMs))}`;
  return `    ${c.dim(`- ${s.title}${s.skipReason ? ` (${s.skipReason})` : ''}`)}`;
}

export function testText(c: ChalkInstance, t: TestResult): string {
  if (t.status === 'skipped')
    return `  ${c.yellow('-')} ${t.name} ${c.dim(`(skipped${t.skipReason ? `: ${t.skipReason}` : ''})`)}`;
  const mark = t.status === 'passed' ? c.green('✓') : c.red('✗');
  const lines = [`  ${mark} ${c.bold(t.name)} ${c.dim(ms(t.durationMs))}`];
  if (t.failure) lines.push(...failureLines(c, t.failure, '      '));
  else {
    for (const s of t.steps) {
      lines.push(stepLine(c, s));
      if (s.failure) lines.push(...failureLines(c, s.failure, '        '));
    }
  }
  return lines.join('\n');
}

function summaryText(c: ChalkInstance, r: RunResult): string {
  const { counts } = r;
  const parts = [
    counts.failed
      ? c.red(`${counts.passed} passed, ${counts.failed} failed`)
      : c.green(`${counts.passed} passed, ${counts.failed} failed`),
    `${counts.skipped} skipped`,
  ];
  const more = r.filteredOut ? c.dim(` (${r.filteredOut} left out by --grep)`) : '';
  return `${parts.join(', ')}${more} ${c.dim(`in ${ms(r.durationMs)}`)}`;
}

/** The pretty reporter, writing as tests end. */
export function prettyReporter(c: ChalkInstance, write: (s: string) => void): Reporter & { end(r: RunResult): void } {
  return {
    suiteStart(suite, info) {
      const app = info.app?.started
        ? c.dim(
            `  app ${info.app.name ?? ''} ${info.app.id ?? ''}: ${info.app.started}${info.app.ready ? `, ready in ${info.app.ready}` : ''}`,
          )
        : '';
      write(
        `${c.bold(suite.name)} ${c.dim(`(${suite.file}, ${info.tests} test${info.tests === 1 ? '' : 's'})`)}\n${app ? `${app}\n` : ''}`,
      );
    },
    testEnd: (_suite, t) => write(testText(c, t) + '\n'),
    end: (r) => write(`\n${summaryText(c, r)}\n`),
  };
}
