/**
 * Fetching an app's manifest (delivery/manifest-fetch.ts): the body is decoded as UTF-8 once, whole,
 * so a character whose bytes arrive in two chunks is read as itself.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createEgressPolicy } from '../../src/delivery/egress.js';
import { fetchManifest } from '../../src/delivery/manifest-fetch.js';

const egress = createEgressPolicy({
  host: '127.0.0.1',
  egressDenyPrivate: true,
  egressAllow: '',
  egressAllowLoopback: true,
});

/** A server on a free loopback port answering GET /manifest with `chunks`, each written on its own. */
async function serve(t: Tap.Test, chunks: Buffer[]): Promise<string> {
  const server = http.createServer(
    (req, res) =>
      void (async () => {
        if (req.url !== '/manifest') return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'application/json' });
        for (const c of chunks) if (!res.write(c)) await new Promise((r) => res.once('drain', r));
        res.end();
      })().catch((e: unknown) =>
        setImmediate(() => {
          throw e;
        }),
      ),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test(
  'a body of multi-byte characters that arrives in many chunks, split inside characters, keeps every character',
  async (t) => {
    // 700,000 bytes of '€' (3 bytes each): the socket's reads (64 KiB, not a multiple of 3) end inside characters
    const text = '€'.repeat(233_000);
    const body = Buffer.from(JSON.stringify({ description: text }), 'utf8');
    const pieces: Buffer[] = [];
    for (let i = 0; i < body.length; i += 10_000) pieces.push(body.subarray(i, i + 10_000));
    const url = await serve(t, pieces);
    const got = (await fetchManifest(url, egress)) as { description: string };
    t.equal(got.description.length, text.length);
    t.notOk(got.description.includes('\uFFFD'), 'no replacement character');
    t.equal(got.description, text);
  },
);
