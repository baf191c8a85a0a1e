/** Socket mode end to end: the CLI against a daemon, with an app connected as the official SDK does. */
import t from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { connectTestClient } from '../helpers/sdk-socket-client.js';

interface App {
  id: string;
  appKey: string;
}

async function createApp(d: TestDaemon, over: Record<string, unknown> = {}): Promise<App> {
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ socketMode: true, name: 'e2e-' + Math.random().toString(36).slice(2, 8), ...over }),
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return (await res.json()) as App;
}

const connect = connectTestClient;

const cli = (d: TestDaemon, args: string[]) => runMain(['--url', d.url, '--token', d.token, ...args]);

t.test('appreg apps get shows the open connections of a socket-mode app', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const before = await cli(d, ['apps', 'get', app.id]);
  t.equal(before.code, 0);
  t.match(before.stdout, /connections\s+0/);
  const a = connect(t, d, app);
  const b = connect(t, d, app);
  await a.start();
  await b.start();
  const human = await cli(d, ['apps', 'get', app.id]);
  t.match(human.stdout, /connections\s+2/);
  const json = await cli(d, ['--json', 'apps', 'get', app.id]);
  t.equal(JSON.parse(json.stdout).connections, 2);
  t.equal(JSON.parse(json.stdout).queuedEvents, 0);
});
