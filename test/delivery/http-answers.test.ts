import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createHttpTransport } from '../../src/delivery/http-transport.js';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { signature } from '../../src/delivery/sign.js';
import type { SendRequest } from '../../src/delivery/types.js';
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

/** An answer in a modal's shape; a request to /hang is never answered. */
const MODAL = JSON.stringify({ view: { type: 'MODAL' } });
const modalOrHang = (res: http.ServerResponse) => {
  if (res.req.url !== '/hang') res.writeHead(200, { 'content-type': 'application/json' }).end(MODAL);
};

/** An attempt of `{"a":1}` signed with "secret". */
const attemptTo = (url: string | undefined, interactive: boolean, budgetMs = 3000): SendRequest => ({
  deliveryId: 'dlv_1',
  attemptId: 'att_1',
  app,
  url,
  payload: { a: 1 },
  rawPayload: '{"a":1}',
  interactive,
  budgetMs,
  retryNum: 0,
  signingSecret: 'secret',
});

const signedRight = (t: Tap.Test, signed: { timestamp: string; signature: string } | undefined, what: string) =>
  t.equal(signed?.signature, signature('secret', signed?.timestamp ?? '', '{"a":1}'), `${what}: signed as sent`);

t.test('a modal-shaped answer: a response to an interactive call, an ack of an event; both signed', async (t) => {
  const r = await receiver(t, modalOrHang);
  const interactive = await r.transport.send(attemptTo(`${r.url}/slash`, true));
  t.equal(interactive.outcome, 'response');
  signedRight(t, interactive.signed, 'interactive');
  const event = await r.transport.send(attemptTo(`${r.url}/events`, false));
  t.equal(event.outcome, 'acked', "an event's 2xx is an ack whatever its shape");
  t.same(event.body, JSON.parse(MODAL), 'its body kept');
  signedRight(t, event.signed, 'event');
});

t.test('a timeout and a refused target carry the signature too; no URL and the probe POST carry none', async (t) => {
  const r = await receiver(t, modalOrHang);
  const pending = r.transport.send(attemptTo(`${r.url}/hang`, true, 500));
  await r.clock.advance(500);
  const timedOut = await pending;
  t.equal(timedOut.outcome, 'timeout');
  signedRight(t, timedOut.signed, 'timeout');
  const refused = await r.transport.send(attemptTo('http://10.0.0.1/x', false));
  t.equal(refused.outcome, 'egress_denied');
  signedRight(t, refused.signed, 'egress denied');
  const bad = await r.transport.send(attemptTo('not a url', true));
  t.equal(bad.outcome, 'connection_error');
  signedRight(t, bad.signed, 'invalid URL');
  const none = await r.transport.send(attemptTo(undefined, true));
  t.match(none, { outcome: 'connection_error', error: 'the app has no URL for this kind of call' });
  t.equal(none.signed, undefined, 'nothing sent, nothing signed');
  const probe = await r.transport.post(`${r.url}/slash`, '{}', { 'x-extra': '1' }, 3000);
  t.equal(probe.outcome, 'response', 'the probe reads the answer as it is');
  t.equal(probe.signed, undefined, 'the probe carries no signature record');
});
