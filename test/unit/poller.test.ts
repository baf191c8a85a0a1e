/**
 * The pollers' pace (src/poller.ts): often while they find work, backing off while they
 * find none, and woken at a known time whatever the backoff. Time is a test clock's: each test
 * advances it, so the polls counted are the schedule's, not what a busy machine let run.
 */
import t from 'tap';
import { createPoller } from '../../src/poller.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';

function counted(clock: TestClock, found: () => boolean, minMs = 20, maxMs = 160) {
  const runs: number[] = [];
  const p = createPoller({
    minMs,
    maxMs,
    clock,
    run: async () => {
      runs.push(clock.now());
      return found();
    },
  });
  return { p, runs };
}

t.test('while it finds work it polls every minMs; idle, it backs off to maxMs', async (t) => {
  const clock = createTestClock(0);
  const busy = counted(clock, () => true);
  const idle = counted(clock, () => false);
  busy.p.start();
  idle.p.start();
  await clock.advance(900);
  await Promise.all([busy.p.stop(), idle.p.stop()]);
  t.same(
    busy.runs,
    Array.from({ length: 46 }, (_, i) => i * 20),
    'busy: every 20 ms from the start',
  );
  t.same(idle.runs, [0, 40, 120, 280, 440, 600, 760], 'idle: the gap doubles (40, 80, 160) up to 160 ms');
});

t.test('finding work again brings the pace back to minMs', async (t) => {
  const clock = createTestClock(0);
  let work = false;
  const c = counted(clock, () => work);
  c.p.start();
  await clock.advance(500); // backed off: polls at 0, 40, 120, 280, 440, the next at 600
  work = true;
  c.p.wakeAt(clock.now());
  await clock.advance(100);
  await c.p.stop();
  t.same(
    c.runs.filter((x) => x > 440),
    [500, 520, 540, 560, 580, 600],
    'woken at once, then every 20 ms while it finds work',
  );
});

t.test('wakeAt polls at that time, long before the backed-off poll', async (t) => {
  const clock = createTestClock(0);
  const c = counted(clock, () => false, 20, 5000);
  c.p.start();
  await clock.advance(400); // the next poll is now seconds away
  const before = c.runs.length;
  c.p.wakeAt(550);
  c.p.wakeAt(10_550); // a later wake does not put off the earlier one
  await clock.advance(400);
  await c.p.stop();
  t.same(c.runs.slice(before), [550], 'one poll, at the time asked (wakes are kept to a 50 ms grain)');
  c.p.start(); // started again: at once, and the later wake was forgotten at the stop
  await clock.advance(20_000);
  await c.p.stop();
  t.notOk(c.runs.includes(10_550), 'no poll for a wake asked before the stop');
});

t.test('wakes are kept to a 50 ms grain: many due within one grain need one poll, none before its time', async (t) => {
  const clock = createTestClock(0);
  const c = counted(clock, () => false, 20, 5000);
  c.p.start();
  await clock.advance(400);
  const before = c.runs.length;
  for (const at of [501, 520, 549, 550]) c.p.wakeAt(at);
  await clock.advance(400);
  await c.p.stop();
  t.same(c.runs.slice(before), [550]);
});

t.test('a wake during a poll makes one more poll right after it', async (t) => {
  const clock = createTestClock(0);
  let release!: () => void;
  const runs: number[] = [];
  const p = createPoller({
    minMs: 20,
    maxMs: 5000,
    clock,
    run: async () => {
      runs.push(clock.now());
      if (runs.length === 2) await new Promise<void>((r) => (release = r));
      return false;
    },
  });
  p.start();
  await clock.advance(0); // the first poll, at once; the next after 40 ms
  const held = clock.advance(40); // the second poll starts, and is held
  while (runs.length < 2) await new Promise((r) => setImmediate(r));
  p.wakeAt(clock.now());
  release();
  await held;
  t.same(runs, [0, 40, 40], 'polled again at once, at the same moment, not after the 80 ms backoff');
  await clock.advance(200);
  t.same(runs, [0, 40, 40, 200], 'and only once: the next one after the backoff (160 ms)');
  await p.stop();
});

t.test('stop: no poll after it, and it waits for the one under way', async (t) => {
  const clock = createTestClock(0);
  let release!: () => void;
  let ended = false;
  let n = 0;
  const p = createPoller({
    minMs: 10,
    maxMs: 10,
    clock,
    run: async () => {
      n++;
      await new Promise<void>((r) => (release = r));
      ended = true;
      return true;
    },
  });
  p.start();
  await new Promise((r) => setImmediate(r)); // the first poll, at once, is under way
  t.equal(n, 1);
  let stopped = false;
  const stopping = p.stop().then(() => (stopped = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(stopped, 'stop waits while the poll is under way');
  release();
  await stopping;
  t.ok(ended, 'stop resolved after the poll under way ended');
  p.wakeAt(clock.now());
  await clock.advance(1000);
  t.equal(n, 1, 'nothing polls after stop');
  t.same(clock.pending(), [], 'and no timer is left armed');
});

t.test('a poll that fails is reported and tried again after minMs, not after a backoff', async (t) => {
  const clock = createTestClock(0);
  const errors: unknown[] = [];
  const runs: number[] = [];
  const p = createPoller({
    minMs: 20,
    maxMs: 5000,
    clock,
    onError: (e) => errors.push(e),
    run: async () => {
      runs.push(clock.now());
      throw new Error('database away');
    },
  });
  p.start();
  await clock.advance(200);
  await p.stop();
  t.same(runs, [0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
  t.equal(errors.length, runs.length, 'each failure reported');
  t.match(errors[0], { message: 'database away' });
});
