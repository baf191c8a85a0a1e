/** Bad input never gets a 500 and anonymous callers cannot hold the daemon: one test per hole found. */
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

/** Raw bytes to the daemon, the whole answer back (for what fetch cannot send). */
function raw(
  d: TestDaemon,
  bytes: string | Buffer,
  opts: { endAfterWrite?: boolean; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(d.port, '127.0.0.1');
    let out = '';
    s.on('data', (c) => (out += c.toString()));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.setTimeout(opts.timeoutMs ?? 5000, () => s.destroy());
    s.write(bytes, () => opts.endAfterWrite && s.end());
  });
}

const jsonOf = (answer: string) =>
  JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; message: string };

t.test('request bodies', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());

  t.test(
    'JSON nested 100,000 levels deep: 400 invalid_json naming the limit; nothing kept; the API stays healthy',
    async (t) => {
      const deep = '['.repeat(100_000) + ']'.repeat(100_000);
      const body = `{"appId":"x","kind":"event","payload":{"a":${deep}}}`;
      const res = await d.api(`${d.mgmt}/deliveries`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      t.equal(res.status, 400);
      const b = (await res.json()) as { code: string; message: string };
      t.equal(b.code, 'invalid_json');
      t.match(b.message, /64 levels/);
      const list = await d.api(`${d.mgmt}/deliveries`);
      t.equal(list.status, 200, 'listing deliveries still works');
      const ok = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest({ name: 'nested-ok' }) });
      t.equal(ok.status, 201, 'ordinary nesting is fine');
    },
  );

  t.test('a client that aborts mid-body is not an error of the daemon', async (t) => {
    await raw(
      d,
      `POST ${d.mgmt}/apps HTTP/1.1\r\nHost: x\r\nAuthtoken: ${d.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":`,
      { endAfterWrite: true, timeoutMs: 500 },
    );
    await new Promise((r) => setTimeout(r, 100));
    t.notMatch(d.logs(), /"level":"error"/, 'nothing at error level, no stack');
  });

  t.test('a request header block of 60 KB: 431 with the JSON body', async (t) => {
    const answer = await raw(d, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(60_000)}\r\n\r\n`);
    t.match(answer, /^HTTP\/1\.1 431 /);
    t.equal(jsonOf(answer).code, 'headers_too_large');
  });

  t.test("malformed HTTP: 400 with the JSON body, not Node's bare answer", async (t) => {
    const answer = await raw(d, 'GARBAGE / NOT-HTTP\r\n\r\n');
    t.match(answer, /^HTTP\/1\.1 400 /);
    t.equal(jsonOf(answer).code, 'invalid_request');
  });
});

t.test('tokens and secrets', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());

  t.test('a management token with a trailing "=" (another encoding of the same signature) is refused', async (t) => {
    t.equal((await d.api('/auth/whoami')).status, 200);
    const res = await d.api('/auth/whoami', { headers: { authtoken: d.token + '=' } });
    t.equal(res.status, 401);
  });

  t.test('every answer carrying a secret or token has Cache-Control: no-store', async (t) => {
    const created = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest({ name: 'no-store-app' }) });
    t.equal(created.status, 201);
    t.equal(created.headers.get('cache-control'), 'no-store', '201 of create, with the three secrets');
    const app = (await created.json()) as { id: string };
    for (const path of [`${d.mgmt}/apps/mine/${app.id}`, `${d.mgmt}/apps/mine`, '/auth/whoami'])
      t.equal((await d.api(path)).headers.get('cache-control'), 'no-store', path);
  });
});

t.test("a member of the same workspace reads another member's {id, name, email}", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const user = await secondUser(d);
  const res = await d.api(`/workspaces/${d.workspaceId}/workspaceUsers/${d.workspaceUserId}`, {
    headers: { authtoken: user.token },
  });
  t.equal(res.status, 200);
  t.same(await res.json(), { id: d.workspaceUserId, name: 'Owner', email: 'owner@appreg.test' });
  const foreign = await d.api('/workspaces', { method: 'POST', json: { name: 'Not theirs' } });
  const ws = (await foreign.json()) as { id: string; workspaceUserId: string };
  // the info calls need no Authtoken (docs/security.md §4): a user is found only under their own workspace
  t.equal(
    (
      await d.api(`/workspaces/${d.workspaceId}/workspaceUsers/${ws.workspaceUserId}`, {
        headers: { authtoken: user.token },
      })
    ).status,
    404,
    'not under another workspace',
  );
});

t.test('the login rate limit cannot be bypassed with case or spaces, and holds per address', async (t) => {
  const d = await startTestDaemon({ config: { rateLimitLogin: 5 } });
  t.teardown(() => d.stop());
  const user = await secondUser(d);
  const variants = [
    user.email,
    ` ${user.email}`,
    `${user.email} `,
    user.email.toUpperCase(),
    `\t${user.email}`,
    `  ${user.email.toUpperCase()}  `,
  ];
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await d.api('/auth/login', {
      method: 'POST',
      noAuth: true,
      json: { email: variants[i % variants.length], password: 'wrong password' },
    });
    statuses.push(res.status);
  }
  // secondUser() signed in once already: four more tries of that email, in any spelling, then 429
  t.same(statuses.slice(0, 4), [401, 401, 401, 401]);
  t.ok(
    statuses.slice(4).every((s) => s === 429),
    `then limited: ${statuses.join(',')}`,
  );
  // per address: many emails from one address are cut off at 5 × the per-email limit
  let limited = 0;
  for (let i = 0; i < 30; i++) {
    const res = await d.api('/auth/login', {
      method: 'POST',
      noAuth: true,
      json: { email: `nobody${i}@example.com`, password: 'x' },
    });
    if (res.status === 429) limited++;
  }
  t.ok(limited >= 12, `the address was limited too (${limited} of 30 refused)`);
});

t.test('slow and idle connections', async (t) => {
  const d = await startTestDaemon({ config: { requestTimeoutMs: 1000, maxConnections: 5 } });
  t.teardown(() => d.stop());

  t.test('a body that trickles in is cut off at requestTimeoutMs with 408', async (t) => {
    const start = Date.now();
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(d.port, '127.0.0.1');
      let out = '';
      s.on('data', (c) => (out += c.toString()));
      s.on('close', () => resolve(out));
      s.write(
        `POST ${d.mgmt}/apps HTTP/1.1\r\nHost: x\r\nAuthtoken: ${d.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      );
      const drip = setInterval(() => s.writable && s.write(' '), 300);
      s.on('close', () => clearInterval(drip));
    });
    const ms = Date.now() - start;
    t.ok(ms < 4000, `closed after ${ms} ms`);
    t.match(answer, /^HTTP\/1\.1 408 /);
  });

  t.test('at the connection cap idle keep-alive connections are reaped so a new caller gets in', async (t) => {
    const idle: net.Socket[] = [];
    for (let i = 0; i < 5; i++) {
      const s = net.connect(d.port, '127.0.0.1');
      await new Promise((r) => s.once('connect', r));
      // one complete request, then the connection stays open and idle (keep-alive)
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((r) => s.once('data', r));
      idle.push(s);
    }
    t.teardown(() => idle.forEach((s) => s.destroy()));
    const res = await fetch(`${d.url}/healthz`);
    t.equal(res.status, 200, 'served');
    await new Promise((r) => setTimeout(r, 100));
    t.ok(
      idle.filter((s) => s.destroyed || s.readyState === 'closed' || !s.readable).length >= 1,
      'idle connections were closed to make room',
    );
  });
});

