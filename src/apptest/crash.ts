/**
 * A handler that crashed (docs/testing.md, "A crash fails the step"): an app can answer a call and then fail on it
 * (the official SDK answers an event with 200 before its handler runs), so an answer in time proves little. Where the
 * run started the app, the lines it printed since the test's first call are read for the signs of an uncaught error
 * or an unhandled rejection; one there fails the step, with those lines.
 */
import type { AppProcess } from './app-process.js';
import type { Failure } from './results.js';
import { must } from '../must.js';

/**
 * What an app prints when one of its handlers crashed, as Node and the official SDK print it:
 * - Node's own, for an error nobody caught: `Uncaught TypeError: …`, `[UnhandledPromiseRejection: …]`, and the
 *   `Node.js v20.x.y` line it ends the process with (after the stack of a plain `Error`);
 * - the SDK's, which keeps the process alive: `Unhandled error occurred { … error: TypeError: … }` (a handler that
 *   threw), `Uncaught Exception: …`, `Unhandled Rejection: …`, `Unhandled Axios Error: …`;
 * - a programming error printed anywhere: `TypeError: …`, `ReferenceError: …`, `RangeError: …`, `SyntaxError: …`.
 * An app's own `Error: …` in a log line is not a crash (it may be one it handled).
 */
const SIGNS: RegExp[] = [
  /\bUncaught\b/,
  /\bUnhandled ?(Promise ?)?Rejection\b/i,
  /\bUnhandled (error occurred|Axios Error|exception)\b/i,
  /\b(TypeError|ReferenceError|RangeError|SyntaxError)(?: \[[A-Z_]+\])?: /,
  /^Node\.js v\d+\.\d+\.\d+$/,
];

/** Lines shown around the first sign: Node prints the source line, a caret and the stack before its last line. */
const BEFORE = 20;
const AFTER = 25;

/** How long after a test's last call was answered its app may still print a crash that counts for the test. */
const SETTLE_MS = 200;

/** An error's own line, `TypeError: Cannot read …`, wherever it is printed (after a prefix, inside an object). */
const ERROR_LINE = /\b(?:[A-Z]\w*)?(?:Error|Exception|Rejection)\b(?: \[\w+\])?: .*/;

/**
 * The first sign of a crash in `lines`, with the lines around it and the line that says it best (the error's own, when
 * one is near: the SDK's sign is "Unhandled error occurred {", the error a few lines on); undefined when there is none.
 */
export function findCrash(lines: string[]): { headline: string; shown: string[] } | undefined {
  const at = lines.findIndex((l) => SIGNS.some((r) => r.test(l)));
  if (at < 0) return undefined;
  const from = Math.max(0, at - BEFORE);
  const shown = lines.slice(from, at + AFTER);
  // the nearest: from the sign on, else before it (Node's last line comes after the error's)
  const order = [...shown.slice(at - from), ...shown.slice(0, at - from).reverse()];
  const error = order.map((l) => ERROR_LINE.exec(l)?.[0]).find((l) => l !== undefined);
  return { headline: (error ?? must(lines[at])).trim(), shown };
}

/**
 * The crash the app printed since `mark` (a count of its lines, AppProcess.printed()), as a step's failure: what the
 * last action was, the sign, whether the app has ended, and its lines. `step`: the step's own failure, if it failed too
 * (the crash is likely why), kept as what happened.
 */
export function crashFailure(
  proc: AppProcess,
  mark: number,
  action: string | undefined,
  step?: Failure,
): Failure | undefined {
  const found = findCrash(proc.since(mark));
  if (!found) return undefined;
  const ended = proc.exit();
  const said = found.headline;
  return {
    kind: 'app-crashed',
    message: `the app crashed${action ? ` after ${action}` : ''}: ${said.length > 200 ? `${said.slice(0, 199)}…` : said}${ended ? ` (it has ended: ${ended})` : ''}`,
    expected: 'no uncaught error or unhandled rejection in what the app printed',
    ...(step ? { happened: `the step failed too: ${step.message}` } : {}),
    ...(step?.call ? { call: step.call } : {}),
    appOutput: found.shown,
  };
}

/**
 * Give the app the moment after its last answer to print a crash: until SETTLE_MS after `answeredAt`; then, when the
 * app's address is known, one request to it, answered by its event loop only after whatever that loop had queued when
 * the request came (a handler that throws right after its answer has printed by then: a write to a pipe is
 * synchronous), so a busy machine cannot push the crash into the next test; then the output already sent is read (a
 * turn of the event loop after the answer) before the caller looks. The request's own answer does not matter.
 */
export async function settle(answeredAt: number, appUrl?: string): Promise<void> {
  const left = answeredAt + SETTLE_MS - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
  if (appUrl) await roundTrip(appUrl);
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
}

/** One GET to the app's address, whatever it answers; gives up after PROBE_MS (an app that no longer answers). */
const PROBE_MS = 5000;
async function roundTrip(appUrl: string): Promise<void> {
  try {
    const res = await fetch(new URL('/', appUrl), { signal: AbortSignal.timeout(PROBE_MS) });
    await res.arrayBuffer();
  } catch {
    // refused, reset or timed out: the app's output is read as it is
  }
}
