/**
 * When a failed event is tried again (docs/protocol.md §5): which outcomes are worth another
 * try, the schedule of delays (configuration `deliveryRetrySchedule`, each ±20 % jitter), and
 * the longest an event can stay with the daemon (the socket-mode queue keeps events that long).
 */
import type { AttemptResult } from './types.js';

/** Jitter applied to each retry delay: ±20 %. */
const JITTER = 0.2;

/** Whether a failed event attempt is worth another try (410 Gone stops for good). */
export function retryable(r: AttemptResult): boolean {
  if (r.outcome === 'connection_error' || r.outcome === 'timeout' || r.outcome === 'no_connection') return true;
  if (r.status === 410) return false;
  return (
    (r.outcome === 'http_error' || r.outcome === 'nacked') &&
    r.status !== undefined &&
    (r.status >= 500 || r.status === 429)
  );
}

/** "1,5,30" → [1, 5, 30] (seconds). */
export function parseSchedule(spec: string): number[] {
  return spec
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isFinite(n) && n >= 0);
}

/** The delay before retry number `retryNum + 1`, jittered; undefined when the schedule has run out. */
export function nextRetryDelayMs(
  schedule: readonly number[],
  retryNum: number,
  random = Math.random,
): number | undefined {
  const base = schedule[retryNum];
  if (base === undefined) return undefined;
  return Math.round(base * 1000 * (1 - JITTER + random() * 2 * JITTER));
}

/**
 * The longest an event can stay with the daemon: every retry delay at its jittered maximum, plus each attempt's
 * timeout.
 */
export function retryHorizonMs(config: { deliveryRetrySchedule: string; deliveryEventTimeoutMs: number }): number {
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  return Math.ceil(
    schedule.reduce((sum, s) => sum + s * 1000 * (1 + JITTER), 0) +
      (schedule.length + 1) * config.deliveryEventTimeoutMs,
  );
}
