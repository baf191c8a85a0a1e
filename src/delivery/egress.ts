/**
 * The operator's egress policy (docs/security.md §5 D3): which addresses the daemon may call.
 *
 * Only ordinary global unicast is callable. Every special-purpose range of the IANA IPv4 and
 * IPv6 registries (as ipaddr.js classifies them: private, carrier-grade NAT, link-local,
 * reserved, documentation, benchmarking, multicast, unique-local, teredo, orchid, …) and, for
 * IPv6, everything outside 2000::/3 is refused unless listed in `egressAllow`;
 * `egressDenyPrivate: false` turns that refusal off. The forms that embed an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged by the IPv4 address they carry.
 * Loopback has its own rule: allowed when the daemon itself listens on a loopback address
 * (a laptop, CI), refused otherwise, unless `egressAllowLoopback` says so explicitly. The
 * unspecified addresses (0.0.0.0, ::) reach this host too, so they also obey that rule.
 * DNS is resolved once, every address checked, and the socket connects to a checked one.
 */
import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import ipaddr from 'ipaddr.js';
import { parseAddressList, type Config } from '../config.js';
import { must } from '../must.js';

export class EgressDenied extends Error {}

export interface EgressPolicy {
  /** Why `ip` may not be called, or undefined when it may. */
  check(ip: string): string | undefined;
  /** A `lookup` for net.connect that resolves once and only yields permitted addresses. */
  lookup: net.LookupFunction;
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An address as the policy sees it: its range name, and for an embedding form, the IPv4 address inside. */
interface Classified {
  /** ipaddr.js's range name ('unicast' is ordinary global unicast), or 'outside2000::/3'. */
  range: string;
  /** The embedded IPv4 address the range was taken from. */
  v4?: ipaddr.IPv4;
  form?: 'IPv4-mapped' | 'IPv4-compatible' | 'NAT64' | '6to4';
}

const GLOBAL_UNICAST_V6: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('2000::'), 3];

/** The IPv4 address held in 16-bit words i and i+1. */
function v4At(parts: number[], i: number): ipaddr.IPv4 {
  const hi = parts[i] ?? 0;
  const lo = parts[i + 1] ?? 0;
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/**
 * Parses an address Node accepted (net.isIP). ipaddr.js reads the deprecated "::a.b.c.d"
 * notation as IPv4-mapped (::ffff:a.b.c.d); it is IPv4-compatible (::/96), so build it here.
 */
function parseAddress(text: string): Address {
  const compat = /^::(\d{1,3}(?:\.\d{1,3}){3})(?:%.*)?$/.exec(text);
  if (compat) {
    const o = ipaddr.IPv4.parse(must(compat[1])).octets;
    return new ipaddr.IPv6([0, 0, 0, 0, 0, 0, (must(o[0]) << 8) | must(o[1]), (must(o[2]) << 8) | must(o[3])]);
  }
  return ipaddr.parse(text);
}

function classify(ip: Address): Classified {
  if (ip instanceof ipaddr.IPv4) return { range: ip.range() };
  const v6 = ip;
  const p = v6.parts;
  const range: string = v6.range();
  const embedded = (form: NonNullable<Classified['form']>, v4: ipaddr.IPv4): Classified => ({
    range: v4.range(),
    v4,
    form,
  });
  if (range === 'ipv4Mapped') return embedded('IPv4-mapped', v6.toIPv4Address());
  if (range === 'rfc6052') {
    // 64:ff9b::/96 carries the IPv4 address in its last 32 bits. In the local-use 64:ff9b:1::/48
    // the layout depends on the translator's prefix length; with words 3–5 zero every RFC 6052
    // layout yields either those last 32 bits or an address in 0.0.0.0/8, so only that shape is judged.
    if (p[3] === 0 && p[4] === 0 && p[5] === 0) return embedded('NAT64', v4At(p, 6));
    return { range };
  }
  if (range === '6to4') return embedded('6to4', v4At(p, 1)); // 2002:AABB:CCDD::/48 is the site of AA.BB.CC.DD
  if (range !== 'unicast') return { range };
  if (p.slice(0, 6).every((w) => w === 0)) return embedded('IPv4-compatible', v4At(p, 6)); // :: and ::1 are ranges of their own
  // ipaddr.js calls 4000::1 or 100:0:0:1:: "unicast"; global unicast is only allocated from 2000::/3.
  if (!v6.match(GLOBAL_UNICAST_V6)) return { range: 'outside2000::/3' };
  return { range };
}

/** Whether the daemon's listen address is a loopback one (127.0.0.0/8, ::1, localhost). */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === 'localhost.') return true;
  return net.isIP(h) !== 0 && classify(parseAddress(h)).range === 'loopback';
}

