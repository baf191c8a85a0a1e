import t from 'tap';
import fc from 'fast-check';
import { matchRedirect, withParams } from '../../src/oauth/redirect-urls.js';
import { REGISTERED, REDIRECT_CASES } from '../fixtures/redirects.js';

t.test('the adversarial corpus (docs/security.md §1)', async (t) => {
  t.ok(REDIRECT_CASES.length >= 30, `${REDIRECT_CASES.length} cases`);
  const classes = new Set(REDIRECT_CASES.map((c) => c.klass));
  for (const k of [
    'dot segments',
    'encoded dots',
    'backslashes',
    'encoded slashes',
    'encoded backslashes',
    'sibling path',
    'userinfo',
    'host suffix',
    'query injection',
    'fragment',
    'open redirector',
    'port',
    'default port',
    'dangerous scheme',
    'IPv6',
    'IDN (unicode)',
    'upper-case host',
  ])
    t.ok(classes.has(k), `covers ${k}`);
  for (const c of REDIRECT_CASES) {
    const r = matchRedirect(c.requested, REGISTERED);
    if (c.accept) {
      t.ok(r.ok, `accepts ${c.klass}: ${JSON.stringify(c.requested)}`);
      if (r.ok) t.equal(r.url, c.final);
    } else {
      t.notOk(r.ok, `refuses ${c.klass}: ${JSON.stringify(c.requested.slice(0, 80))}`);
      if (!r.ok) t.match(r.reason, /^redirectUrl /);
    }
  }
});

t.test('non-string input is refused', async (t) => {
  for (const v of [undefined, null, 42, ['https://app.example.com/cb'], {}]) t.notOk(matchRedirect(v, REGISTERED).ok);
});

t.test('M8: code/state are appended with URLSearchParams, the registered query is kept', async (t) => {
  t.equal(
    withParams('https://app.example.com/cb', { code: 'acd_x', state: 'a b&c=d' }),
    'https://app.example.com/cb?code=acd_x&state=a+b%26c%3Dd',
  );
  t.equal(
    withParams('https://app.example.com:8443/x?tenant=1', { code: 'c' }),
    'https://app.example.com:8443/x?tenant=1&code=c',
  );
  t.equal(
    withParams('https://app.example.com/cb', { error: 'access_denied', state: undefined }),
    'https://app.example.com/cb?error=access_denied',
  );
});

// ---- property tests -------------------------------------------------------------------

const hostArb = fc.constantFrom(
  'app.example.com',
  'localhost',
  '127.0.0.1',
  '[::1]',
  'xn--exmple-cua.com',
  'a.b.example',
);
const segArb = fc.stringMatching(/^[a-z0-9_-]{1,6}$/);
const registeredArb = fc
  .record({
    scheme: fc.constantFrom('https:', 'http:'),
    host: hostArb,
    port: fc.constantFrom('', ':8080', ':3000'),
    segs: fc.array(segArb, { minLength: 0, maxLength: 3 }),
  })
  .map(({ scheme, host, port, segs }) => `${scheme}//${host}${port}/${segs.join('/')}`)
  .filter((u) => new URL(u).href === u);

const PIECES = [
  'https://',
  'http://',
  'app.example.com',
  'localhost',
  '[::1]',
  ':8080',
  ':443',
  ':3000',
  '/',
  '//',
  '.',
  '..',
  '%2e',
  '%2f',
  '%5c',
  '\\',
  '@',
  '?',
  '#',
  'code=1',
  '&',
  '=',
  'cb',
  'a',
  'evil.com',
  'x',
  '%20',
  'ä',
  ' ',
  '\t',
  'javascript:',
  ';',
];
const pieceStr = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));

function segmentPrefix(path: string, base: string): boolean {
  return path === base || path.startsWith(base.endsWith('/') ? base : base + '/');
}

t.test(
  'property: every accepted URL has the registered origin and a segment-prefix path under WHATWG parsing',
  async (t) => {
    const requestedArb = (reg: string) =>
      fc.oneof(
        pieceStr,
        pieceStr.map((s) => reg + s),
        pieceStr.map((s) => new URL(reg).origin + s),
        pieceStr.map((s) => '/' + s),
        fc.array(segArb, { maxLength: 3 }).map((segs) => reg + (segs.length ? '/' + segs.join('/') : '')),
      );
    fc.assert(
      fc.property(
        registeredArb.chain((reg) => fc.tuple(fc.constant(reg), requestedArb(reg))),
        ([reg, requested]) => {
          const r = matchRedirect(requested, [reg]);
          if (!r.ok) return true;
          const url = new URL(r.url);
          const base = new URL(reg);
          return (
            url.href === r.url &&
            url.origin === base.origin &&
            url.protocol === base.protocol &&
            segmentPrefix(url.pathname, base.pathname) &&
            !url.username &&
            !url.password &&
            !url.hash &&
            url.search === base.search &&
            // the final Location (with code) still parses to the same origin and path
            new URL(withParams(r.url, { code: 'acd_x', state: 's' })).pathname === url.pathname
          );
        },
      ),
      { numRuns: 5000 },
    );
    t.pass('5000 runs');
  },
);

t.test('property: the registered URL and any plain sub-path of it are accepted', async (t) => {
  fc.assert(
    fc.property(registeredArb, fc.array(segArb, { maxLength: 4 }), (reg, segs) => {
      const base = reg.endsWith('/') ? reg : reg + '/';
      const requested = segs.length ? base + segs.join('/') : reg;
      const r = matchRedirect(requested, [reg]);
      return r.ok && r.url === requested;
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 runs');
});
