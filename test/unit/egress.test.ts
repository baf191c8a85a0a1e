/**
 * The egress policy (docs/security.md §5 D3). Only check() and lookup() are called: nothing here
 * sends traffic to any address, and the only real name resolved is `localhost` (no network).
 */
import dns from 'node:dns';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createEgressPolicy, EgressDenied, type EgressConfig, type EgressPolicy } from '../../src/delivery/egress.js';
import { loadConfig } from '../../src/config.js';

const policy = (over: Partial<EgressConfig> = {}) =>
  createEgressPolicy({ host: '127.0.0.1', egressDenyPrivate: true, egressAllow: '', ...over });

/** A sample address in every special-purpose range, with the range name the refusal gives. */
const SPECIAL_V4: Array<[string, string, string]> = [
  ['0.1.2.3', 'unspecified', '0.0.0.0/8 "this network"'],
  ['0.0.0.0', 'unspecified', '0.0.0.0/32'],
  ['10.0.0.5', 'private', '10.0.0.0/8'],
  ['100.64.0.1', 'carrierGradeNat', '100.64.0.0/10 shared address space'],
  ['100.127.255.254', 'carrierGradeNat', '100.64.0.0/10, top'],
  ['169.254.169.254', 'linkLocal', '169.254.0.0/16, the cloud metadata address'],
  ['172.16.0.1', 'private', '172.16.0.0/12'],
  ['172.31.255.254', 'private', '172.16.0.0/12, top'],
  ['192.0.0.8', 'reserved', '192.0.0.0/24 IETF protocol assignments'],
  ['192.0.0.170', 'reserved', '192.0.0.170/31 NAT64 discovery'],
  ['192.0.2.1', 'reserved', '192.0.2.0/24 TEST-NET-1'],
  ['192.31.196.1', 'as112', '192.31.196.0/24 AS112-v4'],
  ['192.52.193.1', 'amt', '192.52.193.0/24 AMT'],
  ['192.88.99.1', 'reserved', '192.88.99.0/24 deprecated 6to4 relay anycast'],
  ['192.168.1.1', 'private', '192.168.0.0/16'],
  ['192.175.48.1', 'as112', '192.175.48.0/24 direct delegation AS112'],
  ['198.18.0.1', 'reserved', '198.18.0.0/15 benchmarking'],
  ['198.19.255.254', 'reserved', '198.18.0.0/15 benchmarking, top'],
  ['198.51.100.7', 'reserved', '198.51.100.0/24 TEST-NET-2'],
  ['203.0.113.9', 'reserved', '203.0.113.0/24 TEST-NET-3'],
  ['224.0.0.251', 'multicast', '224.0.0.0/4 multicast'],
  ['239.255.255.250', 'multicast', '224.0.0.0/4 multicast, top'],
  ['240.0.0.1', 'reserved', '240.0.0.0/4 reserved'],
  ['254.1.2.3', 'reserved', '240.0.0.0/4 reserved, high'],
  ['255.255.255.255', 'broadcast', 'limited broadcast'],
];

