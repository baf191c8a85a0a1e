/**
 * A delivery for the terminal: its summary, what was sent and answered, and its attempts (deliver-test and
 * deliveries).
 */
import { kv, table, type Out } from './output.js';
import type { Attempt, Delivery } from '../client/delivery.js';

export function attemptsTable(c: Out['c'], attempts: Attempt[]): string {
  // A replay (deliveries replay) is marked: it is not one of the schedule's retries.
  return table(
    c,
    ['#', 'AT', 'OUTCOME', 'STATUS', 'LATENCY', 'DETAIL'],
    attempts.map((a) => [
      a.replay ? `${a.retryNum} (replay)` : String(a.retryNum),
      a.at,
      a.outcome,
      a.status === undefined ? '-' : String(a.status),
      `${a.latencyMs} ms`,
      a.message ?? a.error ?? '',
    ]),
  );
}

export function describe(c: Out['c'], d: Delivery): string {
  const last = d.attempts.at(-1);
  const rows: Array<[string, unknown]> = [
    ['delivery', d.id],
    ['kind', d.kind],
    ['app', `${d.appName} (${d.appId})`],
    ['target', d.transport === 'socket' ? 'socket mode' : d.url],
    ['state', d.state === 'cancelled' && d.cancelReason ? `cancelled (${d.cancelReason})` : d.state],
    ['outcome', d.outcome],
    ['status', last?.status ?? '-'],
    ['latency', last ? `${last.latencyMs} ms` : '-'],
  ];
  if (d.ephemeralMessage) rows.push(['shown to the user', d.ephemeralMessage]);
  // A next attempt exists only while the schedule still holds one.
  if (d.state === 'retrying' && d.nextAttemptAt) rows.push(['next attempt', d.nextAttemptAt]);
  if (last?.error) rows.push(['error', last.error]);
  let s = kv(c, rows);
  // The log keeps no payload for a trigger the app answered well: after a restart it reads back null.
  s += `\n${c.bold('sent')}\n${d.payload === null || d.payload === undefined ? c.dim('(payload not kept: a trigger that succeeded is logged without it)') : JSON.stringify(d.payload, null, 2)}`;
  if (d.response !== undefined)
    s += `\n${c.bold('answer')}\n${typeof d.response === 'string' ? d.response : JSON.stringify(d.response, null, 2)}`;
  else if (last?.excerpt) s += `\n${c.bold('answer')}\n${last.excerpt}`;
  if (d.attempts.length > 1) s += `\n${c.bold('attempts')}\n${attemptsTable(c, d.attempts)}`;
  return s;
}
