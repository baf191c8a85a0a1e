/**
 * A rolling restart of three daemons on one PostgreSQL database behind one address: each daemon in
 * turn is stopped (SIGTERM, waited for) and started again while socket-mode apps that behave as the
 * official SDK does (test/helpers/sdk-socket-client.ts: 2 s after a close, one request for a new
 * URL at the address they were given, and nothing more if it fails) stay connected: an app whose
 * daemon stops gets its new URL, through the balancer, from a daemon that is up.
 *
 * The balancer is a TCP forwarder at one port that sends each new connection to the next daemon
 * that accepts it, as a load balancer with health checks does. The apps' 2 s wait runs on the
 * test's clock and is let run out once the stopped daemon has exited: the order that matters (a
 * daemon is up when the retry goes out) holds by construction, whatever the machine's load.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { startDaemons, serveProcess, clientOf, type ServedDaemon } from '../helpers/daemons.js';
import { manifest } from '../helpers/daemon.js';
import { pgDatabaseOrSkip } from '../helpers/pg.js';
import { createSdkSocketClient, type SdkSocketClient } from '../helpers/sdk-socket-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const APPS = 6;

/** One address in front of `targets()` (each daemon's host:port): each connection goes to the next one that accepts. */
async function startBalancer(targets: () => string[]): Promise<{ url: string; close(): Promise<void> }> {
  let next = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    const list = targets();
    const tryAt = (tries: number) => {
      if (tries >= list.length) return client.destroy();
      const [host, port] = must(list[next++ % list.length]).split(':');
      const up = net.connect({ host, port: Number(port) });
      up.once('error', () => {
        up.destroy();
        tryAt(tries + 1); // refused: that daemon is down, the next one
      });
      up.once('connect', () => {
        open.add(up);
        up.on('close', () => (open.delete(up), client.destroy()));
        up.removeAllListeners('error').on('error', () => up.destroy());
        client.on('close', () => up.destroy());
        client.pipe(up).pipe(client);
        client.resume();
      });
    };
    tryAt(0);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The daemon's own address: daemon.json's url is its base URL, the listening line the same. */
const hostPort = (d: ServedDaemon) => new URL(d.url).host;

t.test('a rolling restart of three daemons keeps every socket-mode app connected', async (t) => {
  const url = await pgDatabaseOrSkip(t);
  if (!url) return;
  const env = { APPREG_DATABASE_URL: url };
  const g = await startDaemons(t, 3, url);
  const lb = await startBalancer(() => g.daemons.map(hostPort));
  t.teardown(() => lb.close());
  const creds = JSON.parse(fs.readFileSync(path.join(must(g.daemons[0]).dataDir, 'credentials.json'), 'utf8'));
  const api = clientOf(lb.url, creds);

  const clock = createTestClock();
  const clients: SdkSocketClient[] = [];
  const apps: Array<{ id: string; appKey: string }> = [];
  for (let i = 0; i < APPS; i++) {
    const res = await api.api(`${api.mgmt}/apps`, {
      method: 'POST',
      json: manifest({ socketMode: true, name: `rolling-${i}-${Math.random().toString(36).slice(2, 8)}` }),
    });
    t.equal(res.status, 201);
    const app = (await res.json()) as { id: string; appKey: string };
    apps.push(app);
    const c = createSdkSocketClient({
      baseUrl: lb.url, // the address the app was given: the balancer's
      appId: app.id,
      appKey: app.appKey,
      clock,
      reconnectDelayMs: 2000,
      pingIntervalMs: 0,
      handler: () => ({ status: 200, message: `app ${i} here` }),
    });
    t.teardown(() => c.stop());
    await c.start();
    clients.push(c);
  }
  // Which daemon holds which app: the clients' URL requests share one kept-alive connection through the
  // balancer, so they often all land on one daemon; whichever it is, its stop moves them.
  const holders = () => clients.map((c) => new URL(must(c.ws).url).host);
  let moved = 0;

  for (let i = 0; i < 3; i++) {
    const old = must(g.daemons[i]);
    const on = holders()
      .map((h, k) => (h === hostPort(old) ? k : -1))
      .filter((k) => k >= 0);
    const opens = clients.map((c) => c.opens);
    moved += on.length;
    old.child.kill('SIGTERM');
    t.equal(await old.exited, 0, `daemon ${i} stopped cleanly`);
    for (const k of on) await must(clients[k]).waitFor(() => !must(clients[k]).isOpen(), 'the close');
    // the SDK's 2 s, in the test's terms, once the daemon is gone: each closed app asks the balancer once
    await clock.advance(2000);
    for (const k of on) {
      const c = must(clients[k]);
      await c.waitFor(() => c.opens > must(opens[k]) || c.gaveUp, 'the reconnect');
      t.notOk(c.gaveUp, `app ${k}, on daemon ${i}, found a daemon that is up`);
    }
    // started again on its data dir (a new port: the balancer learns it, as one with service discovery does)
    g.daemons[i] = await serveProcess(old.dataDir, env);
    for (const [k, app] of apps.entries()) {
      const tr = await api.api(`${api.mgmt}/deliveries`, {
        method: 'POST',
        json: { appId: app.id, kind: 'slash-command', command: '/test' },
      });
      const body = (await tr.json()) as { outcome: string; ephemeralMessage?: string };
      t.equal(body.outcome, 'acked', `after restarting daemon ${i}, a trigger reached app ${k}`);
      t.equal(body.ephemeralMessage, `app ${k} here`);
    }
  }
  t.ok(moved >= APPS, `the stops moved ${moved} connections to another daemon (every app's at least once)`);
  t.ok(
    clients.every((c) => c.isOpen() && !c.gaveUp),
    'every app is connected at the end',
  );
});