const SPECIAL_V6: Array<[string, string, string]> = [
  ['::', 'unspecified', '::/128'],
  ['::ffff:0:a00:1', 'rfc6145', '::ffff:0:0:0/96 IPv4-translated'],
  ['100::1', 'discard', '100::/64 discard-only'],
  ['100:0:0:1::1', 'outside2000::/3', '100:0:0:1::/64 dummy prefix'],
  ['64:ff9b:1:1::a00:1', 'rfc6052', '64:ff9b:1::/48 local-use NAT64 with subnet bits (layout unknown)'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo', '2001::/32 Teredo'],
  ['2001:1::1', 'reserved', '2001::/23 IETF protocol assignments (PCP anycast)'],
  ['2001:2::1', 'benchmarking', '2001:2::/48 benchmarking'],
  ['2001:3::1', 'amt', '2001:3::/32 AMT'],
  ['2001:4:112::1', 'as112v6', '2001:4:112::/48 AS112-v6'],
  ['2001:10::1', 'deprecatedOrchid', '2001:10::/28 ORCHID'],
  ['2001:20::1', 'orchid2', '2001:20::/28 ORCHIDv2'],
  ['2001:30::1', 'droneRemoteIdProtocolEntityTags', '2001:30::/28 drone remote ID'],
  ['2001:db8::1', 'reserved', '2001:db8::/32 documentation'],
  ['2620:4f:8000::1', 'as112v6', '2620:4f:8000::/48 direct delegation AS112'],
  ['3fff::1', 'reserved', '3fff::/20 documentation'],
  ['5f00::1', 'segmentRouting', '5f00::/16 SRv6 SIDs'],
  ['fc00::1', 'uniqueLocal', 'fc00::/7 unique-local'],
  ['fd12:3456:789a::1', 'uniqueLocal', 'fc00::/7 unique-local (fd00::/8)'],
  ['fe80::1', 'linkLocal', 'fe80::/10 link-local'],
  ['fe80::1%eth0', 'linkLocal', 'fe80::/10 link-local with a zone'],
  ['fec0::1', 'deprecatedSiteLocal', 'fec0::/10 site-local'],
  ['ff02::1', 'multicast', 'ff00::/8 multicast'],
  ['ff0e::1', 'multicast', 'ff00::/8 global-scope multicast'],
  ['4000::1', 'outside2000::/3', 'not allocated for global unicast'],
  ['e000::1', 'outside2000::/3', 'not allocated for global unicast'],
];

const GLOBAL = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '192.0.3.1',
  '100.128.0.1',
  '172.32.0.1',
  '169.255.0.1',
  '198.20.0.1',
  '223.255.255.254',
  '126.255.255.255',
  '128.0.0.1',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001::1',
  '2001:200::1',
  '2c0f:f248::1',
];

/** The IPv4 address inside every form that embeds one. */
function embeddings(v4: string): Array<[string, string]> {
  const o = v4.split('.').map(Number) as [number, number, number, number];
  const a = ((o[0] << 8) | o[1]).toString(16);
  const b = ((o[2] << 8) | o[3]).toString(16);
  return [
    ['IPv4-mapped', `::ffff:${v4}`],
    ['IPv4-mapped', `::ffff:${a}:${b}`],
    ['IPv4-compatible', `::${v4}`],
    ['IPv4-compatible', `::${a}:${b}`],
    ['NAT64', `64:ff9b::${v4}`],
    ['NAT64', `64:ff9b::${a}:${b}`],
    ['NAT64', `64:ff9b:1::${a}:${b}`],
    ['6to4', `2002:${a}:${b}::1`],
    ['6to4', `2002:${a}:${b}:7:0:5efe:c000:201`],
  ];
}

/** The `egressAllow=…` a refusal proposes. */
const proposed = (why: string | undefined) => /egressAllow=(\S+)$/.exec(why ?? '')?.[1];

t.test('every IPv4 and IPv6 special-purpose range is refused, naming the range and the setting', async (t) => {
  const p = policy();
  for (const [ip, range, what] of [...SPECIAL_V4, ...SPECIAL_V6]) {
    t.equal(
      p.check(ip),
      `${range === 'private' ? 'private' : 'special-purpose'} address ${ip} (range ${range}) is not allowed by the egress policy; allow it with egressAllow=${ip}`,
      `${ip}: ${what}`,
    );
  }
});

t.test('ordinary global unicast is allowed', async (t) => {
  const p = policy({ host: '0.0.0.0' });
  for (const ip of GLOBAL) t.equal(p.check(ip), undefined, ip);
});

t.test('the refusal names the setting (item 30): the exact sentences', async (t) => {
  t.equal(
    policy().check('10.0.0.5'),
    'private address 10.0.0.5 (range private) is not allowed by the egress policy; allow it with egressAllow=10.0.0.5',
  );
  t.equal(
    policy({ host: '0.0.0.0' }).check('127.0.0.1'),
    'loopback address 127.0.0.1 is not allowed when the daemon listens on 0.0.0.0; allow it with egressAllowLoopback=true',
  );
  t.equal(
    policy({ egressAllowLoopback: false }).check('::1'),
    'loopback address ::1 is not allowed (egressAllowLoopback=false); allow it with egressAllowLoopback=true',
  );
  t.equal(
    policy().check('intranet.example'),
    'intranet.example is not an IP address',
    'a name given to check() is refused, not waved through',
  );
});

