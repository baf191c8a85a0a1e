/** The data dir's credentials.json (the first-start owner token) goes only to that data dir's daemon. */
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';

t.test('credentials.json is used for the local daemon and never sent to another --url', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const env = { APPREG_CONFIG_DIR: os.tmpdir() + '/appreg-cli-nocfg-' + process.pid };
  const local = await runMain(['--data-dir', d.dataDir, 'apps', 'list', '--json'], { env });
  t.equal(local.code, 0, 'the local daemon: no login needed');

  const seen: Array<[string | undefined, string | undefined]> = [];
  const other = http.createServer((req, res) => {
    seen.push([req.url, req.headers.authtoken as string | undefined]);
    res.setHeader('content-type', 'application/json');
    res.end('[]');
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  const r = await runMain(['--data-dir', d.dataDir, '--url', otherUrl, 'apps', 'list'], { env });
  t.equal(r.code, 2, 'not logged in there');
  t.match(r.stderr, /not logged in to http:\/\/127\.0\.0\.1:\d+/);
  // only the check that something answers there (a dead --url is exit 3, not "not logged in"), without a token
  t.same(seen, [['/healthz', undefined]], 'no token reached the other server');
  const same = await runMain(['--data-dir', d.dataDir, '--url', d.url, 'apps', 'list', '--json'], { env });
  t.equal(same.code, 0, '--url naming the local daemon itself still works');
});
