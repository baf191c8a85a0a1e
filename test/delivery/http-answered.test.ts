// How the HTTP transport answers an attempt (http-transport.ts `answered`): every signed attempt carries the
// signature headers it was sent with, whatever its outcome (an answer, a timeout, a target refused before sending);
// an event's 2xx in a modal's shape is an ack, an interactive call's is a response; the signature probe's raw POST
// and an attempt without a URL carry none.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createHttpTransport } from '../../src/delivery/http-transport.js';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { signature } from '../../src/delivery/sign.js';
import type { SendRequest } from '../../src/delivery/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import { createTestClock } from '../helpers/test-clock.js';

const app = { id: 'app_1', manifest: { socketMode: false } } as unknown as AppRecord;
const MODAL = JSON.stringify({ view: { type: 'MODAL' } });

async function setUp(t: Tap.Test) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hang') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' }).end(MODAL);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const clock = createTestClock();
  const transport = createHttpTransport({
    clock,
    egress: createEgressPolicy({ host: '127.0.0.1', egressDenyPrivate: false, egressAllow: '' }),
    maxResponseBytes: 4096,
  });
  // a second transport whose policy refuses loopback: 127.0.0.1 is refused before anything is sent
  const strict = createHttpTransport({
    clock,
    egress: createEgressPolicy({
      host: '127.0.0.1',
      egressDenyPrivate: true,
      egressAllowLoopback: false,
      egressAllow: '',
    }),
    maxResponseBytes: 4096,
  });
  t.teardown(async () => {
    await transport.close();
    await strict.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, clock, transport, strict };
}

const request = (url: string | undefined, interactive: boolean, budgetMs = 3000): SendRequest => ({
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

t.test('an answer in a modal shape: a response to an interactive call, an ack of an event; both signed', async (t) => {
  const { base, transport } = await setUp(t);
  const interactive = await transport.send(request(`${base}/slash`, true));
  t.equal(interactive.outcome, 'response');
  signedRight(t, interactive.signed, 'interactive');
  const event = await transport.send(request(`${base}/events`, false));
  t.equal(event.outcome, 'acked', "an event's 2xx is an ack whatever its shape");
  t.same(event.body, JSON.parse(MODAL), 'its body kept');
  signedRight(t, event.signed, 'event');
});

t.test('a timeout and a refused target are signed too; no URL and the raw probe POST are not', async (t) => {
  const { base, clock, transport, strict } = await setUp(t);
  const pending = transport.send(request(`${base}/hang`, true, 500));
  await clock.advance(500);
  const timedOut = await pending;
  t.equal(timedOut.outcome, 'timeout');
  signedRight(t, timedOut.signed, 'timeout');
  const refused = await strict.send(request(`${base}/slash`, false));
  t.equal(refused.outcome, 'egress_denied');
  signedRight(t, refused.signed, 'egress denied');
  const bad = await transport.send(request('not a url', true));
  t.equal(bad.outcome, 'connection_error');
  signedRight(t, bad.signed, 'invalid URL');
  const none = await transport.send(request(undefined, true));
  t.match(none, { outcome: 'connection_error', error: 'the app has no URL for this kind of call' });
  t.equal(none.signed, undefined, 'nothing sent, nothing signed');
  const probe = await transport.post(`${base}/slash`, '{}', { 'x-extra': '1' }, 3000);
  t.equal(probe.outcome, 'response', 'the probe reads the answer as it is');
  t.equal(probe.signed, undefined, 'the probe carries no signature record');
});
