/**
 * The pollers' pace (src/poller.ts): often while they find work, backing off while they
 * find none, and woken at a known time whatever the backoff.
 */
import t from 'tap';
import { createPoller } from '../../src/poller.js';
import { must } from '../../src/must.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function counted(found: () => boolean, minMs = 20, maxMs = 160) {
  const runs: number[] = [];
  const p = createPoller({ minMs, maxMs, now: Date.now, run: async () => {
    runs.push(Date.now());
    return found();
  } });
  return { p, runs };
}

t.test('while it finds work it polls every minMs; idle, it backs off to maxMs', async (t) => {
  const busy = counted(() => true);
  const idle = counted(() => false);
  busy.p.start();
  idle.p.start();
  await sleep(900);
  await Promise.all([busy.p.stop(), idle.p.stop()]);
  t.ok(busy.runs.length >= 15, `busy: ${busy.runs.length} polls in 0.9 s`);
  // at 0, 40, 120, 280, then every 160 ms: 7 in 0.9 s (a timer that fires late makes fewer)
  t.ok(idle.runs.length >= 3 && idle.runs.length <= 9, `idle: ${idle.runs.length} polls in 0.9 s`);
  const gaps = idle.runs.slice(1).map((x, i) => x - must(idle.runs[i]));
  t.ok(gaps.slice(3).every((g) => g >= 150), `after three doublings the polls are maxMs apart: ${gaps.join(', ')}`);
});

t.test('finding work again brings the pace back to minMs', async (t) => {
  let work = false;
  const c = counted(() => work);
  c.p.start();
  await sleep(500); // backed off
  work = true;
  c.p.wakeAt(Date.now());
  const from = c.runs.length;
  await sleep(300);
  await c.p.stop();
  t.ok(c.runs.length - from >= 6, `${c.runs.length - from} polls in 0.3 s once there was work`);
});

t.test('wakeAt polls at that time, long before the backed-off poll', async (t) => {
  const c = counted(() => false, 20, 5000);
  c.p.start();
  await sleep(400); // the next poll is now seconds away
  const before = c.runs.length;
  const at = Date.now() + 150;
  c.p.wakeAt(at);
  c.p.wakeAt(at + 10_000); // a later wake does not put off the earlier one
  await sleep(400);
  await c.p.stop();
  const woken = c.runs.slice(before);
  t.equal(woken.length, 1, 'one poll, at the time asked');
  t.ok(must(woken[0]) >= at - 50 && must(woken[0]) < at + 300, `at ${must(woken[0]) - at} ms from the time asked`);
});

t.test('a wake during a poll makes one more poll right after it', async (t) => {
  let release!: () => void;
  let n = 0;
  const p = createPoller({
    minMs: 20, maxMs: 5000, now: Date.now,
    run: async () => {
      n++;
      if (n === 2) await new Promise<void>((r) => (release = r));
      return false;
    },
  });
  p.start();
  await sleep(50); // the second poll (at 20 ms) is under way, held
  t.equal(n, 2);
  p.wakeAt(Date.now());
  release();
  await sleep(100);
  t.equal(n, 3, 'polled again at once, not after the 40 ms backoff, and only once');
  await p.stop();
});

t.test('stop: no poll after it, and it waits for the one under way', async (t) => {
  let release!: () => void;
  let ended = false;
  let n = 0;
  const p = createPoller({
    minMs: 10, maxMs: 10, now: Date.now,
    run: async () => {
      n++;
      await new Promise<void>((r) => (release = r));
      ended = true;
      return true;
    },
  });
  p.start();
  await sleep(20);
  const stopping = p.stop();
  setTimeout(() => release(), 50);
  await stopping;
  t.ok(ended, 'stop resolved after the poll under way ended');
  const at = n;
  p.wakeAt(Date.now());
  await sleep(100);
  t.equal(n, at, 'nothing polls after stop');
});

t.test('a poll that fails is reported and tried again after minMs, not after a backoff', async (t) => {
  const errors: unknown[] = [];
  let n = 0;
  const p = createPoller({
    minMs: 20, maxMs: 5000, now: Date.now, onError: (e) => errors.push(e),
    run: async () => {
      n++;
      throw new Error('database away');
    },
  });
  p.start();
  await sleep(200);
  await p.stop();
  t.ok(n >= 5, `${n} polls in 0.2 s`);
  t.equal(errors.length, n, 'each failure reported');
  t.match(errors[0], { message: 'database away' });
});
