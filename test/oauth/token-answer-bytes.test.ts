/**
 * The token endpoint's answers byte for byte, as a client reads them off the socket: the status line,
 * every header in its order, and the body's keys in their order, for a success and for the refusals,
 * several on one kept-alive connection. The endpoint writes its answer itself (routes/oauth-token.ts), so
 * nothing else keeps these bytes as they are.
 */
import net from 'node:net';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { createApp, grant } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

/** One connection to the daemon: send a request, read one whole answer (its head and a body of content-length). */
function connection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buffered = Buffer.alloc(0);
  let waiting: (() => void) | undefined;
  socket.on('data', (c: Buffer) => {
    buffered = Buffer.concat([buffered, c]);
    waiting?.();
  });
  const answer = (): Promise<{ head: string; body: string }> =>
    new Promise((resolve, reject) => {
      const look = () => {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(head)?.[1] ?? NaN);
        if (!(length >= 0)) return reject(new Error(`no content-length in ${head}`));
        if (buffered.length < end + 4 + length) return;
        const body = buffered.subarray(end + 4, end + 4 + length).toString('utf8');
        buffered = buffered.subarray(end + 4 + length);
        waiting = undefined;
        resolve({ head, body });
      };
      waiting = look;
      socket.once('error', reject);
      look();
    });
  return {
    async send(head: string, body: string) {
      socket.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return answer();
    },
    close: () => socket.destroy(),
  };
}

const B = 'bnd7MA4YWxkTrZu0gW';
const form = (parts: Record<string, string>) =>
  Object.entries(parts)
    .map(([k, v]) => `--${B}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('') + `--${B}--\r\n`;
const POST = `POST /oauth2/access HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: multipart/form-data; boundary=${B}`;

/** An answer's head, with the two values that change (the request id and the date) named instead. */
const pinned = (head: string) =>
  head
    .replace(/^x-request-id: [0-9a-f]{16}$/m, 'x-request-id: <id>')
    .replace(/^Date: [A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/m, 'Date: <date>');

const lines = (...l: string[]) => l.join('\r\n');

t.test('the token answers, byte for byte, on one kept-alive connection', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const port = Number(new URL(d.url).port);
  const c = connection(port);
  t.teardown(() => c.close());

  const g = await grant(d, app);
  const ok = await c.send(POST, form({ 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code }));
  t.equal(
    pinned(ok.head),
    lines(
      'HTTP/1.1 200 OK',
      'x-request-id: <id>',
      'x-content-type-options: nosniff',
      'cache-control: no-store',
      'pragma: no-cache',
      'content-type: application/json; charset=utf-8',
      `content-length: ${Buffer.byteLength(ok.body)}`,
      'Date: <date>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=65',
    ),
  );
  const tokens = JSON.parse(ok.body) as Record<string, string>;
  t.same(Object.keys(tokens), ['accessToken', 'userId', 'workspaceId', 'botToken', 'botId'], 'keys in this order');
  t.equal(ok.body, JSON.stringify(tokens), 'no spaces, nothing escaped');

  const refused = await c.send(POST, form({ 'client-id': app.id, 'client-secret': 'wrong', code: g.body.code }));
  t.equal(
    pinned(refused.head),
    lines(
      'HTTP/1.1 401 Unauthorized',
      'x-request-id: <id>',
      'x-content-type-options: nosniff',
      'cache-control: no-store',
      'pragma: no-cache',
      'content-type: application/json; charset=utf-8',
      `content-length: ${Buffer.byteLength(refused.body)}`,
      'Date: <date>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=65',
    ),
  );
  t.same(Object.keys(JSON.parse(refused.body) as object), ['code', 'message']);

  const reused = await c.send(
    POST,
    form({ 'client-id': app.id, 'client-secret': app.clientSecret, code: g.body.code }),
  );
  t.match(pinned(reused.head), /^HTTP\/1\.1 400 Bad Request\r\nx-request-id: <id>\r\n/);
  t.equal(must(JSON.parse(reused.body) as { code: string }).code, 'invalid_grant');

  const ids = [ok, refused, reused].map((a) => must(/^x-request-id: (\w+)$/m.exec(a.head))[1]);
  t.equal(new Set(ids).size, 3, 'each answer its own request id');
});
