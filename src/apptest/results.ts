/** What a run found, as every reporter reads it (the json reporter prints it as it is). */
import { must } from '../must.js';

/** The call a failing step is about: what was sent to the app, and what it answered. */
export interface CallShown {
  id: string;
  kind: string;
  subject?: string;
  /** Where it went: the app's URL, or socket mode. */
  target?: string;
  outcome?: string;
  status?: number;
  latencyMs?: number;
  /** What the user was shown (the ack's or nack's message, the offline message). */
  shown?: string;
  /** Whose words `shown` are: the app's answer, or the offline message shown because the call failed. */
  shownFrom?: 'app' | 'offlineMessage';
  error?: string;
  /** The body sent. */
  request: unknown;
  /** What the app answered (its body, or an excerpt of it). */
  answer?: unknown;
}

export interface Failure {
  /** What kind of failure, where it is not the step's own: the app crashed (crash.ts). */
  kind?: 'app-crashed';
  /** One line: what went wrong. */
  message: string;
  expected?: string;
  happened?: string;
  call?: CallShown;
  /** The last lines the app printed before the failure. */
  appOutput?: string[];
}

type Status = 'passed' | 'failed' | 'skipped';

export interface StepResult {
  index: number;
  title: string;
  status: Status;
  durationMs: number;
  failure?: Failure;
  /** Why it did not run (an earlier step failed, --bail, the run was stopped). */
  skipReason?: string;
}

export interface TestResult {
  name: string;
  status: Status;
  durationMs: number;
  steps: StepResult[];
  /** A test that failed outside its steps (the app never became ready, its channel could not be made). */
  failure?: Failure;
  skipReason?: string;
  /** The channel it ran in. */
  channel?: string;
}

export interface SuiteResult {
  file: string;
  name: string;
  /** The app (no id nor name when the setup failed before it was registered or found). */
  app?: { id?: string; name?: string; started?: string; ready?: string };
  tests: TestResult[];
  durationMs: number;
  startedAt: string;
  /** What the app printed in all (the last lines), for reports that keep it. */
  appOutput?: string[];
}

export interface RunResult {
  passed: boolean;
  counts: { tests: number; passed: number; failed: number; skipped: number };
  durationMs: number;
  startedAt: string;
  daemon: { url: string; own: boolean };
  suites: SuiteResult[];
  /** Tests left out by --grep. */
  filteredOut: number;
}

export function countsOf(suites: SuiteResult[]): RunResult['counts'] {
  const tests = suites.flatMap((s) => s.tests);
  return {
    tests: tests.length,
    passed: tests.filter((t) => t.status === 'passed').length,
    failed: tests.filter((t) => t.status === 'failed').length,
    skipped: tests.filter((t) => t.status === 'skipped').length,
  };
}

/** The first failure of a test: its own, else its failing step's. */
export function failureOf(t: TestResult): { step?: StepResult; failure: Failure } | undefined {
  if (t.failure) return { failure: t.failure };
  const step = t.steps.find((s) => s.status === 'failed' && s.failure);
  return step ? { step, failure: must(step.failure) } : undefined;
}

/**
 * How a call ended, in words: "acked (200) in 1.4 ms", "timeout in 3000 ms"; an answer that is
 * not a 2xx says so first: "answered 403 (signature_rejected) in 2 ms".
 */
export function callOutcome(c: CallShown): string {
  const took = c.latencyMs !== undefined ? ` in ${c.latencyMs} ms` : '';
  if (c.status !== undefined && (c.status < 200 || c.status > 299))
    return `answered ${c.status} (${c.outcome ?? 'no outcome'})${took}`;
  return `${c.outcome ?? 'no outcome'}${c.status !== undefined ? ` (${c.status})` : ''}${took}`;
}

/** What the user was shown, and, when it is the offline message, that the call failing is why. */
export function shownText(c: CallShown): string {
  return c.shownFrom === 'offlineMessage'
    ? `${JSON.stringify(c.shown)}, the app's offline message, shown because the call failed`
    : JSON.stringify(c.shown);
}

/** A failure as plain text: what JUnit's failure element, TAP's diagnostics and the terminal show. */
export function failureText(f: Failure, step?: StepResult): string {
  const lines: string[] = [];
  if (step) lines.push(`step ${step.index + 1}: ${step.title}`);
  lines.push(f.message);
  if (f.expected) lines.push(`expected: ${f.expected}`);
  if (f.happened) lines.push(`happened: ${f.happened}`);
  if (f.call) {
    const c = f.call;
    lines.push(
      `the call: ${c.kind}${c.subject ? ` ${c.subject}` : ''} (${c.id}) → ${c.target ?? '?'}: ${callOutcome(c)}`,
    );
    if (c.shown) lines.push(`  shown to the user: ${shownText(c)}`);
    if (c.error) lines.push(`  error: ${c.error}`);
    lines.push(`  sent: ${JSON.stringify(c.request)}`);
    if (c.answer !== undefined)
      lines.push(`  answer: ${typeof c.answer === 'string' ? c.answer : JSON.stringify(c.answer)}`);
  }
  if (f.appOutput?.length)
    lines.push(`the app printed (last ${f.appOutput.length} lines):`, ...f.appOutput.map((l) => `  | ${l}`));
  return lines.join('\n');
}
