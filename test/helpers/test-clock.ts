/**
 * A Clock whose time moves only when the test says (src/clock.ts): the daemon, its pollers, retries,
 * pings and the rest run on it, so a test advances time instead of sleeping, and what it checks does
 * not depend on how fast the machine is.
 *
 * - `now()` is the wall clock, fixed until moved.
 * - `advance(ms)`: that much time passes. Every timer due in it runs at its own moment, in order (an
 *   interval once per period), with now() at that moment; a timer whose callback returns a promise
 *   (a poll, a heartbeat) is waited for before the next one runs, so what those polls do has been
 *   done when advance resolves, and the timers they set meanwhile run too if due within the span.
 * - `set(t)`: the wall clock is put at t, as an operator setting it would; no time passes for the
 *   timers (they count elapsed time, as Node's do), so nothing runs.
 * - A timer set for 0 ms (or less) runs at the next turn of the event loop without any advance, as
 *   the system's would: "now" needs no test to move time. An advance first waits for the work such
 *   timers started (a daemon's first poll), then moves time.
 */
import type { Clock, Timer } from '../../src/clock.js';

interface TestTimer {
  /** Elapsed time (not wall time) at which it runs next. */
  at: number;
  /** Order of creation: timers due at the same moment run in it. */
  seq: number;
  fn: () => unknown;
  /** An interval's period; undefined for a timeout. */
  every?: number;
}

export interface TestClock extends Clock {
  /** Let `ms` pass: run every timer due meanwhile at its moment, each one's work waited for. */
  advance(ms: number): Promise<void>;
  /** Advance to the next timer due (or by `max` at the most, default an hour); resolves to the time advanced. */
  next(max?: number): Promise<number>;
  /** Put the wall clock at `t` (ms since the epoch) without any time passing for the timers. */
  set(t: number): void;
  /** Timers armed now (not yet run or cleared), soonest first: how far each is, in ms. */
  pending(): number[];
}

/** A test clock at `start` (default: the real time now). */
export function createTestClock(start: number = Date.now()): TestClock {
  let wall = start;
  let elapsed = 0;
  let seq = 0;
  const timers = new Set<TestTimer>();
  let advancing = false;
  let soonScheduled = false;
  /** The work of timers the next turn ran (0 ms ones), which an advance waits for before it moves time. */
  const work = new Set<Promise<unknown>>();

  const soonest = (limit: number): TestTimer | undefined => {
    let best: TestTimer | undefined;
    for (const t of timers)
      if (t.at <= limit && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))) best = t;
    return best;
  };
  /** Run one timer at its moment (the clocks moved there already); re-arm an interval. Its promise, if any. */
  const fire = (t: TestTimer): unknown => {
    if (t.every !== undefined) t.at += t.every;
    else timers.delete(t);
    return t.fn();
  };
  /**
   * Timers due at the present moment (set for 0 ms): run at the next turn, as the system's would,
   * also during an advance (a timer's work may wait for one: the advance must not wait for itself).
   */
  const runDueSoon = () => {
    if (soonScheduled) return;
    soonScheduled = true;
    setImmediate(() => {
      soonScheduled = false;
      for (let t = soonest(elapsed); t; t = soonest(elapsed)) {
        const r = fire(t);
        if (r instanceof Promise) {
          const p: Promise<unknown> = r.finally(() => work.delete(p));
          work.add(p);
        }
      }
    });
  };
  /** A turn of the event loop, and the work of timers the next turn ran meanwhile. */
  const settle = async () => {
    do {
      await new Promise((r) => setImmediate(r));
      if (work.size) await Promise.all([...work]);
    } while (work.size);
  };
  const arm = (fn: () => unknown, ms: number, every?: number): Timer => {
    const t: TestTimer = { at: elapsed + Math.max(0, ms), seq: seq++, fn, every };
    timers.add(t);
    if (t.at <= elapsed) runDueSoon();
    return t;
  };
  const moveTo = (at: number) => {
    if (at <= elapsed) return;
    wall += at - elapsed;
    elapsed = at;
  };

  const clock: TestClock = {
    now: () => wall,
    setTimeout: (fn, ms) => arm(fn, ms),
    setInterval: (fn, ms) => arm(fn, Math.max(1, ms), Math.max(1, ms)),
    clear(timer) {
      if (timer) timers.delete(timer as TestTimer);
    },
    async advance(ms) {
      if (advancing) throw new Error('test clock: advance() while another advance() runs');
      advancing = true;
      const target = elapsed + Math.max(0, ms);
      try {
        await settle(); // the work of timers already run (a daemon's first poll at its start) ends first
        // one at a time, soonest first; what a timer's work arms within the span runs in it too
        for (let t = soonest(target); t; t = soonest(target)) {
          moveTo(t.at);
          await fire(t);
          await settle();
        }
        moveTo(target);
      } finally {
        advancing = false;
      }
    },
    async next(max = 3_600_000) {
      const t = soonest(Infinity);
      const by = t ? Math.min(Math.max(0, t.at - elapsed), max) : max;
      await clock.advance(by);
      return by;
    },
    set(t) {
      wall = t;
    },
    pending: () => [...timers].sort((a, b) => a.at - b.at || a.seq - b.seq).map((t) => t.at - elapsed),
  };
  return clock;
}
