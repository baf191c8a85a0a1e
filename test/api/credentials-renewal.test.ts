/**
 * credentials.json keeps the local CLI working with no login: an expired or revoked owner token is renewed on start.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { createTestClock } from '../helpers/test-clock.js';

const TTL = 3600; // managementTokenTtlSeconds for these tests

t.test('an expired owner token in credentials.json is renewed on the next start', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const clock = createTestClock();
  const first = await startTestDaemon({ dataDir, clock, config: { managementTokenTtlSeconds: TTL } });
  const credFile = path.join(dataDir, 'credentials.json');
  const before = JSON.parse(fs.readFileSync(credFile, 'utf8'));
  t.equal((await first.api(`${first.mgmt}/apps/mine`)).status, 200);
  clock.set(clock.now() + (TTL + 60) * 1000);
  t.equal((await first.api(`${first.mgmt}/apps/mine`)).status, 401, 'the first token has expired');
  await first.stop();

  const second = await startTestDaemon({ dataDir, clock, config: { managementTokenTtlSeconds: TTL } });
  t.teardown(() => second.stop());
  const after = JSON.parse(fs.readFileSync(credFile, 'utf8'));
  t.not(after.authToken, before.authToken, 'a new token');
  t.same({ ...after, authToken: undefined }, { ...before, authToken: undefined }, 'same workspace, owner and email');
  t.same(Object.keys(after).sort(), ['authToken', 'email', 'workspaceId', 'workspaceUserId']);
  t.equal(fs.statSync(credFile).mode & 0o777, 0o600);
  const res = await fetch(`${second.url}${second.mgmt}/apps/mine`, { headers: { authtoken: after.authToken } });
  t.equal(res.status, 200, 'the renewed token works');
  t.match(second.logs(), /renewed the management token in credentials\.json/);
  t.notMatch(second.logs(), after.authToken, 'the token itself is not logged');
});

t.test('a revoked owner token is renewed; a fresh one is left alone', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const credFile = path.join(dataDir, 'credentials.json');
  const first = await startTestDaemon({ dataDir });
  await first.stop();
  const text = fs.readFileSync(credFile, 'utf8');
  const second = await startTestDaemon({ dataDir });
  t.equal(fs.readFileSync(credFile, 'utf8'), text, 'a token with most of its lifetime left is kept');
  const out = await second.api('/auth/logout', { method: 'POST' });
  t.ok(out.status < 300, `logout revokes it (${out.status})`);
  t.equal((await second.api(`${second.mgmt}/apps/mine`)).status, 401);
  await second.stop();
  const third = await startTestDaemon({ dataDir });
  t.teardown(() => third.stop());
  t.not(fs.readFileSync(credFile, 'utf8'), text, 'renewed');
  t.equal((await third.api(`${third.mgmt}/apps/mine`)).status, 200, 'and the CLI credentials work again');
});

t.test('an unreadable credentials.json is left as it is, with a warning', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const credFile = path.join(dataDir, 'credentials.json');
  const first = await startTestDaemon({ dataDir });
  await first.stop();
  fs.writeFileSync(credFile, '{not json');
  const { startDaemon } = await import('../../src/server/start.js');
  const { loadConfig } = await import('../../src/config.js');
  const { createLogger } = await import('../../src/logger.js');
  let logs = '';
  const h = await startDaemon(
    { ...loadConfig({ dataDir, port: 0 }, {}), databaseUrl: first.parts.config.databaseUrl },
    { logger: createLogger({ level: 'debug', stream: { write: (s: string) => (logs += s) } }) },
  );
  await h.close();
  t.equal(fs.readFileSync(credFile, 'utf8'), '{not json', 'not overwritten');
  t.match(logs, /credentials\.json is unreadable/);
});
