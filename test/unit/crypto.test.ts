import t from 'tap';
import {
  newSecret,
  newId,
  safeEqual,
  expectedSecret,
  matchesSecret,
  createSealer,
  deriveKey,
  signJwt,
  verifyJwt,
  hashPassword,
  verifyPassword,
  sha256,
} from '../../src/crypto.js';
import crypto from 'node:crypto';

t.test('secrets carry their prefix and 256 bits of randomness', async (t) => {
  const s = newSecret('acs');
  t.match(s, /^acs_[A-Za-z0-9_-]{43}$/);
  t.equal(Buffer.from(s.slice(4), 'base64url').length, 32);
  t.not(newSecret('acs'), s);
  t.match(newId('app', 32), /^app_[A-Za-z0-9_-]{43}$/);
});

t.test('safeEqual compares exactly, whatever the lengths', async (t) => {
  t.ok(safeEqual('abc', 'abc'));
  t.notOk(safeEqual('abc', 'abd'));
  t.notOk(safeEqual('abc', 'abcd'));
  t.notOk(safeEqual('', 'a'));
});

t.test('matchesSecret answers as safeEqual does, against the expected side hashed once', async (t) => {
  const values = ['', 'a', 'abc', 'abd', 'abcd', 'é✓😀', 'é✓😁', newSecret('acs'), newSecret('acs')];
  for (const expected of values) {
    const once = expectedSecret(expected);
    for (const given of values)
      t.equal(matchesSecret(given, once), safeEqual(given, expected), `${given} / ${expected}`);
  }
  // same digest, another length: never equal (a length is part of what is compared)
  t.notOk(matchesSecret('abc', { ...expectedSecret('abc'), length: 4 }));
});

t.test('sealing round-trips, is randomised and detects tampering', async (t) => {
  const s = createSealer(deriveKey(crypto.randomBytes(32), 'seal'));
  const a = s.seal('hello');
  t.not(a, s.seal('hello'), 'fresh IV each time');
  t.notMatch(a, /hello/);
  t.equal(s.open(a), 'hello');
  const parts = a.split('.');
  parts[2] = Buffer.from('jello').toString('base64url');
  t.throws(() => s.open(parts.join('.')));
  const other = createSealer(deriveKey(crypto.randomBytes(32), 'seal'));
  t.throws(() => other.open(a), 'another key cannot open it');
});

t.test('JWT: signature, expiry and shape are checked', async (t) => {
  const key = crypto.randomBytes(32);
  const tok = signJwt({ sub: 'wu_1', ws: 'ws_1', jti: 'mtk_1', iat: 100, exp: 200 }, key);
  t.equal(tok.split('.').length, 3);
  t.match(verifyJwt(tok, key, 150), { sub: 'wu_1', exp: 200 });
  t.equal(verifyJwt(tok, key, 200), null, 'expired');
  t.equal(verifyJwt(tok, crypto.randomBytes(32), 150), null, 'other key');
  const [h, , s] = tok.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'wu_2', ws: 'ws_1', jti: 'x', iat: 1, exp: 999 })).toString('base64url')}.${s}`;
  t.equal(verifyJwt(forged, key, 150), null, 'changed claims');
  t.equal(verifyJwt('a.b', key, 1), null);
});

t.test('passwords are scrypt hashes that verify only the right password', async (t) => {
  const h = await hashPassword('correct horse');
  t.match(h, /^scrypt\$/);
  t.ok(await verifyPassword('correct horse', h));
  t.notOk(await verifyPassword('wrong horse', h));
  t.equal(sha256('x').length, 43);
});

t.test('sha256 is SHA-256 of the UTF-8 text, base64url: the digests stored records are keyed by', async (t) => {
  // FIPS 180-2's vectors, and a text of several bytes per character: a store written by any version keys alike
  t.equal(
    sha256(''),
    Buffer.from('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'hex').toString('base64url'),
  );
  t.equal(
    sha256('abc'),
    Buffer.from('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'hex').toString('base64url'),
  );
  t.equal(sha256('é✓😀'), crypto.createHash('sha256').update(Buffer.from('é✓😀', 'utf8')).digest('base64url'));
  t.ok(safeEqual('é✓😀', 'é✓😀'));
  t.notOk(safeEqual('é✓😀', 'é✓😁'));
});