/**
 * `count` connections from `localAddress`, each sending one header line and then nothing (a
 * client that holds connections by never finishing its headers). Resolves once the daemon has
 * seen every one of them: its connection caps run when a connection arrives, so by then each
 * one it refused or closed to make room is closed on its side.
 */
async function headerHolders(
  t: { teardown(fn: () => void): void },
  d: TestDaemon,
  count: number,
  localAddress = '127.0.0.1',
) {
  const sockets: net.Socket[] = [];
  const atDaemon: net.Socket[] = [];
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  let done: () => void = () => {};
  const allSeen = new Promise<void>((r) => (done = r));
  const seen = (s: net.Socket) => {
    if (atDaemon.push(s) === count) done(); // nothing else connects meanwhile
  };
  d.server.on('connection', seen); // after the daemon's own listeners: its caps have decided
  t.teardown(() => d.server.off('connection', seen));
  for (let i = 0; i < count; i++) {
    const s = net.connect({ port: d.port, host: '127.0.0.1', localAddress });
    s.on('error', () => {});
    s.once('connect', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
    sockets.push(s);
  }
  await allSeen;
  d.server.off('connection', seen);
  return { sockets, closedByDaemon: () => atDaemon.filter((s) => s.destroyed).length, atDaemon };
}

/**
 * One request from `localAddress` (127.0.0.2: Linux routes all of 127/8 to loopback); its status and how long it took.
 */
function requestFrom(d: TestDaemon, localAddress: string): Promise<{ status: number | string; ms: number }> {
  const start = process.hrtime.bigint();
  const ms = () => Math.round(Number(process.hrtime.bigint() - start) / 1e5) / 10;
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: d.port, path: '/healthz', localAddress, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: must(res.statusCode), ms: ms() }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ status: e.code ?? 'error', ms: ms() }));
  });
}

