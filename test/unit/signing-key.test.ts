// The signing key kept per secret (sign.ts): signatures stay those of createHmac with the secret as a string key,
// over generated secrets and bodies (unicode, lone surrogates, empty, Buffers); one key per secret, bounded.
import crypto from 'node:crypto';
import t from 'tap';
import { KEYS_CAP, signature, signingKey } from '../../src/delivery/sign.js';

/** The signature as the spec words it, computed the plain way. */
const plain = (secret: string, ts: string, body: string | Buffer) =>
  crypto.createHmac('sha256', secret).update(ts).update(':').update(body).digest('hex');

/** A deterministic generator of awkward text: ASCII, escapes, BMP, astral, lone surrogates. */
function texts(seed: number, n: number): string[] {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2147483648);
  const pieces = ['a', 'Z', '0', ':', '"', '\\', '\n', '\u0000', 'é', 'ß', '中', '\u{1F600}', '\ud800', '\udfff', ' '];
  const out: string[] = [''];
  for (let i = 1; i < n; i++) {
    let s = '';
    const len = next() % 40;
    for (let j = 0; j < len; j++) s += pieces[next() % pieces.length];
    out.push(s);
  }
  return out;
}

t.test('a kept key signs as the secret string does', async (t) => {
  const secrets = texts(7, 60);
  const bodies = texts(11, 40);
  let checked = 0;
  for (const secret of secrets)
    for (const body of bodies) {
      const ts = String(1_700_000_000_000 + checked);
      if (signature(secret, ts, body) !== plain(secret, ts, body))
        t.fail(`differs for ${JSON.stringify([secret, body])}`);
      const bytes = Buffer.from(body, 'utf8');
      if (signature(secret, ts, bytes) !== plain(secret, ts, bytes)) t.fail('differs for a Buffer body');
      checked++;
    }
  t.equal(checked, 2400, 'every pair checked, with its body as text and as bytes');
});

t.test('one key per secret, made once, bounded', async (t) => {
  const k = signingKey('kept-secret');
  t.equal(signingKey('kept-secret'), k, 'the same key for the same secret');
  t.equal(k.type, 'secret');
  t.same(k.export(), Buffer.from('kept-secret', 'utf8'), "the secret's UTF-8 bytes");
  for (let i = 0; i < KEYS_CAP; i++) signingKey(`other-${i}`);
  t.not(signingKey('kept-secret'), k, 'past the bound the keys are let go (made again when needed)');
  t.equal(signature('kept-secret', '1', 'b'), plain('kept-secret', '1', 'b'));
});
