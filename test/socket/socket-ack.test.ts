/**
 * The plain ack read without a parse (src/services/socket-ack.ts): every text it accepts is JSON
 * that parses to exactly the id and status it reads, every ack the official SDK writes is accepted,
 * and a reply reaches its attempt the same whichever way it was read.
 */
import t from 'tap';
import { ACK_ID_START, ackStatus, plainAckEnd } from '../../src/services/socket-ack.js';
import type { ReplyWaiter, SocketConn, SocketReply } from '../../src/delivery/socket-connections.js';
import { createTestClock } from '../helpers/test-clock.js';
import { quietSessions } from '../helpers/quiet-sessions.js';

/** A small deterministic generator (the same texts every run). */
function random(seed: number) {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x / 0x80000000;
  };
}

const PIECES = [
  'a',
  'Z',
  '0',
  '_',
  '-',
  '"',
  '\\',
  '\\"',
  '\n',
  '\u0001',
  '\u001f',
  ' ',
  'é',
  '✓',
  '🎉',
  '\ud800',
  '}',
  ',',
];
const STATUSES = [
  '200',
  '404',
  '100',
  '999',
  '0',
  '7',
  '42',
  '99',
  '1000',
  '0200',
  '020',
  '-200',
  '200.5',
  '2e2',
  '"200"',
  ' 200',
  '200 ',
  'null',
];

t.test('what it accepts parses to exactly what it reads; what the SDK writes, it accepts', async (t) => {
  const next = random(36);
  const pick = <T>(a: T[]) => a[Math.floor(next() * a.length)] as T;
  let accepted = 0;
  let checked = 0;
  for (let n = 0; n < 20_000; n++) {
    const id = Array.from({ length: Math.floor(next() * 6) }, () => pick(PIECES)).join('');
    const status = pick(STATUSES);
    let text = `{"correlation_id":"${id}","status":${status}}`;
    // one byte changed, removed or added here and there
    const cut = Math.floor(next() * text.length);
    const r = next();
    if (r < 0.2) text = text.slice(0, cut) + text.slice(cut + 1);
    else if (r < 0.4) text = text.slice(0, cut) + pick(PIECES) + text.slice(cut);
    const end = plainAckEnd(text);
    checked++;
    if (end < 0) continue;
    accepted++;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      t.fail(`accepted a text that is not JSON: ${JSON.stringify(text)}`);
      continue;
    }
    const read = { correlation_id: text.slice(ACK_ID_START, end), status: ackStatus(text) };
    if (JSON.stringify(parsed) !== JSON.stringify(read) || read.correlation_id.length === 0)
      t.fail(`${JSON.stringify(text)}: read ${JSON.stringify(read)}, parsed ${JSON.stringify(parsed)}`);
  }
  t.ok(accepted > 500, `${accepted} of ${checked} generated texts accepted, each equal to its parse`);

  // the SDK's acks: JSON.stringify of the id and a three-digit status
  for (const id of ['cor_AbC-_9.x_1z', 'x', 'é✓🎉', 'a b', "it's"])
    for (const status of [100, 200, 404, 500, 999]) {
      const text = JSON.stringify({ correlation_id: id, status });
      const end = plainAckEnd(text);
      t.equal(text.slice(ACK_ID_START, end), id, text);
      t.equal(ackStatus(text), status);
    }
  // read by the parse instead (not plain): escapes, other order, more fields, spaces, no status
  for (const text of [
    JSON.stringify({ correlation_id: 'a"b', status: 200 }),
    JSON.stringify({ correlation_id: 'a\nb', status: 200 }),
    JSON.stringify({ status: 200, correlation_id: 'x' }),
    JSON.stringify({ correlation_id: 'x', status: 200, message: 'hi' }),
    '{"correlation_id": "x", "status": 200}',
    '{"correlation_id":"x"}',
    '{"correlation_id":"","status":200}',
    '{"correlation_id":"x","status":200}\n',
  ])
    t.equal(plainAckEnd(text), -1, text);
});

t.test('a reply reaches its attempt the same whether read plainly or parsed', async (t) => {
  const clock = createTestClock(0);
  const sessions = quietSessions(clock);
  const conn: SocketConn = { id: 'sck_1', appId: 'app_1', send: () => {}, close: () => {} };
  sessions.add(conn);
  const replyOf = (cid: string, text: string) => {
    let got: SocketReply | undefined;
    const waiter: ReplyWaiter = { conn, reply: (r) => (got = r), gone: () => t.fail('gone') };
    sessions.expectReply(cid, waiter);
    t.same(sessions.handleFrame(conn, text), { kind: 'reply' });
    return got;
  };
  const plain = replyOf('cor_1', '{"correlation_id":"cor_1","status":404}');
  const parsed = replyOf('cor_2', '{"status":404,"correlation_id":"cor_2"}');
  t.same(
    { ...plain, correlationId: '', excerpt: '' },
    { ...parsed, correlationId: '', excerpt: '' },
    'the same reply but for its id and text',
  );
  t.match(plain, {
    correlationId: 'cor_1',
    status: 404,
    hasBody: false,
    excerpt: '{"correlation_id":"cor_1","status":404}',
  });
  t.equal(plain?.message, undefined);
  // an unknown id read plainly is still a bad frame, counted as such
  t.same(sessions.handleFrame(conn, '{"correlation_id":"cor_9","status":200}'), {
    kind: 'ignored',
    why: 'unknown_correlation_id',
  });
});
