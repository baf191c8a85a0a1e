import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createHttpTransport } from '../../src/delivery/http-transport.js';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { signature } from '../../src/delivery/sign.js';
import type { AppRecord } from '../../src/model/identity.js';
import { createTestClock } from '../helpers/test-clock.js';

/** A receiver on 127.0.0.1 answering each POST with `answer`; it keeps what each request carried. */
async function receiver(t: Tap.Test, answer: (res: http.ServerResponse) => void) {
  const seen: Array<{ rawHeaders: string[]; body: string; url: string | undefined }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ rawHeaders: req.rawHeaders, body, url: req.url });
      answer(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const clock = createTestClock();
  const transport = createHttpTransport({
    clock,
    egress: createEgressPolicy({ host: '127.0.0.1', egressDenyPrivate: true, egressAllow: '' }),
    maxResponseBytes: 4096,
  });
  t.teardown(async () => {
    await transport.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, transport, seen, clock };
}

const app = { id: 'app_1', manifest: { socketMode: false } } as unknown as AppRecord;

t.test('an attempt goes out signed, its headers in their order, the body byte for byte', async (t) => {
  const r = await receiver(t, (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  const body = JSON.stringify({ messageType: 'SLASH_COMMAND', text: 'é → ✓' });
  const sent = await r.transport.send({
    deliveryId: 'dlv_1',
    attemptId: 'att_1',
    app,
    url: `${r.url}/slash?x=1`,
    payload: JSON.parse(body) as Record<string, unknown>,
    rawPayload: body,
    interactive: true,
    budgetMs: 60_000,
    retryNum: 2,
    signingSecret: 'secret',
  });
  t.equal(sent.outcome, 'acked');
  const [req] = r.seen;
  t.equal(req?.url, '/slash?x=1', 'the path and query of the URL');
  t.equal(req?.body, body, 'the exact bytes');
  const headers = req?.rawHeaders ?? [];
  const names = headers.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
  const mine = [
    'content-type',
    'user-agent',
    'x-pumble-request-timestamp',
    'x-pumble-request-signature',
    'x-appreg-delivery-id',
    'x-appreg-retry-num',
  ];
  t.same(
    names.filter((n) => mine.includes(n)),
    mine,
    'the transport sends its headers in this order',
  );
  const value = (n: string) => headers[headers.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === n) + 1];
  const ts = String(r.clock.now());
  t.equal(value('x-pumble-request-timestamp'), ts, "the daemon's clock, in epoch ms");
  t.equal(value('x-pumble-request-signature'), signature('secret', ts, body), 'HMAC of "timestamp:body"');
  t.equal(value('x-appreg-retry-num'), '2');
  t.same(sent.signed, { timestamp: ts, signature: signature('secret', ts, body) }, 'kept on the attempt as sent');
});

t.test('the answer headers kept: lower case, repeats together at their first place, capped and cut', async (t) => {
  const long = 'v'.repeat(600);
  const r = await receiver(t, (res) => {
    res.sendDate = false;
    res.writeHead(200, [
      ['X-First', '1'],
      ['Set-Cookie', 'a=1'],
      ['X-Second', long],
      ['set-cookie', 'b=2'],
      ['Content-Type', 'application/json'],
    ]);
    res.end('{"message":"hi"}');
  });
  const a = await r.transport.post(`${r.url}/e`, '{}', {}, 60_000);
  t.equal(a.outcome, 'acked');
  t.equal(a.message, 'hi');
  t.same(
    a.answerHeaders?.slice(0, 5),
    [
      ['x-first', '1'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['x-second', `${'v'.repeat(512)}…`],
      ['content-type', 'application/json'],
    ],
    'in the order of an object of the headers',
  );

  const many = await receiver(t, (res) => {
    res.sendDate = false;
    res.writeHead(
      200,
      Array.from({ length: 50 }, (_, i) => [`X-H${i}`, String(i)]),
    );
    res.end();
  });
  const b = await many.transport.post(`${many.url}/e`, '{}', {}, 60_000);
  t.equal(b.answerHeaders?.length, 40, 'at most 40');
  t.same(b.answerHeaders?.[39], ['x-h39', '39'], 'the first 40 as they came');

  const numeric = await receiver(t, (res) => {
    res.sendDate = false;
    res.writeHead(200, [
      ['X-A', 'a'],
      ['123', 'n'],
      ['X-A', 'b'],
    ]);
    res.end();
  });
  const c = await numeric.transport.post(`${numeric.url}/e`, '{}', {}, 60_000);
  t.same(
    c.answerHeaders?.slice(0, 3),
    [
      ['123', 'n'],
      ['x-a', 'a'],
      ['x-a', 'b'],
    ],
    'a name that reads as an index first, as an object of the headers lists it',
  );
});

t.test('a URL that cannot be delivered to fails the same way every time', async (t) => {
  const r = await receiver(t, (res) => res.end());
  for (let i = 0; i < 2; i++) {
    t.match(await r.transport.post('not a url', '{}', {}, 1000), {
      outcome: 'connection_error',
      error: 'the target URL is not valid',
    });
    t.match(await r.transport.post('ftp://127.0.0.1/x', '{}', {}, 1000), {
      outcome: 'connection_error',
      error: 'the ftp: scheme is not delivered to',
    });
    t.match(await r.transport.post('http://10.0.0.1/x', '{}', {}, 1000), { outcome: 'egress_denied' });
  }
  t.equal(r.seen.length, 0, 'nothing sent');
});
