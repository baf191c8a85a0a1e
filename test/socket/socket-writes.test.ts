import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { tickBatcher } from '../../src/server/socket-writes.js';
import { until } from '../helpers/until.js';

/** A websocket server on 127.0.0.1 whose sockets count the writes handed to the kernel; one client connected. */
async function pair(t: Tap.Test) {
  const server = http.createServer();
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const accepted = new Promise<{ ws: WebSocket; socket: Duplex; writes: () => number }>((resolve) => {
    server.on('upgrade', (req, socket, head) => {
      let writes = 0;
      // the socket's own write functions, each one system call (or one writev) on a net.Socket
      const s = socket as Duplex & { _write: Duplex['_write']; _writev?: Duplex['_writev'] };
      const write = s._write.bind(s);
      const writev = s._writev?.bind(s);
      s._write = (...a) => {
        writes++;
        write(...a);
      };
      if (writev)
        s._writev = (...a) => {
          writes++;
          writev(...a);
        };
      wss.handleUpgrade(req, socket, head, (ws) => resolve({ ws, socket, writes: () => writes }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  const got: string[] = [];
  client.on('message', (d) => got.push(String(d)));
  const side = await accepted;
  await new Promise<void>((r) => (client.readyState === client.OPEN ? r() : client.once('open', () => r())));
  t.teardown(async () => {
    client.terminate();
    side.ws.terminate();
    wss.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { ...side, got };
}

t.test('frames sent to one socket in one tick go out in one write, in order', async (t) => {
  const { ws, socket, writes, got } = await pair(t);
  const batch = tickBatcher(socket);
  const before = writes();
  for (let i = 0; i < 20; i++) {
    batch();
    ws.send(`frame ${i}`);
  }
  await until(() => got.length === 20);
  t.equal(writes() - before, 1, 'one write for the tick');
  t.same(
    got,
    Array.from({ length: 20 }, (_, i) => `frame ${i}`),
    'every frame arrives, in order',
  );

  // frames of later ticks (each after a promise job) are written too: nothing stays corked
  await Promise.resolve().then(() => {
    batch();
    ws.send('later');
  });
  await until(() => got.length === 21);
  t.equal(got[20], 'later');
});

t.test('without the batcher the same frames take a write each (what it saves)', async (t) => {
  const { ws, writes, got } = await pair(t);
  const before = writes();
  for (let i = 0; i < 20; i++) ws.send(`frame ${i}`);
  await until(() => got.length === 20);
  t.ok(writes() - before > 1, `${writes() - before} writes`);
});
