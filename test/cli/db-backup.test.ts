/**
 * Backups while the daemon runs (docs/operations.md). appreg db backup: a copy of a data directory taken while its
 * daemon writes, that opens as the store stood at that moment — also when a compaction replaces the data file during
 * the copy — and the refusals that leave nothing behind. On PostgreSQL, appreg db export while a daemon writes, and
 * the restore of what it wrote.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runMain } from '../helpers/cli.js';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { testWithPg } from '../helpers/pg.js';
import { backupDataDir } from '../../src/store/backup.js';
import { must } from '../../src/must.js';

const say = (dir: string, text: string) => runMain(['--data-dir', dir, 'say', 'general', text]);
const messages = async (dir: string) => (await runMain(['--data-dir', dir, 'messages', 'list', 'general'])).stdout;

t.test('a backup while the daemon writes opens as the store stood when it was taken', async (t) => {
  const d = await startTestDaemon({ dataDir: path.join(tempDir(), 'data'), keep: true });
  t.teardown(() => d.stop());
  for (const text of ['before one', 'before two']) t.equal((await say(d.dataDir, text)).code, 0, `said ${text}`);
  const to = path.join(tempDir(), 'backup');
  const r = await runMain(['--data-dir', d.dataDir, 'db', 'backup', '--to', to, '--json']);
  t.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as { records: number; files: number; tables: Array<{ table: string }> };
  t.ok(report.records >= 5, `it counted ${report.records} records, read back from the copy`);
  t.ok(
    report.tables.some((x) => x.table === 'wsMessages'),
    'the messages among them',
  );
  t.equal((await say(d.dataDir, 'after the backup')).code, 0, 'the daemon goes on');
  await d.stop();
  for (const f of ['secret.key', 'version.json']) t.ok(fs.existsSync(path.join(to, f)), `the copy holds ${f}`);
  t.notOk(fs.existsSync(path.join(to, 'daemon.lock')), 'but not the running daemon’s lock');
  t.equal(fs.statSync(to).mode & 0o777, 0o700, 'the copy is private (0700)');

  // Restore: a daemon on the copy.
  const restored = await startTestDaemon({ dataDir: to, keep: true });
  t.teardown(() => restored.stop());
  const shown = await messages(to);
  t.match(shown, /before one[\s\S]*before two/, 'what was said before the backup is there');
  t.notMatch(shown, /after the backup/, 'what was said after it is not');
});

t.test('a compaction during the copy: the copy starts again and is whole', async (t) => {
  const d = await startTestDaemon({ dataDir: path.join(tempDir(), 'data'), keep: true });
  t.teardown(() => d.stop());
  for (let i = 0; i < 5; i++) await say(d.dataDir, `message ${i}`);
  const store = d.parts.store;
  t.ok('compact' in store, 'the embedded store');
  const to = path.join(tempDir(), 'backup');
  fs.mkdirSync(to, { mode: 0o700 });
  let compactions = 0;
  const r = await backupDataDir(d.dataDir, to, {
    afterDataFile: async () => {
      if (compactions++ > 0) return;
      // between the copy of the data file and of the journals: a commit, then a compaction that replaces the data
      // file and deletes the journal that commit was in
      await say(d.dataDir, 'during the copy');
      await (store as unknown as { compact(): Promise<void> }).compact();
    },
  });
  t.equal(r.attempts, 2, 'the first copy was thrown away, the second kept');
  await d.stop();
  const restored = await startTestDaemon({ dataDir: to, keep: true });
  t.teardown(() => restored.stop());
  t.match(await messages(to), /message 4[\s\S]*during the copy/, 'the copy holds the commit the compaction folded in');
});

t.test('refusals change nothing', async (t) => {
  const d = await startTestDaemon({ dataDir: path.join(tempDir(), 'data'), keep: true });
  t.teardown(() => d.stop());
  const full = tempDir();
  fs.writeFileSync(path.join(full, 'x'), 'x');
  t.match(await runMain(['--data-dir', d.dataDir, 'db', 'backup', '--to', full]), {
    code: 2,
    stderr: /is not empty \(x\): back up only into a new or empty directory/,
  });
  t.same(fs.readdirSync(full), ['x'], 'the full directory is as it was');
  const empty = tempDir();
  const to = path.join(tempDir(), 'never');
  t.match(await runMain(['db', 'backup', '--from', empty, '--to', to]), {
    code: 2,
    stderr: /holds no appreg data/,
  });
  t.notOk(fs.existsSync(to), 'a refused backup leaves no directory behind');
  t.match(await runMain(['db', 'backup', '--from', path.join(empty, 'nope'), '--to', to]), {
    code: 2,
    stderr: /no data directory at .*nope/,
  });
  must(d);
});

void testWithPg(t, 'PostgreSQL: db export while a daemon writes, restored on the embedded store', async (t, url) => {
  const d = await startTestDaemon({ dataDir: path.join(tempDir(), 'data'), keep: true, config: { databaseUrl: url } });
  t.teardown(() => d.stop());
  t.equal((await say(d.dataDir, 'before the export')).code, 0);
  const to = path.join(tempDir(), 'export');
  const r = await runMain(['db', 'export', '--to', to, '--database-url', url, '--json']);
  t.equal(r.code, 0, r.stderr);
  t.equal((await say(d.dataDir, 'after the export')).code, 0, 'the daemon goes on');
  await d.stop();
  fs.copyFileSync(path.join(d.dataDir, 'secret.key'), path.join(to, 'secret.key'));
  const restored = await startTestDaemon({ dataDir: to, keep: true, config: { databaseUrl: undefined } });
  t.teardown(() => restored.stop());
  const shown = await messages(to);
  t.match(shown, /before the export/, 'the export holds what was said before it');
  t.notMatch(shown, /after the export/, 'and not what was said after');
});
