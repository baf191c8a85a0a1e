import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import t from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { textFrame, tickBatcher } from '../../src/server/socket-writes.js';
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
  const binary: boolean[] = [];
  client.on('message', (d, isBinary) => {
    got.push(String(d));
    binary.push(isBinary);
  });
  const side = await accepted;
  await new Promise<void>((r) => (client.readyState === client.OPEN ? r() : client.once('open', () => r())));
  t.teardown(async () => {
    client.terminate();
    side.ws.terminate();
    wss.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { ...side, got, binary };
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

t.test(
  'textFrame: one buffer a ws client reads as the same text frame, at every length the header encodes',
  async (t) => {
    const { socket, writes, got, binary } = await pair(t);
    // 0, 1 and 125 bytes: the length in the header's second byte; 126 and 65,535: in 16 bits; 65,536 and more: 64 bits
    const texts = [
      '',
      'x',
      'a'.repeat(125),
      'b'.repeat(126),
      'é'.repeat(63), // 126 bytes in 63 characters: the length counts UTF-8 bytes
      'c'.repeat(65_535),
      'd'.repeat(65_536),
      '{"payload":{"text":"héllo ✓ 🎉"},"correlation_id":"cor_1"}',
      'e'.repeat(200_000),
    ];
    for (const text of texts) {
      const bytes = Buffer.byteLength(text);
      t.equal(
        textFrame(text).length - bytes,
        bytes < 126 ? 2 : bytes < 65_536 ? 4 : 10,
        `the header of ${bytes} bytes`,
      );
    }
    const before = writes();
    for (const text of texts) socket.write(textFrame(text));
    await until(() => got.length === texts.length);
    t.same(got, texts, 'every frame read back as its text, in order');
    t.same(
      binary,
      texts.map(() => false),
      'as text frames',
    );
    t.equal(writes() - before, texts.length, 'each frame one write (not a writev of header and text)');
  },
);
