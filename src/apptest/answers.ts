/**
 * How the app answered a call, in words a CI log can be read by, and the rule that an action's
 * call must be answered: a call the app did not acknowledge in time, answered with a status that
 * is not 2xx, or could not be reached is one the platform gives up on, showing the user the app's
 * offline message instead. The user saw a failure, so the action fails with it, whatever the
 * steps after it expect; only a step right after it that is about that answer (`ack`, `nack`,
 * `answered`, `modal`, `options`, `no-failed-deliveries`) judges it instead, in its own words.
 */
import type { Delivery } from './api.js';
import { shownFrom, StepFailed, type TestContext } from './context.js';

const quote = (s: string | undefined) => JSON.stringify(s ?? '');

/** The expectations that are about the last call's answer. */
const ABOUT_THE_ANSWER = new Set(['answered', 'ack', 'nack', 'modal', 'options', 'no-failed-deliveries']);

/** "/standup", "block-interaction standup_join (MESSAGE)": the call as a person who wrote the suite knows it. */
const callName = (d: Delivery) =>
  d.kind === 'slash-command' && d.subject ? d.subject : `${d.kind}${d.subject ? ` ${d.subject}` : ''}`;

/** "within 3000 ms": the budget the daemon gave the app, as its timeout says it; else "in time". */
function inTime(d: Delivery): string {
  const ms = /within (\d+) ms/.exec(d.attempts.at(-1)?.error ?? '')?.[1];
  return ms ? `within ${ms} ms` : 'in time';
}

/** What the user was shown because the call failed, as a consequence: "; the user was shown …". */
function consequence(d: Delivery): string {
  return shownFrom(d) === 'offlineMessage'
    ? `; so the user was shown the app's offline message ${quote(d.ephemeralMessage)} instead`
    : '';
}

/** An answer in a few words: "acked (200) after 4 ms, showing …". */
export function answerText(d: Delivery): string {
  const last = d.attempts.at(-1);
  return `${d.outcome ?? 'no outcome'}${last?.status !== undefined ? ` (${last.status})` : ''}${last ? ` after ${last.latencyMs} ms` : ''}${d.ephemeralMessage ? `, showing ${quote(d.ephemeralMessage)}` : ''}${last?.error ? `: ${last.error}` : ''}`;
}

/** An outcome in words: what a person reading a CI log needs to know, the offline message shown as its consequence. */
export function whatHappened(d: Delivery): string {
  const last = d.attempts.at(-1);
  const took = last ? ` after ${last.latencyMs} ms` : '';
  switch (d.outcome) {
    case 'timeout':
      return `it did not answer ${inTime(d)} (timeout)${consequence(d)}`;
    case 'connection_error':
      return `it could not be reached (${last?.error ?? 'connection error'}): is it running?${consequence(d)}`;
    case 'no_connection':
      return `it has no socket-mode connection open${consequence(d)}`;
    case 'egress_denied':
      return `the daemon did not send it: ${last?.error ?? "the operator's egress policy refused the app's URL"}${consequence(d)}`;
    case 'signature_rejected':
      return `it answered 403${took}: it refused the request, usually its signature check (is it using this app's signing secret?)${consequence(d)}`;
    case 'redirect':
      return `it answered ${last?.status ?? '3xx'}${took}, a redirect, which the platform does not follow${consequence(d)}`;
    case 'http_error':
      return `it answered ${last?.status ?? 'an error'}${took}${last?.status !== undefined && last.status >= 400 ? ' without a message' : ''}${consequence(d)}`;
    case 'nacked':
      return shownFrom(d) === 'app'
        ? `it nacked (answered ${last?.status ?? 'an error'} with a message)${took}, showing ${quote(d.ephemeralMessage)}`
        : `it answered ${last?.status ?? 'an error'}${took} without a message${consequence(d)}`;
    default:
      return `it answered ${answerText(d)}`;
  }
}

/** The headline of a call the platform gave up on. */
function failedCall(d: Delivery): string {
  const last = d.attempts.at(-1);
  const what = callName(d);
  const shown = shownFrom(d) === 'offlineMessage' ? ': the user was shown its offline message' : '';
  switch (d.outcome) {
    case 'timeout':
      return `the app did not acknowledge ${what} ${inTime(d)}${shown}`;
    case 'connection_error':
    case 'no_connection':
    case 'egress_denied':
      return `${what} did not reach the app${shown}`;
    default:
      return `the app answered ${last?.status ?? 'an error'} to ${what}${shown}`;
  }
}

/**
 * The action's call `d` was not answered well: fail the action (the user saw the offline message), unless the next
 * step is about that answer.
 */
export function mustBeAnswered(ctx: TestContext, d: Delivery): void {
  if (d.kind === 'event' || d.state !== 'failed') return;
  // a refusal in the app's own words is an answer: `expect: nack` is about it
  if (d.outcome === 'nacked' && shownFrom(d) === 'app') return;
  const next = ctx.test.steps[ctx.stepIndex + 1];
  if (next && 'expect' in next && ABOUT_THE_ANSWER.has(next.expect)) return;
  throw new StepFailed(failedCall(d), {
    expected: `the app acknowledges ${callName(d)} (a 2xx answer) ${inTime(d)}`,
    happened: whatHappened(d),
    call: d,
  });
}
