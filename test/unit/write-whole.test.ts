/**
 * writeWhole (src/server/respond.ts): an answer's head and body leave in one write of the socket, not
 * as a writev of queued chunks, and the connection stays usable for the next request. The socket's
 * own write methods are counted on the server's side.
 */
import http from 'node:http';
import type net from 'node:net';
import t from 'tap';
import { writeWhole } from '../../src/server/respond.js';

type Counted = net.Socket & { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };

t.test('head and body in one write, twice on one kept-alive connection', async (t) => {
  const calls = { write: 0, writev: 0 };
  const counted = new WeakSet<net.Socket>();
  const server = http.createServer((req, res) => {
    const s = req.socket as Counted;
    if (!counted.has(s)) {
      counted.add(s);
      const write = s._write.bind(s);
      const writev = s._writev.bind(s);
      s._write = (...a) => (calls.write++, write(...a));
      s._writev = (...a) => (calls.writev++, writev(...a));
    }
    req.resume();
    req.on('end', () => writeWhole(res, 200, ['x-a', '1', 'content-length', '7'], '{"b":2}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as net.AddressInfo).port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const get = () =>
    new Promise<{ status: number; a: string | undefined; body: string; socket: net.Socket }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            a: res.headers['x-a'] as string,
            body,
            socket: req.socket as net.Socket,
          }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  const first = await get();
  const second = await get();
  t.same([first.status, first.a, first.body], [200, '1', '{"b":2}']);
  t.same([second.status, second.a, second.body], [200, '1', '{"b":2}']);
  t.equal(first.socket, second.socket, 'the connection was kept');
  t.same(calls, { write: 2, writev: 0 }, 'one write per answer, no writev');
});
