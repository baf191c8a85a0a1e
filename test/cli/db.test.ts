/**
 * appreg db migrate / import / export against a throwaway PostgreSQL (test/helpers/pg.ts): a data
 * directory survives import then export unchanged, nothing is ever overwritten, and a bad URL is
 * one line with no password in it.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { testWithPg } from '../helpers/pg.js';
import { EXIT } from '../../src/client/exit.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { acquireLock } from '../../src/server/data-dir.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import type { TestTables } from '../helpers/test-tables.js';

const work = tempDir('appreg-db-cli-');
t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
const quiet = { warn() {} };

/** A data directory with a few tables, written by the embedded store. */
async function sampleDataDir(): Promise<string> {
  const dir = path.join(work, 'source');
  const store = await openEmbeddedStore<TestTables>({ dir, logger: quiet, compactIdleMs: 0 });
  await store.commit([
    {
      table: 'apps',
      id: 'A1',
      value: {
        id: 'A1',
        ownerId: 'U1',
        name: 'Stand-up bot ✓',
        scopes: ['chat:write', 'commands'],
        nested: { a: 1, b: [null, true, 1.5] },
      },
    },
    { table: 'apps', id: 'A2', value: { id: 'A2', ownerId: 'U1', name: 'other' } },
    { table: 'accounts', id: 'U1', value: { id: 'U1', email: 'o@example.com', createdAt: 1_700_000_000_000 } },
  ]);
  const many = Array.from({ length: 1200 }, (_, i) => ({
    table: 'wsMessages',
    id: `M${i}`,
    value: { id: `M${i}`, channelId: 'C1', text: `message ${i}`, ts: i },
  }));
  await store.commit(many);
  await store.commit([{ table: 'apps', id: 'A2', value: null }]); // a deletion in the journal
  await store.close();
  fs.writeFileSync(path.join(dir, 'secret.key'), 'not copied');
  return dir;
}

t.test('a URL that is not PostgreSQL: one line, exit 2', async (t) => {
  const r = await runMain(['db', 'migrate', '--database-url', 'mysql://root:hunter2@db/x']);
  t.equal(r.code, EXIT.usage);
  t.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  t.match(r.stderr, /must be a PostgreSQL URL/);
  t.notMatch(r.stderr, /hunter2/);
  const none = await runMain(['db', 'migrate'], { env: { APPREG_DATABASE_URL: undefined } });
  t.equal(none.code, EXIT.usage);
  t.match(none.stderr, /--database-url \(or APPREG_DATABASE_URL\) is required/);
});

t.test('db takes exactly the database URLs serve takes', async (t) => {
  // port 1 on loopback refuses at once: a URL db takes fails to connect (exit 1), one it refuses is a usage error (exit
  // 2)
  const urls = [
    'postgres://appreg:secret@127.0.0.1:1/appreg',
    'postgresql://127.0.0.1:1/appreg',
    'postgres:///appreg?host=127.0.0.1&port=1',
    'postgres:///appreg',
    'postgresql:appreg',
    'mysql://root@127.0.0.1:1/appreg',
    'not a url',
  ];
  for (const url of urls) {
    let serveTakes = true;
    try {
      loadConfig({ databaseUrl: url }, {});
    } catch (e) {
      t.ok(e instanceof ConfigError, url);
      serveTakes = false;
    }
    const r = await runMain(['db', 'migrate', '--database-url', url]);
    t.equal(
      r.code,
      serveTakes ? EXIT.internal : EXIT.usage,
      `${url}: ${serveTakes ? 'taken by both' : 'refused by both'} (${r.stderr.trim()})`,
    );
  }
});

t.test('an unreachable database: one line, exit 1, no password', async (t) => {
  const r = await runMain(['db', 'migrate', '--database-url', 'postgres://appreg:hunter2@127.0.0.1:1/appreg']);
  t.equal(r.code, EXIT.internal);
  t.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  t.match(r.stderr, /migrate failed \(postgres:\/\/appreg:\*\*\*@127\.0\.0\.1:1\/appreg\)/);
  t.notMatch(r.stderr, /hunter2/);
});

void testWithPg(t, 'migrate, import, export', async (t, url) => {
  const m1 = await runMain(['db', 'migrate', '--json'], { env: { APPREG_DATABASE_URL: url } });
  t.equal(m1.code, 0, m1.stderr);
  t.same(
    JSON.parse(m1.stdout).applied,
    MIGRATIONS.map((m) => m.version),
  );
  const m2 = await runMain(['db', 'migrate', '--database-url', url]);
  t.equal(m2.code, 0);
  t.match(m2.stdout, /is up to date/);

  const source = await sampleDataDir();
  const before = fs
    .readdirSync(source)
    .sort()
    .map((f) => [f, fs.readFileSync(path.join(source, f), 'utf8')]);
  const imp = await runMain(['db', 'import', '--from', source, '--database-url', url, '--json']);
  t.equal(imp.code, 0, imp.stderr);
  const imported = JSON.parse(imp.stdout);
  t.equal(imported.records, 1202);
  t.same(
    imported.tables.map((x: { table: string; records: number }) => [x.table, x.records]),
    [
      ['accounts', 1],
      ['apps', 1],
      ['wsMessages', 1200],
    ],
  );
  t.match(imported.keyFile, /secret\.key/);
  t.same(
    fs
      .readdirSync(source)
      .sort()
      .map((f) => [f, fs.readFileSync(path.join(source, f), 'utf8')]),
    before,
    'the source is left as it was',
  );

  const again = await runMain(['db', 'import', '--from', source, '--database-url', url]);
  t.equal(again.code, EXIT.usage, 'never into a database that holds records');
  t.match(again.stderr, /already holds 1202 records/);

  const target = path.join(work, 'exported');
  const exp = await runMain(['db', 'export', '--to', target, '--database-url', url]);
  t.equal(exp.code, 0, exp.stderr);
  t.match(exp.stdout, /exported to .*1202 records in 3 tables/);
  t.match(exp.stdout, /secret\.key/, 'says the key file must be copied');
  t.notOk(fs.existsSync(path.join(target, 'secret.key')), 'the key is not exported');
  const expJson = await runMain(['db', 'export', '--to', target, '--database-url', url, '--json']);
  t.equal(expJson.code, EXIT.usage, 'never into a directory that holds anything');
  t.match(expJson.stderr, /is not empty/);

  // The round trip: the same records, read back through the embedded store.
  const a = await openEmbeddedStore<TestTables>({ dir: path.join(work, 'source'), logger: quiet, compactIdleMs: 0 });
  const b = await openEmbeddedStore<TestTables>({ dir: target, logger: quiet, compactIdleMs: 0 });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  for (const table of ['apps', 'accounts', 'wsMessages']) {
    const byId = (xs: Array<{ id: string }>) => xs.sort((x, y) => (x.id < y.id ? -1 : 1));
    t.same(byId(await b.all(table)), byId(await a.all(table)), `${table} round-trips`);
  }

  const release = acquireLock(source);
  try {
    const locked = await runMain(['db', 'import', '--from', source, '--database-url', url]);
    t.equal(locked.code, EXIT.dataDirLocked, 'not from a data directory a daemon holds');
  } finally {
    release();
  }
});