t.test('following the advice works: the proposed egressAllow entry allows exactly that address', async (t) => {
  for (const ip of [...[...SPECIAL_V4, ...SPECIAL_V6].map(([ip]) => ip), '64:ff9b::a9fe:a9fe', '2002:a00:1::1']) {
    t.ok(policy().check(ip), `${ip} refused at first`);
    const entry = proposed(policy().check(ip));
    t.equal(policy({ egressAllow: entry ?? '' }).check(ip), undefined, `${ip} allowed by egressAllow=${entry}`);
  }
  t.ok(policy({ egressAllow: '10.0.0.5' }).check('10.0.0.6'), 'the neighbour stays refused');
});

t.test('embedded IPv4 forms are judged by the IPv4 address they carry', async (t) => {
  const p = policy();
  for (const [v4, range] of [
    ['10.0.0.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['192.0.0.8', 'reserved'],
    ['100.64.1.1', 'carrierGradeNat'],
    ['0.0.0.7', 'unspecified'],
  ] as const) {
    for (const [form, ip] of embeddings(v4))
      t.match(p.check(ip), `(range ${range}, ${form} form of ${v4}) is not allowed`, `${form} ${ip}`);
  }
  for (const v4 of ['8.8.8.8', '93.184.216.34']) {
    for (const [form, ip] of embeddings(v4)) t.equal(p.check(ip), undefined, `${form} ${ip} of a public address`);
  }
  // ipaddr.js reads "::a.b.c.d" as IPv4-mapped; it is the IPv4-compatible form and named so
  t.match(p.check('::10.0.0.1'), 'IPv4-compatible form of 10.0.0.1');
  // with words 3–5 zero, every RFC 6052 layout of 64:ff9b:1::/48 lands on the last 32 bits or in 0.0.0.0/8
  t.match(p.check('64:ff9b:1:0:0:0:a9fe:a9fe'), 'NAT64 form of 169.254.169.254');
});

t.test('embedded loopback forms follow the loopback rule', async (t) => {
  const shared = policy({ host: '0.0.0.0' });
  const laptop = policy({ host: '127.0.0.1' });
  for (const [form, ip] of embeddings('127.0.0.1')) {
    t.match(
      shared.check(ip),
      `loopback address ${ip} (${form} form of 127.0.0.1) is not allowed when the daemon listens on 0.0.0.0; allow it with egressAllowLoopback=true`,
      `${form} ${ip} refused on a shared host`,
    );
    t.equal(laptop.check(ip), undefined, `${form} ${ip} allowed on a laptop`);
  }
  t.match(shared.check('127.8.9.10'), /^loopback address 127\.8\.9\.10 /, 'all of 127.0.0.0/8');
});

t.test('egressAllow: single addresses and CIDR ranges, IPv4 and IPv6', async (t) => {
  const p = policy({
    host: '0.0.0.0',
    egressAllow: '10.0.0.5, 192.168.0.0/16, fd00::5, fe80::/64, 100.64.0.0/10, 127.0.0.1',
  });
  t.equal(p.check('10.0.0.5'), undefined, 'IPv4 address');
  t.match(p.check('10.0.0.6'), /range private/, 'its neighbour');
  t.equal(p.check('192.168.200.1'), undefined, 'IPv4 CIDR');
  t.equal(p.check('fd00::5'), undefined, 'IPv6 address');
  t.match(p.check('fd00::6'), /range uniqueLocal/, 'its neighbour');
  t.equal(p.check('fe80::abcd'), undefined, 'IPv6 CIDR');
  t.equal(p.check('fe80::abcd%eth0'), undefined, 'IPv6 CIDR, with a zone');
  t.match(p.check('fe80:0:0:1::1'), /range linkLocal/, 'outside the IPv6 CIDR');
  t.equal(p.check('::ffff:10.0.0.5'), undefined, 'an allowed IPv4 address in its mapped form');
  t.equal(p.check('64:ff9b::100.64.7.7'), undefined, 'an allowed IPv4 range in NAT64 form');
  t.equal(p.check('127.0.0.1'), undefined, 'an allow-listed loopback address');
  t.match(p.check('127.0.0.2'), /loopback/, 'other loopback addresses keep the loopback rule');
  t.throws(() => policy({ egressAllow: '10.0.0.0/33' }), /egressAllow/);
});

t.test('egressDenyPrivate=false turns the special-range refusal off, not the loopback rule', async (t) => {
  const p = policy({ host: '0.0.0.0', egressDenyPrivate: false });
  for (const [ip, range] of [...SPECIAL_V4, ...SPECIAL_V6])
    if (range !== 'unspecified') t.equal(p.check(ip), undefined, ip);
  t.equal(p.check('64:ff9b::a9fe:a9fe'), undefined, 'NAT64 of the metadata address');
  t.match(p.check('127.0.0.1'), /egressAllowLoopback=true/);
  t.match(p.check('::1'), /egressAllowLoopback=true/);
  // connecting to 0.0.0.0 or :: reaches this host: the loopback rule still holds for them
  t.equal(
    p.check('0.0.0.0'),
    'unspecified address 0.0.0.0 connects to this host, and loopback is not allowed when the daemon listens on 0.0.0.0; allow it with egressAllowLoopback=true',
  );
  t.match(p.check('::'), /^unspecified address :: connects to this host/);
  t.match(
    p.check('::ffff:0.0.0.0'),
    /^unspecified address ::ffff:0\.0\.0\.0 \(IPv4-mapped form of 0\.0\.0\.0\) connects to this host/,
  );
  const laptop = policy({ host: 'localhost', egressDenyPrivate: false });
  t.same(
    [laptop.check('0.0.0.0'), laptop.check('::')],
    [undefined, undefined],
    'on a loopback daemon they are allowed',
  );
});

t.test('loopback default: allowed only when the daemon listens on a loopback address', async (t) => {
  for (const host of ['127.0.0.1', '127.0.1.1', '::1', '[::1]', 'localhost', 'LocalHost']) {
    const p = policy({ host });
    t.same([p.check('127.0.0.1'), p.check('::1')], [undefined, undefined], `listening on ${host}: allowed`);
  }
  for (const host of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.2', 'fe80::1', 'appreg.example.com']) {
    const p = policy({ host });
    t.same(
      [p.check('127.0.0.1'), p.check('::1')],
      [
        `loopback address 127.0.0.1 is not allowed when the daemon listens on ${host}; allow it with egressAllowLoopback=true`,
        `loopback address ::1 is not allowed when the daemon listens on ${host}; allow it with egressAllowLoopback=true`,
      ],
      `listening on ${host}: refused`,
    );
  }
  t.equal(
    policy({ host: '0.0.0.0', egressAllowLoopback: true }).check('127.0.0.1'),
    undefined,
    'explicit true on a shared host',
  );
  t.match(
    policy({ host: '127.0.0.1', egressAllowLoopback: false }).check('127.0.0.1'),
    /\(egressAllowLoopback=false\)/,
    'explicit false on a laptop',
  );
  t.match(
    createEgressPolicy({ egressDenyPrivate: true, egressAllow: '' }).check('127.0.0.1'),
    /listens on an unknown address/,
    'no host given: refused',
  );
});

t.test('egressAllowLoopback loads from file, environment and flags; unset by default', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-egress-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const def = loadConfig({ dataDir: dir }, {});
  t.equal(def.egressAllowLoopback, undefined);
  t.equal(createEgressPolicy(def).check('127.0.0.1'), undefined, 'the default host 127.0.0.1 allows loopback');
  t.match(
    createEgressPolicy(loadConfig({ dataDir: dir, host: '0.0.0.0' }, {})).check('127.0.0.1'),
    /listens on 0\.0\.0\.0/,
  );
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ host: '0.0.0.0', egressAllowLoopback: true }));
  t.equal(loadConfig({ dataDir: dir }, {}).egressAllowLoopback, true, 'file');
  t.equal(
    loadConfig({ dataDir: dir }, { APPREG_EGRESS_ALLOW_LOOPBACK: 'false' }).egressAllowLoopback,
    false,
    'env over file',
  );
  t.equal(
    loadConfig({ dataDir: dir, egressAllowLoopback: 'true' }, { APPREG_EGRESS_ALLOW_LOOPBACK: 'false' })
      .egressAllowLoopback,
    true,
    'flag over env',
  );
  t.throws(
    () => loadConfig({ dataDir: dir }, { APPREG_EGRESS_ALLOW_LOOPBACK: 'maybe' }),
    /egressAllowLoopback must be true or false/,
  );
});

