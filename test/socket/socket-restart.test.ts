/**
 * Socket mode across a daemon restart, as the official SDK behaves: one reconnect, two seconds after the close.
 * How long a restart takes is measured by `npm run bench:restart`, not here; the SDK's 2 s run on the test's
 * clock and run out once the new daemon listens (the case of a restart that is quick enough).
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { createSdkSocketClient } from '../helpers/sdk-socket-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

t.test(
  'a restart: the sockets close last, after the data is durable, and the SDK reconnects to the new daemon',
  async (t) => {
    const dataDir = tempDir();
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const d1 = await startTestDaemon({ dataDir });
    const res = await d1.api(`${d1.mgmt}/apps`, {
      method: 'POST',
      json: manifest({ socketMode: true, name: 'restart-app' }),
    });
    const app = (await res.json()) as { id: string; appKey: string };
    const port = d1.port;
    // the SDK's own timing: reconnect once, 2 s after the close; a failed URL fetch ends it for good
    const clock = createTestClock();
    const c = createSdkSocketClient({
      clock,
      baseUrl: d1.url,
      appId: app.id,
      appKey: app.appKey,
      reconnectDelayMs: 2000,
      pingIntervalMs: 0,
      handler: () => ({ status: 200, message: 'still here' }),
    });
    t.teardown(() => c.stop());
    await c.start();

    const lock = path.join(dataDir, 'daemon.lock');
    let lockAtClose: boolean | undefined;
    must(c.ws).once('close', () => (lockAtClose = fs.existsSync(lock)));
    await d1.stop();
    t.equal(lockAtClose, false, 'the data directory was released (store closed) before the socket closed');
    t.same(c.closes.at(-1)?.code, 1001);
    const d2 = await startTestDaemon({ dataDir, config: { port } });
    t.teardown(() => d2.stop());
    await clock.advance(2000);
    await c.waitFor(() => c.opens > 1 || c.gaveUp, 'the reconnect');
    t.notOk(c.gaveUp, 'the reconnect found the new daemon');
    const tr = await d2.api(`${d2.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command', command: '/test' },
    });
    const body = (await tr.json()) as { outcome: string; ephemeralMessage?: string };
    t.equal(body.outcome, 'acked');
    t.equal(body.ephemeralMessage, 'still here');
  },
);
