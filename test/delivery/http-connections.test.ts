import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createHttpTransport } from '../../src/delivery/http-transport.js';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';

t.test('deliveries to one origin share a bounded set of kept-alive connections', async (t) => {
  let connections = 0;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => held.push(res)); // answered when the test says so
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const transport = createHttpTransport({
    clock: createTestClock(),
    egress: createEgressPolicy({ host: '127.0.0.1', egressDenyPrivate: true, egressAllow: '' }),
    maxResponseBytes: 4096,
    connectionsPerOrigin: 3,
  });
  t.teardown(async () => {
    for (const res of held) res.end();
    await transport.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events/app`;
  const sends = Array.from({ length: 10 }, (_, i) =>
    transport.post(url, JSON.stringify({ n: i }), { 'x-n': String(i) }, 60_000),
  );
  await until(() => held.length === 3);
  t.equal(connections, 3, 'ten deliveries at once open three connections, the bound');
  // answer as they come: the seven waiting go out on the same three connections
  let settled = 0;
  for (const p of sends) void p.then(() => settled++);
  await until(() => {
    for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return settled === 10;
  });
  const results = await Promise.all(sends);
  t.same(
    results.map((r) => r.outcome),
    Array(10).fill('acked'),
    'every one delivered',
  );
  t.equal(connections, 3, 'no new connection opened for the ones that waited');
});
