/**
 * A poll for due work (the delivery worker's events, scheduled messages) that runs every `minMs`
 * while it finds some and backs off while it finds none, doubling up to `maxMs`: an idle daemon
 * on PostgreSQL sent one claim statement per poll, about nine a second between the two pollers.
 * Work this daemon knows the time of (a retry it scheduled, a message it was given to post at a
 * time) does not wait for the backed-off poll: `wakeAt` runs the poll then. Only what another
 * daemon left (an event whose lease ran out, say) may be found up to `maxMs` late.
 */
export interface PollerOptions {
  minMs: number;
  maxMs: number;
  /** One poll; resolves to whether it found work (then the next comes after minMs). */
  run: () => Promise<boolean>;
  now: () => number;
  /** A poll that failed (it is tried again after minMs). */
  onError?: (err: unknown) => void;
}

export interface Poller {
  /** The first poll at once, then on the schedule. */
  start(): void;
  /** Poll no later than at `at` (a clock time); at once when it has passed. */
  wakeAt(at: number): void;
  /** No further polls; resolves once the one under way, if any, has ended. */
  stop(): Promise<void>;
}

/** Wake times are kept to this grain (ms): many retries due within it need one poll. */
const WAKE_GRAIN_MS = 50;

export function createPoller(opts: PollerOptions): Poller {
  let interval = opts.minMs;
  let pollAt = Infinity; // the next poll by the schedule
  const wakes = new Set<number>(); // and the times it was asked to poll
  let timer: NodeJS.Timeout | undefined;
  let armedAt = Infinity;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;

  function arm(): void {
    if (stopped) return;
    let at = pollAt;
    for (const w of wakes) if (w < at) at = w;
    if (at === armedAt) return;
    if (timer) clearTimeout(timer);
    timer = undefined;
    armedAt = at;
    if (at === Infinity) return;
    timer = setTimeout(fire, Math.max(0, at - opts.now()));
    timer.unref();
  }

  function fire(): void {
    timer = undefined;
    armedAt = Infinity;
    if (stopped) return;
    if (running) {
      again = true; // woken during a poll: one more right after it, which sees what woke it
      return;
    }
    const t = opts.now();
    for (const w of wakes) if (w <= t) wakes.delete(w);
    pollAt = Infinity;
    running = opts
      .run()
      .catch((err: unknown) => {
        opts.onError?.(err);
        return true; // tried again soon, not after a long backoff
      })
      .then((found) => {
        running = undefined;
        interval = found ? opts.minMs : Math.min(opts.maxMs, interval * 2);
        pollAt = opts.now() + (again ? 0 : interval);
        again = false;
        arm();
      });
  }

  return {
    start() {
      stopped = false;
      interval = opts.minMs;
      pollAt = opts.now();
      arm();
    },
    wakeAt(at) {
      if (running && at <= opts.now()) again = true;
      else {
        wakes.add(Math.ceil(at / WAKE_GRAIN_MS) * WAKE_GRAIN_MS);
        arm();
      }
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      armedAt = Infinity;
      wakes.clear();
      await running;
    },
  };
}
