/**
 * `appreg serve --takeover` under a socket-mode app that behaves as the official SDK does
 * (test/helpers/sdk-socket-client.ts; what it copies of the SDK's AddonWebsocketListener: it gets
 * its URL from GET /apps/{id}/websocket-connection?appKey=…, and when its socket closes it waits
 * 2 s, asks for a new URL once and gives up for good if that request fails; a websocket that
 * fails to open after a good URL is tried again).
 *
 * Ten restarts of real `appreg serve` processes on one data directory and port. The client's wait
 * runs on the test's clock and is let run out the moment the socket closes, which is stricter
 * than the SDK's 2 s: the retry succeeds only because the new daemon listens before the old one
 * closes the socket, by design, however slow the machine. A plain stop and start (SIGTERM, wait,
 * serve) fails this at once: nothing listens when the socket closes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { manifest, tempDir } from '../helpers/daemon.js';
import { clientOf, serveProcess, type ServedDaemon } from '../helpers/daemons.js';
import { createSdkSocketClient } from '../helpers/sdk-socket-client.js';
import { createTestClock } from '../helpers/test-clock.js';

const RESTARTS = 10;

t.test(`${RESTARTS} restarts with --takeover: the SDK's one retry finds the new daemon every time`, async (t) => {
  const dataDir = tempDir();
  const started: ServedDaemon[] = [];
  t.teardown(async () => {
    for (const d of started)
      if (d.child.exitCode === null && d.child.signalCode === null) {
        d.child.kill('SIGTERM');
        await d.exited;
      }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const serve = async (args: string[]) => {
    const d = await serveProcess(dataDir, {}, args);
    started.push(d);
    return d;
  };
  let daemon = await serve(['--port', '0']);
  const port = new URL(daemon.url).port;
  const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
  const api = clientOf(daemon.url, creds); // the port stays, so the URL does too
  const res = await api.api(`${api.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ socketMode: true, name: 'takeover-app' }),
  });
  t.equal(res.status, 201);
  const app = (await res.json()) as { id: string; appKey: string };

  const clock = createTestClock();
  let restart = 0;
  const client = createSdkSocketClient({
    baseUrl: daemon.url,
    appId: app.id,
    appKey: app.appKey,
    clock,
    reconnectDelayMs: 2000,
    pingIntervalMs: 0,
    handler: () => ({ status: 200, message: `answered after restart ${restart}` }),
  });
  t.teardown(() => client.stop());
  await client.start();

  for (restart = 1; restart <= RESTARTS; restart++) {
    const old = daemon;
    const opens = client.opens;
    const closes = client.closes.length;
    daemon = await serve(['--port', port, '--takeover']);
    await client.waitFor(() => client.closes.length > closes, 'the old daemon to close the socket');
    t.equal(client.closes.at(-1)?.code, 1001, `restart ${restart}: closed with 1001`);
    // the SDK's 2 s, in the test's terms: its one request for a new URL goes out now
    await clock.advance(2000);
    await client.waitFor(() => client.opens > opens || client.gaveUp, 'the reconnect');
    t.notOk(client.gaveUp, `restart ${restart}: the one retry found a daemon`);
    t.equal(await old.exited, 0, `restart ${restart}: the old daemon exited cleanly`);
    const tr = await api.api(`${api.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command', command: '/test' },
    });
    const body = (await tr.json()) as { outcome: string; ephemeralMessage?: string };
    t.equal(body.outcome, 'acked', `restart ${restart}: a trigger reached the app`);
    t.equal(body.ephemeralMessage, `answered after restart ${restart}`);
    if (client.gaveUp) break;
  }
  t.equal(client.opens, RESTARTS + 1, 'one connection per daemon');
  t.match(daemon.out(), /took over from the daemon with pid \d+/);
});

t.test('--takeover with nothing running starts as serve does', async (t) => {
  const dataDir = tempDir();
  const d = await serveProcess(dataDir, {}, ['--port', '0', '--takeover']);
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  t.notMatch(d.out(), /took over|stopped the daemon/);
  d.child.kill('SIGTERM');
  t.equal(await d.exited, 0);
});

t.test('--takeover of a daemon that does not hand over (an earlier version): SIGTERM, then the start', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  // stands in for an earlier daemon: its daemon.json has no "handover", and it exits on SIGTERM
  const old = spawn(process.execPath, [
    '-e',
    "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1e6)",
  ]);
  const oldExit = new Promise<number | null>((r) => old.on('exit', (code) => r(code)));
  t.teardown(() => void old.kill('SIGKILL'));
  fs.writeFileSync(path.join(dataDir, 'daemon.json'), JSON.stringify({ url: 'http://127.0.0.1:9', pid: old.pid }));
  const d = await serveProcess(dataDir, {}, ['--port', '0', '--takeover']);
  t.equal(await oldExit, 0, 'the old process got SIGTERM');
  t.match(d.out(), /stopped the daemon with pid \d+ \(it does not hand over\)/);
  d.child.kill('SIGTERM');
  t.equal(await d.exited, 0);
});
