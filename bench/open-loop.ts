/**
 * An open-loop load generator, as wrk2 and k6's constant-arrival-rate run one: request i is due at
 * t0 + i / rate whether or not earlier ones were answered, so a slow answer cannot hold back the
 * requests behind it and hide the wait it causes. A timer sends the backlog it owes at each tick
 * (Node's timers are too coarse for one per request), and each latency is counted from the
 * request's *scheduled* time, not from when the timer got round to sending it: a tick that comes
 * late (a busy event loop) counts against the system, as wrk2's coordinated-omission correction
 * does. A run whose answers fall behind the schedule is *saturated*: its achieved rate is short of
 * the offered one, and its percentiles describe a queue that grows with the run's length, not a
 * latency, so it is reported as saturated rather than by its p99.
 */
import type { Clock } from '../src/clock.js';
import { percentile } from './lib.js';
import type { Figures, FigureSpec } from './sides.js';

export interface OpenLoopOptions {
  /** Offered rate: requests per second, on schedule. */
  rate: number;
  /** How long the schedule runs (s); rate × seconds requests in all. */
  seconds: number;
  /** The scheduler's tick (ms, default 1): each tick sends every request due by then. */
  tickMs?: number;
  /** After the last send, how long answers are waited for (ms, default 10,000); those still out are lost. */
  drainMs?: number;
  /** The run is saturated below this share of the offered rate (default 0.95). */
  saturatedBelow?: number;
  /** Time and the tick's timer: the monotonic clock in a benchmark (monotonicClock), a test clock in tests. */
  clock?: Clock;
}

export interface OpenLoopResult {
  offeredRps: number;
  /** Answers (successful or not) per second from the first scheduled send to the last answer. */
  achievedRps: number;
  sent: number;
  answered: number;
  /** Answered, but not as the request wanted (its function resolved false or threw). */
  errors: number;
  /** Sent and never answered within drainMs. */
  lost: number;
  saturated: boolean;
  /** Latency from the scheduled send to the answer (ms), over the answered requests. */
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** The latest a send went out after its scheduled time (ms): how far the scheduler itself fell behind. */
  maxSendLagMs: number;
  /** From the first scheduled send to the last answer (s). */
  seconds: number;
}

/** performance.now() and the runtime's timers: the sub-millisecond clock a benchmark's latencies need. */
export const monotonicClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};

const r2 = (x: number) => Math.round(x * 100) / 100;

/** The summary of a run's latencies (ms from schedule) and counts; `latencies` is sorted in place. */
export function summarize(
  latencies: number[],
  c: { offeredRps: number; sent: number; errors: number; lost: number; spanMs: number; maxSendLagMs: number },
  saturatedBelow = 0.95,
): OpenLoopResult {
  latencies.sort((a, b) => a - b);
  const answered = latencies.length;
  const achievedRps = c.spanMs > 0 ? (answered * 1000) / c.spanMs : 0;
  return {
    offeredRps: c.offeredRps,
    achievedRps: Math.round(achievedRps),
    sent: c.sent,
    answered,
    errors: c.errors,
    lost: c.lost,
    saturated: c.lost > 0 || achievedRps < saturatedBelow * c.offeredRps,
    p50: r2(percentile(latencies, 50)),
    p99: r2(percentile(latencies, 99)),
    p999: r2(percentile(latencies, 99.9)),
    max: r2(latencies.at(-1) ?? NaN),
    maxSendLagMs: r2(c.maxSendLagMs),
    seconds: r2(c.spanMs / 1000),
  };
}

/** Send `send(i)` at `rate` per second for `seconds`, on schedule whatever the answers; see the module's comment. */
export function openLoop(send: (i: number) => Promise<boolean>, o: OpenLoopOptions): Promise<OpenLoopResult> {
  const clock = o.clock ?? monotonicClock;
  if (!(o.rate > 0) || !(o.seconds > 0)) throw new Error(`an open loop needs a positive rate and length`);
  const total = Math.max(1, Math.round(o.rate * o.seconds));
  const interval = 1000 / o.rate;
  const latencies: number[] = [];
  let sent = 0;
  let pending = 0;
  let errors = 0;
  let maxSendLagMs = 0;
  const t0 = clock.now();
  let last = t0;
  return new Promise((resolve) => {
    let drainTimer: ReturnType<Clock['setTimeout']> | undefined;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clock.clear(ticker);
      clock.clear(drainTimer);
      resolve(
        summarize(
          latencies,
          { offeredRps: o.rate, sent, errors, lost: pending, spanMs: last - t0, maxSendLagMs },
          o.saturatedBelow,
        ),
      );
    };
    const answered = (scheduled: number, ok: boolean) => {
      if (done) return; // after the drain: counted as lost
      pending--;
      last = clock.now();
      latencies.push(last - scheduled);
      if (!ok) errors++;
      if (sent === total && pending === 0) finish();
    };
    const fire = (i: number, scheduled: number) => {
      pending++;
      let p: Promise<boolean>;
      try {
        p = send(i);
      } catch {
        p = Promise.resolve(false);
      }
      p.then(
        (ok) => answered(scheduled, ok === true),
        () => answered(scheduled, false),
      );
    };
    const tick = () => {
      if (sent === total) return;
      const now = clock.now();
      const due = Math.min(total, Math.floor((now - t0) / interval) + 1);
      while (sent < due) {
        const scheduled = t0 + sent * interval;
        maxSendLagMs = Math.max(maxSendLagMs, now - scheduled);
        fire(sent++, scheduled);
      }
      if (sent === total) {
        clock.clear(ticker);
        if (pending === 0) finish();
        else drainTimer = clock.setTimeout(finish, o.drainMs ?? 10_000);
      }
    };
    const ticker = clock.setInterval(tick, o.tickMs ?? 1);
    tick(); // request 0 is due at t0
  });
}

/**
 * A round's figures of an open loop: offered and achieved rate, and the latencies from schedule only when the rate was
 * kept; a saturated round gives `saturated: 1` instead (bench/compare-table.ts reads it so). Failed and lost requests
 * are its errors.
 */
export function openFigures(r: OpenLoopResult): Figures {
  const f: Figures = { offeredRps: r.offeredRps, achievedRps: r.achievedRps, errors: r.errors + r.lost };
  if (r.saturated) f.saturated = 1;
  else Object.assign(f, { p50: r.p50, p99: r.p99, p999: r.p999, max: r.max });
  return f;
}

/**
 * The figures of an open-loop path: its p99 against `target`, then `before` (what the path adds, e.g. the rate it
 * offered), the achieved rate, p50, p99.9 and max, and last its CPU per request under `cpuLabel`.
 */
export function openFigureSpecs(
  target: FigureSpec['target'],
  cpuLabel: string,
  before: FigureSpec[] = [],
): FigureSpec[] {
  return [
    { key: 'p99', label: 'p99 ms from schedule', better: 'lower', target },
    ...before,
    { key: 'achievedRps', label: 'achieved/s (open loop)', better: 'higher' },
    { key: 'p50', label: 'p50 ms from schedule', better: 'lower' },
    { key: 'p999', label: 'p99.9 ms from schedule', better: 'lower' },
    { key: 'max', label: 'max ms from schedule', better: 'lower' },
    { key: 'cpuUs', label: cpuLabel, better: 'lower' },
  ];
}
