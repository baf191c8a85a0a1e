/**
 * The operator's egress policy (docs/security.md §5): which addresses the daemon may call.
 * Private, link-local, CGNAT and unique-local ranges are denied unless allow-listed;
 * loopback is allowed by default so solo and CI use work out of the box. DNS is
 * resolved once, every address checked, and the socket connects to the checked one.
 */
import dns from 'node:dns';
import net from 'node:net';
import { parseAddressList, type Config } from '../config.js';

export class EgressDenied extends Error {}

export interface EgressPolicy {
  /** Why `ip` may not be called, or undefined when it may. */
  check(ip: string): string | undefined;
  /** A `lookup` for net.connect that resolves once and only yields permitted addresses. */
  lookup: net.LookupFunction;
}

const PRIVATE: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
  ['::', 128, 'ipv6'],
];

function parseList(spec: string): net.BlockList {
  const list = new net.BlockList();
  for (const { address, bits, type } of parseAddressList(spec)) {
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

/** ::ffff:10.0.0.1 is 10.0.0.1. */
function unmap(ip: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1]! : ip;
}

export function createEgressPolicy(config: Pick<Config, 'egressDenyPrivate' | 'egressAllowLoopback' | 'egressAllow'>): EgressPolicy {
  const allow = parseList(config.egressAllow);
  const priv = new net.BlockList();
  for (const [a, b, t] of PRIVATE) priv.addSubnet(a, b, t);
  const loop = new net.BlockList();
  loop.addSubnet('127.0.0.0', 8, 'ipv4');
  loop.addAddress('::1', 'ipv6');

  // BlockList.check allocates per call; a daemon calls few distinct addresses, so remember verdicts.
  const verdicts = new Map<string, string | undefined>();
  const check = (raw: string): string | undefined => {
    if (verdicts.has(raw)) return verdicts.get(raw);
    const why = decide(raw);
    if (verdicts.size > 10_000) verdicts.clear();
    verdicts.set(raw, why);
    return why;
  };
  const decide = (raw: string): string | undefined => {
    const ip = unmap(raw);
    const type = net.isIPv6(ip) ? 'ipv6' : 'ipv4';
    if (allow.check(ip, type)) return undefined;
    if (loop.check(ip, type)) return config.egressAllowLoopback ? undefined : `loopback address ${ip} is not allowed by the egress policy`;
    if (config.egressDenyPrivate && priv.check(ip, type)) return `private or link-local address ${ip} is not allowed by the egress policy`;
    return undefined;
  };

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { all: true, family: (options as dns.LookupOptions).family ?? 0 }, (err, addresses) => {
      if (err) return (callback as (e: Error | null, a: string, f?: number) => void)(err, '', 4);
      const list = addresses as dns.LookupAddress[];
      const ok = list.filter((a) => !check(a.address));
      if (!ok.length) {
        const why = check(list[0]!.address) ?? 'no permitted address';
        return (callback as (e: Error | null, a: string, f?: number) => void)(new EgressDenied(`${hostname}: ${why}`), '', 4);
      }
      if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, ok);
      (callback as (e: null, a: string, f: number) => void)(null, ok[0]!.address, ok[0]!.family);
    });
  };
  return { check, lookup };
}
