/**
 * Upgrades (docs/operations.md): a data directory written by the last release (test/fixtures/data-0.1.0, made by
 * appreg 0.1.0: an app registered from the example's manifest, authorized, /standup said, a message posted) opens in
 * this build with everything in it, the app's tokens still good; and a data directory stamped by a newer appreg, in a
 * format this one does not know, is refused with a message naming both versions, before anything is written.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runMain, serveInProcess } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { ROOT } from '../helpers/cli.js';
import { APPREG_VERSION } from '../../src/version.js';
import { must } from '../../src/must.js';
import { tree } from '../helpers/file-tree.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/data-0.1.0');

/** A copy of the 0.1.0 data directory, with the modes the daemon gives its files (git keeps none). */
function copyOf010(): string {
  const dir = path.join(tempDir('appreg-upgrade-'), 'data');
  fs.cpSync(path.join(FIXTURE, 'data'), dir, { recursive: true });
  const tighten = (p: string) => {
    const st = fs.statSync(p);
    fs.chmodSync(p, st.isDirectory() ? 0o700 : 0o600);
    if (st.isDirectory()) for (const f of fs.readdirSync(p)) tighten(path.join(p, f));
  };
  tighten(dir);
  return dir;
}

t.test('a data directory written by appreg 0.1.0 opens, with its apps, messages, deliveries and tokens', async (t) => {
  const dir = copyOf010();
  t.notOk(fs.existsSync(path.join(dir, 'version.json')), '0.1.0 wrote no stamp');
  // The fixture's deliveries are of 2026-11-27: a retention of a hundred years keeps them whenever this test runs.
  const d = await serveInProcess(['--data-dir', dir], { env: { APPREG_DELIVERY_LOG_RETENTION_DAYS: '36500' } });
  t.teardown(() => d.stop());
  t.ok(d.url, `it started: ${d.out.stderr.slice(-300)}`);
  const cli = (...args: string[]) => runMain(['--data-dir', dir, ...args]);
  const apps = await cli('apps', 'list', '--json');
  t.match(JSON.parse(apps.stdout), [{ name: 'standup' }], 'the app registered by 0.1.0');
  t.match((await cli('messages', 'list', 'general')).stdout, /Daily standup[\s\S]*hello from 0\.1\.0/, 'its messages');
  t.match((await cli('deliveries', 'list')).stdout, /3 deliveries/, 'its delivery log');
  const tokens = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'app-tokens.json'), 'utf8')) as Record<
    string,
    { botToken: string; botId: string }
  >;
  const { botToken: bot, botId } = must(Object.values(tokens)[0]);
  const appKey = must(/^PUMBLE_APP_KEY=(.*)$/m.exec(fs.readFileSync(path.join(FIXTURE, 'app.env'), 'utf8'))?.[1]);
  const users = await fetch(`${must(d.url)}/v1/workspaceUsers/${botId}`, {
    headers: { token: bot, 'x-app-token': appKey },
  });
  t.equal(users.status, 200, `the bot token 0.1.0 issued still works (user:read): ${await users.text()}`);
  const stamp = JSON.parse(fs.readFileSync(path.join(dir, 'version.json'), 'utf8')) as unknown;
  t.same(stamp, { appreg: APPREG_VERSION, format: 1 }, 'and the directory is stamped as this version’s');
  t.equal(await d.stop(), 0);
});

t.test('a data directory of a newer appreg is refused, naming both versions, every file unchanged', async (t) => {
  const dir = copyOf010();
  fs.writeFileSync(path.join(dir, 'version.json'), JSON.stringify({ appreg: '9.1.0', format: 7 }), { mode: 0o600 });
  const before = tree(dir);
  const r = await runMain(['serve', '--port', '0', '--data-dir', dir]);
  t.equal(r.code, 1, 'exit 1');
  t.match(
    r.stderr,
    new RegExp(
      `written by appreg 9\\.1\\.0 \\(data directory format 7\\); this is appreg ${APPREG_VERSION.replace(/\./g, '\\.')}`,
    ),
    'the message names the version that wrote it and this one',
  );
  t.equal(r.stderr.trim().split('\n').length, 1, 'in one line');
  t.same(tree(dir), before, 'nothing was written');

  fs.writeFileSync(path.join(dir, 'version.json'), '{"appreg": ');
  const broken = tree(dir);
  t.match(await runMain(['serve', '--port', '0', '--data-dir', dir]), {
    code: 1,
    stderr: /version\.json is not valid JSON/,
  });
  t.same(tree(dir), broken, 'a broken stamp is refused too, nothing written');

  fs.writeFileSync(path.join(dir, 'version.json'), 'null');
  t.match(
    await runMain(['serve', '--port', '0', '--data-dir', dir]),
    { code: 1, stderr: /version\.json has no valid "format"/ },
    'a stamp that is JSON but no object is refused in words too',
  );
});
