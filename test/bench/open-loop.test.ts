/**
 * The open-loop scheduler of the latency benchmarks (bench/open-loop.ts) on a test clock, so that
 * what it measures is checked without load and without time passing: requests go out on schedule
 * whether or not earlier ones were answered, a late tick's backlog is sent at once and its wait
 * counted, latency runs from the scheduled time (a stall shows in the p99 of every request queued
 * behind it, not only in the one that met it), a system that cannot keep the rate is reported
 * saturated, and the percentiles are those of the answers.
 */
import t from 'tap';
import { openLoop, summarize } from '../../bench/open-loop.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';

/** A server on the test clock answering each request `latency(i)` ms after it was sent. */
function server(clock: TestClock, latency: (i: number, sentAt: number) => number) {
  const sentAt: number[] = [];
  return {
    sentAt,
    send: (i: number) => {
      sentAt[i] = clock.now();
      return new Promise<boolean>((r) => clock.setTimeout(() => r(true), latency(i, clock.now())));
    },
  };
}

/** Advance the clock 1 ms at a time until `p` settles (at most `maxMs`). */
async function run<T>(clock: TestClock, p: Promise<T>, maxMs = 60_000): Promise<T> {
  let settled = false;
  void p.finally(() => (settled = true));
  for (let ms = 0; !settled && ms < maxMs; ms++) await clock.advance(1);
  if (!settled) throw new Error(`the open loop did not end within ${maxMs} ms of test time`);
  return p;
}

t.test('requests go out on schedule, not after answers, and a steady server reads its own latency', async (t) => {
  const clock = createTestClock(0);
  // every answer takes 30 ms: a closed loop of 1 would send 33/s; the open loop still sends 200/s
  const s = server(clock, () => 30);
  const r = await run(clock, openLoop(s.send, { rate: 200, seconds: 1, clock }));
  t.equal(r.sent, 200);
  t.equal(s.sentAt.length, 200);
  s.sentAt.forEach((at, i) => t.ok(at >= i * 5 && at < i * 5 + 1, `request ${i} sent at its time (${at} ms)`));
  t.equal(r.answered, 200);
  t.equal(r.lost, 0);
  t.equal(r.errors, 0);
  t.equal(r.p50, 30);
  t.equal(r.p99, 30);
  t.equal(r.max, 30);
  t.notOk(r.saturated, `achieved ${r.achievedRps}/s of 200/s`);
  t.ok(r.achievedRps >= 190 && r.achievedRps <= 200, `achieved ${r.achievedRps}/s`);
});

t.test('a coarse tick sends its backlog at once and the wait counts from the schedule', async (t) => {
  const clock = createTestClock(0);
  const s = server(clock, () => 0);
  // 1,000/s on a 10 ms tick: 10 requests a tick, the first of each waited 9 ms for it
  const r = await run(clock, openLoop(s.send, { rate: 1000, seconds: 0.1, tickMs: 10, clock }));
  t.equal(r.sent, 100);
  t.equal(s.sentAt[1], 10, 'request 1 (due at 1 ms) went out with the tick at 10 ms');
  t.equal(s.sentAt[10], 10, 'request 10 (due at 10 ms) too');
  t.equal(r.max, 9, 'the longest wait is a tick less the schedule');
  t.equal(r.maxSendLagMs, 9);
  t.ok(r.p50 > 0, 'an instant server still reads the wait for the tick');
});

t.test('a stall is felt by every request scheduled during it (coordinated omission corrected)', async (t) => {
  const clock = createTestClock(0);
  // 100/s for 2 s; the server stalls from 500 to 700 ms (answers nothing until 700), else answers in 1 ms
  const s = server(clock, (_i, at) => (at >= 500 && at < 700 ? 700 - at + 1 : 1));
  const r = await run(clock, openLoop(s.send, { rate: 100, seconds: 2, clock }));
  t.equal(r.sent, 200);
  t.equal(r.max, 201, 'the request scheduled at 500 ms waited 201 ms');
  // 20 of the 200 (10 %) were scheduled inside the stall: the p99 sees it, a closed loop would have seen one slow call
  t.ok(r.p99 > 100, `p99 ${r.p99} ms reflects the stall`);
  t.equal(r.p50, 1);
  t.notOk(r.saturated, 'the server caught up: the rate was kept');
});

t.test('a server slower than the offered rate is saturated', async (t) => {
  const clock = createTestClock(0);
  // one request at a time, 4 ms each: 250/s at most, offered 500/s
  let free = 0;
  const s = server(clock, (_i, at) => {
    free = Math.max(free, at) + 4;
    return free - at;
  });
  const r = await run(clock, openLoop(s.send, { rate: 500, seconds: 1, clock }));
  t.equal(r.sent, 500);
  t.equal(r.answered, 500);
  t.ok(r.saturated, `achieved ${r.achievedRps}/s of 500/s`);
  t.ok(r.achievedRps <= 260, `achieved ${r.achievedRps}/s`);
});

t.test('answers that never come are lost and make the run saturated; failures are errors', async (t) => {
  const clock = createTestClock(0);
  const send = (i: number) =>
    i === 3
      ? new Promise<boolean>(() => {}) // never answered
      : i === 4
        ? Promise.reject(new Error('refused'))
        : Promise.resolve(i !== 5);
  const r = await run(clock, openLoop(send, { rate: 100, seconds: 0.1, drainMs: 50, clock }));
  t.equal(r.sent, 10);
  t.equal(r.answered, 9);
  t.equal(r.lost, 1);
  t.equal(r.errors, 2, 'the rejected one and the one that resolved false');
  t.ok(r.saturated);
});

t.test('the percentiles and the achieved rate of given latencies', async (t) => {
  const lat = Array.from({ length: 1000 }, (_, i) => 1000 - i); // 1..1000 ms, unsorted
  const r = summarize(lat, { offeredRps: 1000, sent: 1000, errors: 0, lost: 0, spanMs: 2000, maxSendLagMs: 0 });
  t.equal(r.p50, 501);
  t.equal(r.p99, 991);
  t.equal(r.p999, 1000);
  t.equal(r.max, 1000);
  t.equal(r.achievedRps, 500);
  t.ok(r.saturated, 'half the offered rate');
  t.notOk(summarize([1, 2], { offeredRps: 1, sent: 2, errors: 0, lost: 0, spanMs: 2000, maxSendLagMs: 0 }).saturated);
  t.throws(() => openLoop(() => Promise.resolve(true), { rate: 0, seconds: 1 }), /positive rate/);
});
