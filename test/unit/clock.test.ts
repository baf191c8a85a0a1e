/**
 * The daemon's clock (src/clock.ts) and the tests' clock (test/helpers/test-clock.ts), on which
 * every time-dependent test of the daemon rests: what runs when, and what an advance waits for.
 */
import t from 'tap';
import { systemClock } from '../../src/clock.js';
import { createTestClock } from '../helpers/test-clock.js';

t.test(
  'the system clock: Date.now, and Node timers that never hold the process; clear cancels either kind',
  async (t) => {
    t.ok(Math.abs(systemClock.now() - Date.now()) < 1000);
    const fired: string[] = [];
    const once = systemClock.setTimeout(() => fired.push('once'), 0);
    const cancelled = systemClock.setTimeout(() => fired.push('cancelled'), 0);
    systemClock.clear(cancelled);
    let n = 0;
    let stop!: () => void;
    const stopped = new Promise<void>((r) => (stop = r));
    const every = systemClock.setInterval(() => {
      if (++n === 3) {
        systemClock.clear(every);
        stop();
      }
    }, 1);
    t.notOk((once as NodeJS.Timeout).hasRef(), 'unreferenced');
    t.notOk((every as NodeJS.Timeout).hasRef(), 'unreferenced');
    const alive = setTimeout(() => {}, 10_000); // they do not keep this process alive: this does
    await stopped;
    clearTimeout(alive);
    await new Promise((r) => setTimeout(r, 5)); // a turn in which a cancelled timer would have run
    t.same(fired, ['once']);
    t.equal(n, 3, 'the interval stopped when cleared');
    systemClock.clear(undefined);
  },
);

t.test(
  'a test clock stands still; advance runs each timer due at its moment, in order, an interval once per period',
  async (t) => {
    const clock = createTestClock(1000);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 10);
    const tick = clock.setInterval(() => seen.push(`tick@${clock.now()}`), 15);
    const gone = clock.setTimeout(() => seen.push('cleared'), 5);
    clock.clear(gone);
    t.same(clock.pending(), [10, 15, 20]);
    await new Promise((r) => setTimeout(r, 20));
    t.same(seen, [], 'nothing runs while the clock stands still');
    await clock.advance(30);
    t.same(seen, ['a@1010', 'tick@1015', 'b@1020', 'tick@1030']);
    t.equal(clock.now(), 1030);
    clock.clear(tick);
    t.same(clock.pending(), []);
  },
);

t.test(
  "advance waits for each timer's work before the next, and runs what that work armed within the span",
  async (t) => {
    const clock = createTestClock(0);
    const seen: string[] = [];
    clock.setTimeout(async () => {
      await new Promise((r) => setTimeout(r, 10)); // I/O that takes real time
      seen.push(`work done@${clock.now()}`);
      clock.setTimeout(() => seen.push(`armed by it@${clock.now()}`), 5);
    }, 10);
    clock.setTimeout(() => seen.push(`next@${clock.now()}`), 12);
    await clock.advance(20);
    t.same(seen, ['work done@10', 'next@12', 'armed by it@15']);
  },
);

t.test(
  'set moves the wall clock only; 0 ms timers run at the next turn, and an advance waits for their work',
  async (t) => {
    const clock = createTestClock(0);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push('later'), 100);
    clock.set(10_000);
    t.equal(clock.now(), 10_000);
    t.same(clock.pending(), [100], 'the timer counts elapsed time, as Node does');
    let release!: () => void;
    clock.setTimeout(async () => {
      seen.push('now');
      await new Promise<void>((r) => (release = r));
      seen.push('its work');
    }, 0);
    await new Promise((r) => setImmediate(r));
    t.same(seen, ['now'], 'run without an advance');
    const advanced = clock.advance(100);
    await new Promise((r) => setTimeout(r, 5));
    t.same(seen, ['now'], 'the advance waits for the work under way');
    release();
    await advanced;
    t.same(seen, ['now', 'its work', 'later']);
    t.equal(clock.now(), 10_100);
    t.equal(await clock.next(), 3_600_000, 'next: nothing armed, an hour at the most');
  },
);