type AllowEntry = [Address, number];

function parseAllow(spec: string): AllowEntry[] {
  return parseAddressList(spec).map(({ address, bits, type }) => [
    parseAddress(address),
    bits ?? (type === 'ipv4' ? 32 : 128),
  ]);
}

function allowListed(list: AllowEntry[], ip: Address): boolean {
  return list.some(([base, bits]) => base.kind() === ip.kind() && ip.match(base, bits));
}

/** The addresses of this machine's network interfaces, in ipaddr's canonical text. */
function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      try {
        out.add(parseAddress(a.address.replace(/%.*$/, '')).toString());
      } catch {
        /* not an address ipaddr reads */
      }
    }
  }
  return out;
}

export type EgressConfig = Pick<Config, 'egressDenyPrivate' | 'egressAllowLoopback' | 'egressAllow'> &
  Partial<Pick<Config, 'host'>>;

/**
 * `egressAllowLoopback` undefined means: allowed exactly when `host` (where the daemon listens)
 * is a loopback address. A caller that gives no host gets the refusing default.
 */
export function createEgressPolicy(config: EgressConfig): EgressPolicy {
  const allow = parseAllow(config.egressAllow);
  const loopbackOk = config.egressAllowLoopback ?? isLoopbackHost(config.host);
  const loopbackWhy =
    config.egressAllowLoopback === false
      ? 'is not allowed (egressAllowLoopback=false)'
      : `is not allowed when the daemon listens on ${config.host ?? 'an unknown address'}`;

  // The machine's own addresses reach its local services just as loopback does (a service
  // listening on 0.0.0.0 answers on them), so they follow the loopback rule too.
  const own = loopbackOk ? new Set<string>() : ownAddresses();

  // A daemon calls few distinct addresses, so remember verdicts.
  const verdicts = new Map<string, string | undefined>();
  const check = (raw: string): string | undefined => {
    if (verdicts.has(raw)) return verdicts.get(raw);
    const why = decide(raw);
    if (verdicts.size > 10_000) verdicts.clear();
    verdicts.set(raw, why);
    return why;
  };
  const decide = (raw: string): string | undefined => {
    if (!net.isIP(raw)) return `${raw} is not an IP address`;
    const ip = parseAddress(raw);
    const c = classify(ip);
    if (allowListed(allow, ip) || (c.v4 && allowListed(allow, c.v4))) return undefined;
    const via = c.form ? `${c.form} form of ${c.v4}` : '';
    if (c.range === 'loopback') {
      if (loopbackOk) return undefined;
      return `loopback address ${raw}${via ? ` (${via})` : ''} ${loopbackWhy}; allow it with egressAllowLoopback=true`;
    }
    if (own.has(ip.toString()))
      return `${raw} is an address of this host, and loopback ${loopbackWhy}; allow it with egressAllowLoopback=true`;
    if (c.range === 'unspecified' && !config.egressDenyPrivate && !loopbackOk) {
      // connecting to 0.0.0.0 or :: reaches this host, so it stays under the loopback rule
      return `unspecified address ${raw}${via ? ` (${via})` : ''} connects to this host, and loopback ${loopbackWhy}; allow it with egressAllowLoopback=true`;
    }
    if (c.range === 'unicast' || !config.egressDenyPrivate) return undefined;
    const kind = c.range === 'private' ? 'private' : 'special-purpose';
    return `${kind} address ${raw} (range ${c.range}${via ? `, ${via}` : ''}) is not allowed by the egress policy; allow it with egressAllow=${raw}`;
  };

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: options.family ?? 0 }, (err, list) => {
      if (err) return callback(err, '', 4);
      const ok = list.filter((a) => !check(a.address));
      if (!ok.length) {
        const why = (list[0] && check(list[0].address)) ?? 'no permitted address';
        return callback(new EgressDenied(`${hostname}: ${why}`), '', 4);
      }
      if (options.all) return callback(null, ok);
      callback(null, must(ok[0]).address, must(ok[0]).family);
    });
  };
  return { check, lookup };
}
