/** Whom a connection counts against for maxConnectionsPerAddress: an IPv4 address, or an IPv6 caller's /64. */
import t from 'tap';
import { addressKey } from '../../src/server/connections.js';

t.test('IPv4 as itself, also IPv4-mapped; IPv6 by its /64, however it is written', async (t) => {
  t.equal(addressKey('127.0.0.1'), '127.0.0.1');
  t.equal(addressKey('::ffff:127.0.0.2'), '127.0.0.2', 'a dual-stack listener sees IPv4 callers mapped');
  t.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(
    addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'),
    '2001:db8:1:2::/64',
    'one host owns the whole /64: every address in it is one caller',
  );
  t.not(addressKey('2001:db8:1:3::1'), addressKey('2001:db8:1:2::1'), 'the next /64 is another caller');
  t.equal(addressKey('::1'), '0:0:0:0::/64');
  t.equal(addressKey(undefined), '?', 'a socket already gone');
});
