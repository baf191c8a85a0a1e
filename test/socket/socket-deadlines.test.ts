/**
 * The socket transport's budgets on one timer (src/delivery/socket-deadlines.ts): each attempt
 * times out at its own budget to the millisecond, an attempt that ended never does, and however
 * many attempts are in flight the clock holds one timer for them. Time is a test clock's.
 */
import t from 'tap';
import type { Clock, Timer } from '../../src/clock.js';
import type { SocketConn } from '../../src/delivery/socket-connections.js';
import { Deadlines, type Due } from '../../src/delivery/socket-deadlines.js';
import { createSocketTransport } from '../../src/delivery/socket-transport.js';
import type { AttemptResult } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { createTestClock } from '../helpers/test-clock.js';
import { quietSessions } from '../helpers/quiet-sessions.js';
import { until } from '../helpers/until.js';

/** A Due that records when it expired (the clock's now at that moment). */
function due(clock: Clock, name: string, expired: string[]): Due {
  return {
    deadline: 0,
    prevDue: undefined,
    nextDue: undefined,
    listed: false,
    expire: () => expired.push(`${name}@${clock.now()}`),
  };
}

t.test('each expires at its own deadline, in deadline order, whatever the order they came in', async (t) => {
  const clock = createTestClock(0);
  const d = new Deadlines(clock);
  const expired: string[] = [];
  d.add(due(clock, 'a3000', expired), 3000);
  d.add(due(clock, 'b100', expired), 100);
  d.add(due(clock, 'c3000', expired), 3000);
  await clock.advance(1000);
  d.add(due(clock, 'd500', expired), 500); // due at 1500, before a and c
  d.add(due(clock, 'e0', expired), 0);
  await clock.advance(2999 - 1000);
  t.same(expired, ['b100@100', 'e0@1000', 'd500@1500'], 'none before its time');
  await clock.advance(1);
  t.same(expired, ['b100@100', 'e0@1000', 'd500@1500', 'a3000@3000', 'c3000@3000'], 'ties in the order they came');
  t.same(clock.pending(), [], 'nothing left: no timer armed');
});

t.test('a removed entry never expires; the others still do', async (t) => {
  const clock = createTestClock(0);
  const d = new Deadlines(clock);
  const expired: string[] = [];
  const first = due(clock, 'first', expired);
  const middle = due(clock, 'middle', expired);
  d.add(first, 100);
  d.add(middle, 200);
  d.add(due(clock, 'last', expired), 300);
  d.remove(first);
  d.remove(middle);
  d.remove(middle); // twice: nothing
  t.equal(first.listed, false);
  await clock.advance(1000);
  t.same(expired, ['last@300']);
});

t.test('a timer that fires before the clock reads the deadline is armed again, not lost', async (t) => {
  // a hand-driven clock: the runtime's timers count elapsed time, the deadline is on the wall clock
  let now = 1000;
  const armed: Array<{ fn: () => unknown; ms: number }> = [];
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const timer = { fn, ms };
      armed.push(timer);
      return timer;
    },
    setInterval: () => ({}),
    clear: (timer: Timer | undefined | null) => {
      const i = armed.findIndex((a) => a === timer);
      if (i >= 0) armed.splice(i, 1);
    },
  };
  const d = new Deadlines(clock);
  const expired: string[] = [];
  d.add(due(clock, 'x', expired), 50);
  t.same(
    armed.map((a) => a.ms),
    [50],
  );
  now = 1049; // fires a millisecond early on the wall clock
  const early = armed.shift();
  early?.fn();
  t.same(expired, [], 'not yet due');
  t.same(
    armed.map((a) => a.ms),
    [1],
    'armed again for what is left',
  );
  now = 1050;
  armed.shift()?.fn();
  t.same(expired, ['x@1050']);
  t.same(armed, [], 'nothing left armed');
});

/** A connection that records the frames sent to it: each one's correlation id and its payload's `i`. */
function fakeConn(appId: string, id: string): SocketConn & { sent: Array<{ cid: string; i: number }> } {
  const sent: Array<{ cid: string; i: number }> = [];
  return {
    id,
    appId,
    sent,
    send(text, cb) {
      const frame = JSON.parse(text) as { correlation_id: string; payload: { i: number } };
      sent.push({ cid: frame.correlation_id, i: frame.payload.i });
      cb?.();
    },
    close() {},
  };
}

t.test('the transport: a thousand attempts in flight hold one timer; each still times out at its budget', async (t) => {
  const clock = createTestClock(1_700_000_000_000);
  const sessions = quietSessions(clock);
  const transport = createSocketTransport({ sessions, clock });
  const conns = [fakeConn('app_1', 'sck_a'), fakeConn('app_1', 'sck_b')];
  for (const c of conns) sessions.add(c);
  const results: AttemptResult[] = [];
  const send = (i: number) =>
    transport
      .send({
        deliveryId: `dlv_${i}`,
        attemptId: `att_${i}`,
        app: { id: 'app_1', manifest: { socketMode: true } } as unknown as AppRecord,
        payload: { messageType: 'SLASH_COMMAND', i },
        interactive: true,
        budgetMs: i % 2 ? 3000 : 1000,
        retryNum: 0,
        signingSecret: '',
      })
      .then((r) => results.push(r));
  for (let i = 0; i < 1000; i++) void send(i);
  const sent = () => conns.reduce((n, c) => n + c.sent.length, 0);
  t.equal(await until(sent, (n) => n === 1000), 1000, 'every frame sent');
  t.equal(clock.pending().length, 1, 'one timer for a thousand budgets (a timer per attempt before)');

  // the 3 s ones answered, at once; the 1 s ones not
  for (const c of conns)
    for (const f of c.sent.filter((f) => f.i % 2 === 1))
      sessions.handleFrame(c, JSON.stringify({ correlation_id: f.cid, status: 200 }));
  const ended = (n: number) =>
    until(
      () => results.length,
      (k) => k === n,
    );
  t.equal(await ended(500), 500, 'the answered ones ended');
  t.ok(
    results.every((r) => r.outcome === 'acked'),
    'the answered ones acked',
  );
  await clock.advance(999);
  t.equal(results.length, 500, 'no timeout 1 ms before the 1 s budget');
  await clock.advance(1);
  t.equal(await ended(1000), 1000, 'the rest ended at the 1 s budget');
  t.ok(
    results.slice(500).every((r) => r.outcome === 'timeout' && /within 1000 ms/.test(r.error ?? '')),
    'the unanswered ones timed out at their 1 s budget',
  );
  await clock.advance(5000);
  t.equal(results.length, 1000, 'the answered ones never time out');
  t.same(clock.pending(), [], 'no timer left behind');
});