t.test('one address cannot shut others out', async (t) => {
  t.test(
    '1,100 connections from 127.0.0.1 that never finish their headers: 256 are kept (the per-address cap), and 127.0.0.2 is answered',
    async (t) => {
      const d = await startTestDaemon(); // maxConnections 1000, maxConnectionsPerAddress 256
      t.teardown(() => d.stop());
      const holders = await headerHolders(t, d, 1100);
      t.equal(
        holders.closedByDaemon(),
        1100 - 256,
        'the connections beyond the per-address cap were refused, the others kept',
      );
      const other = await requestFrom(d, '127.0.0.2');
      t.equal(other.status, 200, '127.0.0.2 is answered');
      t.comment(
        `127.0.0.2 answered in ${other.ms} ms while 127.0.0.1 held 256 connections (the other ${holders.closedByDaemon()} were refused)`,
      );
      t.match(d.logs(), /maxConnectionsPerAddress reached/, 'the refusal is logged');
    },
  );

  t.test(
    'without the per-address cap, the global cap closes the oldest connections still sending headers before refusing anyone',
    async (t) => {
      const d = await startTestDaemon({ config: { maxConnectionsPerAddress: 0 } }); // maxConnections 1000
      t.teardown(() => d.stop());
      const holders = await headerHolders(t, d, 1100);
      t.equal(holders.closedByDaemon(), 100, '100 closed: 1,000 open, the cap');
      t.ok(
        holders.atDaemon.slice(0, 100).every((s) => s.destroyed),
        'the 100 oldest were closed to make room for the newer',
      );
      const other = await requestFrom(d, '127.0.0.2');
      t.equal(other.status, 200, '127.0.0.2 is answered');
      t.comment(`127.0.0.2 answered in ${other.ms} ms with 1,000 connections of 127.0.0.1 open and sending headers`);
      t.equal(holders.closedByDaemon(), 101, 'one more of the oldest closed for it');
    },
  );

  t.test(
    'at an address’s cap its idle keep-alive connection is closed to let its new one in, not one still sending its headers',
    async (t) => {
      const d = await startTestDaemon({ config: { maxConnectionsPerAddress: 2 } });
      t.teardown(() => d.stop());
      const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
      t.teardown(() => keepAlive.destroy());
      const first = await new Promise<net.Socket>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port: d.port, path: '/healthz', agent: keepAlive }, (res) => {
          res.resume();
          res.on('end', () => resolve(must(req.socket)));
        });
      });
      const busy = net.connect({ port: d.port, host: '127.0.0.1' });
      t.teardown(() => busy.destroy());
      busy.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'); // still sending its headers: not idle
      const connections = () => new Promise<number>((r) => d.server.getConnections((_e, n) => r(n)));
      while ((await connections()) < 2) await new Promise((r) => setImmediate(r));
      const second = await requestFrom(d, '127.0.0.1');
      t.equal(second.status, 200, 'the new connection got in');
      await new Promise((r) => (first.destroyed ? r(null) : first.once('close', r)));
      t.pass('the idle keep-alive connection was closed for it');
      t.notOk(busy.destroyed, 'the connection sending headers was not');
    },
  );
});
