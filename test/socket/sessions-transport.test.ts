/**
 * Socket sessions (tickets, registry, frames) and the socket transport, without a network. Time is
 * a test clock's: an answer that comes while it stands still came without waiting for the budget.
 */
import t from 'tap';
import { defaults, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createSocketSessions } from '../../src/services/socket-sessions.js';
import type { SocketConn } from '../../src/delivery/socket-connections.js';
import { createSocketTransport } from '../../src/delivery/socket-transport.js';
import type { SendRequest } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

function setup(config: Partial<Config> = {}) {
  const clock = createTestClock(1_700_000_000_000);
  let logText = '';
  const logger = createLogger({ level: 'debug', stream: { write: (s: string) => (logText += s) } });
  const sessions = createSocketSessions({
    store: createMemoryStore(),
    clock,
    logger,
    config: { ...defaults, ...config },
  });
  const transport = createSocketTransport({ sessions, clock });
  return { sessions, transport, clock, logs: () => logText };
}

/** A connection that records frames and can fail writes. */
function fakeConn(appId: string, id = 'sck_' + Math.random().toString(36).slice(2)) {
  const sent: Array<{ payload: any; correlation_id: string }> = [];
  const closed: Array<[number, string]> = [];
  let failWrites = false;
  const conn: SocketConn & { sent: typeof sent; closed: typeof closed; failWrites(v: boolean): void } = {
    id,
    appId,
    sent,
    closed,
    failWrites: (v) => (failWrites = v),
    send(text, cb) {
      if (failWrites) return setImmediate(() => cb?.(new Error('EPIPE')));
      sent.push(JSON.parse(text));
      setImmediate(() => cb?.());
    },
    close(code, reason) {
      closed.push([code, reason]);
    },
  };
  return conn;
}

const app = (id = 'app_1') => ({ id, manifest: { socketMode: true } }) as unknown as AppRecord;
const req = (over: Partial<SendRequest> = {}): SendRequest => ({
  deliveryId: 'dlv_1',
  attemptId: 'att_1',
  app: app(),
  payload: { messageType: 'SLASH_COMMAND', slashCommand: '/x', text: 'hi' },
  interactive: true,
  budgetMs: 3000,
  retryNum: 0,
  signingSecret: 'ass_unused',
  ...over,
});
/** Wait until the fake connection saw `n` frames, then reply to the last one. */
async function lastFrame(conn: ReturnType<typeof fakeConn>, n = 1) {
  while (conn.sent.length < n) await new Promise((r) => setImmediate(r));
  return must(conn.sent[n - 1]);
}

t.test('tickets are single-use and short-lived', async (t) => {
  const { sessions, clock } = setup({ socketTicketTtlMs: 30_000 });
  const a = await sessions.issueTicket('app_1');
  t.match(a.ticket, /^awt_[A-Za-z0-9_-]{43}$/, 'a prefixed 256-bit ticket');
  t.equal(await sessions.redeemTicket(a.ticket), 'app_1');
  t.equal(await sessions.redeemTicket(a.ticket), undefined, 'a second use is refused');
  const b = await sessions.issueTicket('app_1');
  await clock.advance(30_001);
  t.equal(await sessions.redeemTicket(b.ticket), undefined, 'an expired ticket is refused');
  t.equal(await sessions.redeemTicket('awt_made_up'), undefined);
  t.equal(await sessions.redeemTicket(undefined), undefined);
});

t.test('no connection → no_connection at once', async (t) => {
  const { transport, clock } = setup();
  const r = await transport.send(req());
  t.equal(r.outcome, 'no_connection', 'answered while the clock stood still: not at the 3 s budget');
  t.same(clock.pending(), [], 'no budget timer left behind');
});

