/**
 * Issue 22 §4 (PostgreSQL): a daemon whose data dir has no credentials.json, on a store whose
 * workspace exists (a second daemon of a database), writes one for the owner as the first daemon
 * did, so the owner's CLI works on every daemon; a wrong key is refused naming `serve --key-file`,
 * a flag that exists and starts the daemon with the right key.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { runMain, serveInProcess } from '../helpers/cli.js';
import { testWithPg } from '../helpers/pg.js';

t.test('a data dir that lost credentials.json gets it back at the next start', async (t) => {
  const dir = tempDir();
  const first = await startTestDaemon({ dataDir: dir });
  await first.stop();
  fs.rmSync(path.join(dir, 'credentials.json'));
  const again = await startTestDaemon({ dataDir: dir });
  t.teardown(() => again.stop());
  const file = path.join(dir, 'credentials.json');
  t.equal(fs.statSync(file).mode & 0o777, 0o600);
  t.match(JSON.parse(fs.readFileSync(file, 'utf8')), {
    workspaceId: first.workspaceId,
    workspaceUserId: first.workspaceUserId,
    email: 'owner@appreg.test',
  });
  t.match(
    again.logs(),
    /wrote .*credentials\.json for the workspace's owner owner@appreg.test: the CLI on this machine works with no login/,
  );
  t.equal((await runMain(['--data-dir', dir, 'apps', 'list'])).code, 0, 'the CLI works with no login');
});

testWithPg(t, "PostgreSQL: the owner's CLI works on every daemon; a wrong key names --key-file", async (t, url) => {
  const a = tempDir();
  const one = await serveInProcess(['--data-dir', a, '--database-url', url]);
  t.teardown(async () => void (await one.stop()));
  t.ok(one.url, one.out.stderr);

  // A second daemon with a key of its own: refused, with a flag that exists.
  const b = tempDir();
  const refused = await runMain(['serve', '--port', '0', '--data-dir', b, '--database-url', url]);
  t.equal(refused.code, 1);
  t.match(
    refused.stderr,
    /refusing to start: the key file .*secret\.key is not the key the database was made with \(.*\); restore the secret\.key that belongs to it, or give its path with appreg serve --key-file <file> \(every daemon of a database needs the key of the first\)/,
  );
  fs.rmSync(b, { recursive: true, force: true });

  // The same daemon given the first one's key with --key-file: starts, and writes the owner's credentials.
  const two = await serveInProcess(['--data-dir', b, '--database-url', url, '--key-file', path.join(a, 'secret.key')]);
  t.teardown(async () => void (await two.stop()));
  t.ok(two.url, two.out.stderr);
  t.notOk(fs.existsSync(path.join(b, 'secret.key')), 'no key of its own was made');
  t.match(two.out.stderr, /wrote .*credentials\.json for the workspace's owner owner@appreg.test/);
  const onTwo = await runMain(['--data-dir', b, 'whoami', '--json']);
  t.equal(onTwo.code, 0, onTwo.stderr);
  const onOne = await runMain(['--data-dir', a, 'whoami', '--json']);
  t.equal(
    JSON.parse(onTwo.stdout).workspaceUserId,
    JSON.parse(onOne.stdout).workspaceUserId,
    'the same owner on both daemons',
  );
});