function resolve(
  p: EgressPolicy,
  name: string,
  options: dns.LookupOptions = {},
): Promise<{ err: Error | null; address: unknown; family?: number }> {
  return new Promise((done) => p.lookup(name, options, (err, address, family) => done({ err, address, family })));
}

t.test('lookup: localhost under a 0.0.0.0 daemon is refused, under a loopback daemon allowed', async (t) => {
  const shared = await resolve(policy({ host: '0.0.0.0' }), 'localhost');
  t.ok(shared.err instanceof EgressDenied, 'EgressDenied');
  t.match(
    shared.err?.message,
    /^localhost: loopback address (127\.0\.0\.1|::1) is not allowed when the daemon listens on 0\.0\.0\.0; allow it with egressAllowLoopback=true$/,
  );
  const laptop = await resolve(policy({ host: '127.0.0.1' }), 'localhost');
  t.equal(laptop.err, null);
  t.match(String(laptop.address), /^(127\.0\.0\.1|::1)$/);
});

t.test('lookup: resolved once, every address checked, only a checked address is handed to connect', async (t) => {
  const answers: Record<string, dns.LookupAddress[]> = {
    'mixed.test': [
      { address: '10.0.0.1', family: 4 },
      { address: '64:ff9b::a9fe:a9fe', family: 6 },
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1', family: 6 },
    ],
    'metadata.test': [
      { address: '169.254.169.254', family: 4 },
      { address: '::ffff:169.254.169.254', family: 6 },
    ],
    'sixtofour.test': [{ address: '2002:c0a8:101::1', family: 6 }],
  };
  const calls: Array<[string, unknown]> = [];
  const real = dns.lookup;
  // never the network: answers come from the table above
  (dns as { lookup: unknown }).lookup = (
    name: string,
    opts: dns.LookupAllOptions,
    cb: (e: NodeJS.ErrnoException | null, a: dns.LookupAddress[]) => void,
  ) => {
    calls.push([name, opts]);
    const list = answers[name];
    const fam = opts.family;
    process.nextTick(() =>
      list
        ? cb(null, fam ? list.filter((a) => a.family === fam) : list)
        : cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' }), []),
    );
  };
  t.teardown(() => void ((dns as { lookup: unknown }).lookup = real));
  const p = policy({ host: '0.0.0.0' });

  const one = await resolve(p, 'mixed.test');
  t.same([one.err, one.address, one.family], [null, '93.184.216.34', 4], 'the first permitted address');
  t.same(calls, [['mixed.test', { all: true, family: 0 }]], 'one resolution, all addresses asked for');
  const all = await resolve(p, 'mixed.test', { all: true });
  t.same(
    all.address,
    [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1', family: 6 },
    ],
    'all: only the permitted addresses',
  );
  const v6 = await resolve(p, 'mixed.test', { family: 6 });
  t.same([v6.address, v6.family], ['2606:4700::1', 6], 'the family option is passed through');

  const meta = await resolve(p, 'metadata.test');
  t.ok(meta.err instanceof EgressDenied, 'every address refused: EgressDenied');
  t.equal(
    meta.err?.message,
    'metadata.test: special-purpose address 169.254.169.254 (range linkLocal) is not allowed by the egress policy; allow it with egressAllow=169.254.169.254',
  );
  const sixtofour = await resolve(p, 'sixtofour.test');
  t.match(
    sixtofour.err?.message,
    'sixtofour.test: private address 2002:c0a8:101::1 (range private, 6to4 form of 192.168.1.1)',
  );
  const missing = await resolve(p, 'missing.test');
  t.ok(missing.err && !(missing.err instanceof EgressDenied), 'a DNS failure is passed on as it is');
  t.match(missing.err?.message, /ENOTFOUND/);
});

t.test("the machine's own interface addresses follow the loopback rule", async (t) => {
  const { networkInterfaces } = await import('node:os');
  const mine = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .map((a) => a.address.replace(/%.*$/, ''));
  const outside = createEgressPolicy({ egressDenyPrivate: false, egressAllow: '', host: '0.0.0.0' });
  for (const a of mine) t.match(outside.check(a), /loopback|this host/, `${a} refused when listening on 0.0.0.0`);
  const laptop = createEgressPolicy({ egressDenyPrivate: false, egressAllow: '', host: '127.0.0.1' });
  for (const a of mine) t.equal(laptop.check(a), undefined, `${a} allowed when listening on loopback`);
});