t.test('ack, ack with message, nack, response, over text JSON', async (t) => {
  const { sessions, transport } = setup();
  const c = fakeConn('app_1');
  sessions.add(c);
  const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
    [{ status: 200 }, { outcome: 'acked', status: 200 }],
    [
      { status: 200, message: 'done!' },
      { outcome: 'acked', message: 'done!' },
    ],
    [
      { status: 500, message: 'nope' },
      { outcome: 'nacked', status: 500, message: 'nope' },
    ],
    [{ status: 400 }, { outcome: 'nacked', status: 400 }],
    [
      { status: 200, message: 'ok', body: { triggerId: 't', view: { id: 'v' }, action: 'OPEN' } },
      { outcome: 'response', body: { triggerId: 't', action: 'OPEN' } },
    ],
  ];
  let n = 0;
  for (const [reply, expected] of cases) {
    const p = transport.send(req());
    const frame = await lastFrame(c, ++n);
    t.same(frame.payload, req().payload, 'the frame carries exactly the payload');
    t.match(frame.correlation_id, /^cor_/);
    t.same(sessions.handleFrame(c, JSON.stringify({ correlation_id: frame.correlation_id, ...reply })), {
      kind: 'reply',
    });
    const r = await p;
    t.match(r, expected, `${JSON.stringify(reply)} → ${expected.outcome}`);
    if (expected.outcome === 'response')
      t.equal(r.message, undefined, 'a response\'s "ok" is not an ephemeral message');
    t.type(r.latencyMs, 'number');
    t.ok(r.excerpt && r.excerpt.includes(String(reply.status)), 'an excerpt of the reply for the log');
  }
});

t.test('the budget: no answer → timeout; the late reply is ignored, not counted as bad', async (t) => {
  const { sessions, transport, clock, logs } = setup({ socketBadFrameLimit: 0 });
  const c = fakeConn('app_1');
  sessions.add(c);
  let r: Awaited<ReturnType<typeof transport.send>> | undefined;
  void transport.send(req({ budgetMs: 150 })).then((x) => (r = x));
  await lastFrame(c);
  await clock.advance(149);
  t.equal(r, undefined, 'no outcome 1 ms before the budget');
  await clock.advance(1);
  t.equal(r?.outcome, 'timeout', 'a timeout at the 150 ms budget (not the default 3 s)');
  const v = sessions.handleFrame(c, JSON.stringify({ correlation_id: must(c.sent[0]).correlation_id, status: 200 }));
  t.same(v, { kind: 'ignored', why: 'late_reply' }, 'even with a bad-frame limit of 0, a late reply does not close');
  t.match(logs(), /after the budget/);
});

t.test(
  'events: no reply expected, acked once the frame is written; a failed write is a connection error',
  async (t) => {
    const { sessions, transport } = setup();
    const c = fakeConn('app_1');
    sessions.add(c);
    const ev = {
      messageType: 'PUMBLE_EVENT',
      eventType: 'NEW_MESSAGE',
      workspaceId: 'ws',
      workspaceUserIds: [],
      body: '{}',
    };
    const r = await transport.send(req({ interactive: false, payload: ev, budgetMs: 10_000 }));
    t.equal(r.outcome, 'acked');
    t.same(must(c.sent[0]).payload, ev);
    c.failWrites(true);
    const r2 = await transport.send(req({ interactive: false, payload: ev }));
    t.equal(r2.outcome, 'connection_error');
  },
);

t.test('a connection that closes while a reply is awaited fails the attempt at once', async (t) => {
  const { sessions, transport } = setup();
  const c = fakeConn('app_1');
  sessions.add(c);
  const p = transport.send(req());
  await lastFrame(c);
  sessions.remove(c);
  const r = await p;
  t.equal(r.outcome, 'connection_error', 'while the clock stood still: at once, not at the 3 s budget');
  t.match(r.error, /closed before the app answered/);
});

