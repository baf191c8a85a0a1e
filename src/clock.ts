/**
 * The daemon's one source of time: what time it is, and the timers of everything it does at a
 * time (polls, retries, scheduled messages, socket pings, holder heartbeats, live pages' gathering
 * and keep-alives, idle compaction, sweeps, attempt budgets). The composition root and the stores
 * are given one Clock; production runs `systemClock`, tests a clock they move themselves
 * (test/helpers/test-clock.ts), so a test advances time instead of waiting for it.
 *
 * A timer's callback may return a promise (the work it started): the system clock ignores it; a
 * test clock waits for it before it runs the next timer due, so "advance 10 s" is every poll of
 * those 10 s done, however slow the machine.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Run `fn` once, `ms` from now. The timer never keeps the process alive by itself. */
  setTimeout(fn: () => unknown, ms: number): Timer;
  /** Run `fn` every `ms` until cleared. The timer never keeps the process alive by itself. */
  setInterval(fn: () => unknown, ms: number): Timer;
  /** Cancel a timer of this clock's (a timeout or an interval); undefined or a spent timer: nothing. */
  clear(timer: Timer | undefined | null): void;
}

/** A timer of a Clock's, to hand back to its `clear`. */
export type Timer = object;

/** The runtime's clock and timers: Date.now, and Node's timers, unreferenced (no wrapper is allocated per timer). */
export const systemClock: Clock = {
  now: Date.now,
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clear: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