t.test('connections are capped per app and deliveries go round robin', async (t) => {
  const { sessions, transport } = setup({ socketMaxConnectionsPerApp: 3 });
  const conns = [fakeConn('app_1'), fakeConn('app_1'), fakeConn('app_1')];
  for (const c of conns) t.same(sessions.add(c), { ok: true });
  const over = sessions.add(fakeConn('app_1'));
  t.match(over, { ok: false, code: 1008, reason: /at most 3 open connections per app/ });
  t.same(sessions.add(fakeConn('app_2')), { ok: true }, 'the cap is per app');
  t.equal(sessions.count('app_1'), 3);
  const ev = { messageType: 'PUMBLE_EVENT' };
  for (let i = 0; i < 9; i++) await transport.send(req({ interactive: false, payload: ev }));
  t.same(
    conns.map((c) => c.sent.length),
    [3, 3, 3],
    'spread evenly',
  );
  sessions.remove(must(conns[1]));
  t.equal(await transport.connections('app_1'), 2);
  for (let i = 0; i < 4; i++) await transport.send(req({ interactive: false, payload: ev }));
  t.same(
    conns.map((c) => c.sent.length),
    [5, 3, 5],
    'a closed connection gets nothing more',
  );
  (conns[0] as SocketConn).isOpen = () => false;
  for (let i = 0; i < 3; i++) await transport.send(req({ interactive: false, payload: ev }));
  t.same(
    conns.map((c) => c.sent.length),
    [5, 3, 8],
    'a closing connection is skipped',
  );
  (conns[2] as SocketConn).isOpen = () => false;
  t.match(await transport.send(req()), { outcome: 'no_connection' }, 'only closing connections left: no_connection');
});

t.test('frames: ping → pong; malformed and unknown ids are ignored; a flood is reported', async (t) => {
  const { sessions, clock } = setup({ socketBadFrameLimit: 5, socketBadFrameWindowMs: 10_000 });
  const c = fakeConn('app_1');
  sessions.add(c);
  t.same(sessions.handleFrame(c, 'ping'), { kind: 'pong' });
  t.same(sessions.handleFrame(c, '{not json'), { kind: 'ignored', why: 'malformed' });
  t.same(sessions.handleFrame(c, '[1,2]'), { kind: 'ignored', why: 'malformed' });
  t.same(
    sessions.handleFrame(c, JSON.stringify({ status: 200 })),
    { kind: 'ignored', why: 'malformed' },
    'no correlation id',
  );
  t.same(
    sessions.handleFrame(c, JSON.stringify({ correlation_id: 'cor_x', status: '200' })),
    { kind: 'ignored', why: 'malformed' },
    'status not a number',
  );
  t.same(sessions.handleFrame(c, JSON.stringify({ correlation_id: 'cor_nobody', status: 200 })), {
    kind: 'ignored',
    why: 'unknown_correlation_id',
  });
  await clock.advance(10_001);
  t.same(sessions.handleFrame(c, 'x'), { kind: 'ignored', why: 'malformed' }, 'old bad frames leave the window');
  for (let i = 0; i < 4; i++) sessions.handleFrame(c, 'x');
  t.same(sessions.handleFrame(c, 'x'), { kind: 'flood' }, 'the 6th bad frame within the window is a flood');
});

t.test('onConnect fires after the connection is usable; onAnyClose once it is forgotten', async (t) => {
  const { sessions, transport } = setup();
  const seen: string[] = [];
  const off = sessions.onConnect('app_1', () => seen.push(`app_1:${sessions.count('app_1')}`));
  const offAny = sessions.onAnyConnect((id) => seen.push(`any:${id}`));
  const offClose = sessions.onAnyClose((id) => seen.push(`closed:${id}:${sessions.count(id)}`));
  const first = fakeConn('app_1');
  sessions.add(first);
  sessions.add(fakeConn('app_2'));
  off();
  sessions.add(fakeConn('app_1'));
  offAny();
  sessions.add(fakeConn('app_1'));
  sessions.remove(first);
  offClose();
  sessions.remove(first);
  t.same(seen, ['app_1:1', 'any:app_1', 'any:app_2', 'any:app_1', 'closed:app_1:2']);
  t.equal(await transport.connections('app_1'), 2, 'the transport counts the same (one daemon: its own connections)');
});
