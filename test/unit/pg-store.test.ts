/**
 * What only the PostgreSQL store has: its migrations (idempotent, safe when daemons start at
 * once), the password kept out of logs, and health through a dropped connection.
 */
import t from 'tap';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import { StoreConflict } from '../../src/store/types.js';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { redactUrl, withJitOff } from '../../src/store/postgres/url.js';
import { INDEXED_FIELDS, PAGE_ORDERS } from '../../src/store/indexes.js';
import { createTestDatabase, sqlAt as sql, testWithPg } from '../helpers/pg.js';
import type { TestTables } from '../helpers/test-tables.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function captureLogger() {
  const lines: string[] = [];
  return {
    lines,
    warn: (msg: string, fields?: Record<string, unknown>) => void lines.push(`${msg} ${JSON.stringify(fields ?? {})}`),
  };
}

/**
 * `read` (a statistics counter) once every other connection of the database has ended and
 * reported. Since PostgreSQL 15 a backend adds its counters to the shared statistics as it exits,
 * before it leaves pg_stat_activity (its statistics are flushed by a before_shmem_exit callback, its
 * activity entry cleared by an on_shmem_exit one, which run after): the read is then final. Before
 * 15 a statistics collector added them later: read until two reads agree.
 */
async function settledCount(url: string, read: () => Promise<number>): Promise<number> {
  const others = `SELECT count(*)::text AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`;
  while (Number((await sql<{ n: string }>(url, others))[0]?.n) > 0) await sleep(20);
  if (Number(must((await sql<{ v: string }>(url, 'SHOW server_version_num'))[0]).v) >= 150000) return read();
  let last = await read();
  for (;;) {
    await sleep(500);
    const now = await read();
    if (now === last) return now;
    last = now;
  }
}

async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

t.test('redactUrl keeps the password out', async (t) => {
  t.equal(redactUrl('postgres://appreg:s3cret@db.example:5432/appreg'), 'postgres://appreg:***@db.example:5432/appreg');
  t.equal(
    redactUrl('postgresql://u@h/d?password=s3cret&sslmode=require'),
    'postgresql://u@h/d?password=***&sslmode=require',
  );
  t.equal(redactUrl('postgres://h/d'), 'postgres://h/d');
  t.notMatch(redactUrl('not a url s3cret'), /s3cret/);
});

t.test("withJitOff adds to the connection options, keeping the operator's", async (t) => {
  t.equal(withJitOff('postgres://u:p@h:5432/d'), 'postgres://u:p@h:5432/d?options=-c+jit%3Doff');
  t.equal(
    new URL(withJitOff('postgres://h/d?options=-c%20work_mem%3D8MB&sslmode=require')).searchParams.get('options'),
    '-c jit=off -c work_mem=8MB',
  );
  t.equal(
    new URL(withJitOff('postgresql://u@localhost/d?host=%2Ftmp%2Fpg&port=5433')).searchParams.get('host'),
    '/tmp/pg',
    'a unix socket directory survives',
  );
});

void testWithPg(t, "the store's connections run without JIT", async (t, url) => {
  const c = new pg.Client({ connectionString: withJitOff(url) });
  await c.connect();
  t.teardown(() => c.end());
  t.equal((await c.query<{ jit: string }>('SHOW jit')).rows[0]?.jit, 'off');
});

void testWithPg(t, 'migrations', async (t, url) => {
  const runs = await Promise.all([1, 2, 3].map(() => migrate(url)));
  const applied = runs.map((r) => r.applied);
  t.equal(
    applied.filter((a) => a.length).length,
    1,
    'three racing migrations: one applies, the others wait and find it done',
  );
  t.same(
    applied.flat(),
    MIGRATIONS.map((m) => m.version),
  );
  const again = await migrate(url);
  t.same(again, { applied: [], indexes: [] }, 'idempotent');
  await sql(url, `INSERT INTO appreg_migrations (version, name) VALUES (999, 'from the future')`);
  await t.rejects(
    migrate(url),
    /schema is at version 999, newer than this appreg \(\d+\.\d+\.\d+\) knows/,
    'a newer schema is refused',
  );
  await sql(url, 'DELETE FROM appreg_migrations WHERE version = 999');
  const rows = await sql<{ version: number }>(url, 'SELECT version FROM appreg_migrations ORDER BY version');
  t.same(
    rows.map((r) => r.version),
    MIGRATIONS.map((m) => m.version),
  );
  const names = async () =>
    (
      await sql<{ name: string }>(
        url,
        `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'appreg_records' AND indexname ~ '^appreg_[ip]x_' ORDER BY 1`,
      )
    ).map((r) => r.name);
  const paged = Object.entries(PAGE_ORDERS).flatMap(([table, fields]) =>
    Object.entries(fields).flatMap(([field, orders]) => orders.map((o) => `appreg_px_${table}_${field}_${o}`)),
  );
  const own = Object.entries(INDEXED_FIELDS).flatMap(([table, fields]) =>
    fields.filter((f) => !PAGE_ORDERS[table]?.[f]).map((f) => `appreg_ix_${table}_${f}`),
  );
  t.ok(paged.length > 0);
  t.same(
    await names(),
    [...own, ...paged].sort(),
    "one index per indexed field, and one per page order in place of its field's own",
  );
  // a database an earlier appreg made: the index of a field with a page order, and one of a field no lookup uses any
  // more
  await sql(
    url,
    `CREATE INDEX "appreg_ix_wsMessages_channelId" ON appreg_records ((data->>'channelId')) WHERE tbl = 'wsMessages'`,
  );
  await sql(
    url,
    `CREATE INDEX "appreg_ix_oauthTokens_workspaceUserId" ON appreg_records ((data->>'workspaceUserId')) WHERE tbl = 'oauthTokens'`,
  );
  t.same(await migrate(url), { applied: [], indexes: [] });
  t.same(await names(), [...own, ...paged].sort(), 'both are dropped at the next start');
  const plan = await sql<{ 'QUERY PLAN': string }>(
    url,
    `EXPLAIN SELECT data FROM appreg_records WHERE tbl = 'apps' AND (data->>'ownerId') = 'u1'`,
  );
  t.match(plan.map((r) => r['QUERY PLAN']).join('\n'), /appreg_ix_apps_ownerId/, 'find uses its index');
});

/** The collation of each named column of `table`. */
async function collations(url: string, table: string): Promise<Record<string, string>> {
  const rows = await sql<{ col: string; coll: string }>(
    url,
    `SELECT a.attname AS col, c.collname AS coll FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation WHERE a.attrelid = $1::regclass AND a.attnum > 0`,
    [table],
  );
  return Object.fromEntries(rows.map((r) => [r.col, r.coll]));
}

/** An index definition (as pg_indexes shows it) whose field's values are held in "C". */
const IN_C = /\(data ->> '\w+'::text\)+ COLLATE "C"/;
const findIndexDefs = async (url: string) =>
  (
    await sql<{ def: string }>(
      url,
      `SELECT indexdef AS def FROM pg_indexes WHERE tablename = 'appreg_records' AND indexname ~ '^appreg_[ip]x_' ORDER BY indexname`,
    )
  ).map((r) => r.def);

void testWithPg(t, 'keys and indexed values compare as bytes, whatever collation the database has', async (t, url) => {
  // a database whose own collation is a language's (C.UTF-8 is one to PostgreSQL 15, and is on every Debian)
  const name = `${new URL(url).pathname.slice(1)}_utf8`;
  const other = Object.assign(new URL(url), { pathname: `/${name}` }).toString();
  await sql(url, `CREATE DATABASE "${name}" LOCALE 'C.UTF-8' TEMPLATE template0`);
  t.teardown(() => sql(url, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  t.equal(
    must(
      (
        await sql<{ c: string }>(other, 'SELECT datcollate AS c FROM pg_database WHERE datname = current_database()')
      )[0],
    ).c,
    'C.UTF-8',
  );
  await migrate(other);
  t.same(await collations(other, 'appreg_records'), { tbl: 'C', id: 'C' }, 'table names and ids in "C"');
  t.same(await collations(other, 'appreg_hit_windows'), { key: 'C' }, 'rate-limit keys too');
  const defs = await findIndexDefs(other);
  t.ok(defs.length > 5, 'the find and page indexes are made');
  t.same(
    defs.filter((d) => !IN_C.test(d)),
    [],
    'each holds its field\'s values in "C"',
  );

  // a find reads only its key's entries of the index: its comparison is in the index's collation
  const store = await openPostgresStore<TestTables>({ url: other, logger: captureLogger(), instanceId: 'collation' });
  await store.commit(
    Array.from({ length: 40 }, (_, i) => ({
      table: 'apps',
      id: `a${i}`,
      value: { id: `a${i}`, ownerId: i < 3 ? 'u1' : `u${i}` },
    })),
  );
  const scans = async () =>
    must(
      (
        await sql<{ n: string }>(
          other,
          `SELECT (idx_scan * 1000000 + idx_tup_read)::text AS n FROM pg_stat_user_indexes WHERE indexrelname = 'appreg_ix_apps_ownerId'`,
        )
      )[0],
    ).n;
  const settled = () => settledCount(other, async () => Number(await scans()));
  await store.close();
  const before = await settled();
  const reading = await openPostgresStore<TestTables>({ url: other, logger: captureLogger(), instanceId: 'collation' });
  t.same((await reading.find('apps', 'ownerId', 'u1')).map((r) => r.id).sort(), ['a0', 'a1', 'a2']);
  await reading.close();
  const used = (await settled()) - before;
  t.equal(Math.floor(used / 1000000), 1, 'one scan of the find index');
  t.equal(used % 1000000, 3, 'which read the three entries under u1, not the 40 of the table');
});

void testWithPg(
  t,
  'a database an earlier appreg made gets its keys in "C" at the next start, its records kept',
  async (t, url) => {
    const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'upgrade' });
    await store.commit([
      { table: 'apps', id: 'a1', value: { id: 'a1', ownerId: 'u1' } },
      { table: 'wsMessages', id: 'm1', value: { id: 'm1', channelId: 'c1', seq: 1 } },
    ]);
    await store.close();
    // schema version 5, as it was: the default collation, the indexes spelled without one
    await sql(url, `DELETE FROM appreg_migrations WHERE version = 6`);
    for (const def of await findIndexDefs(url))
      await sql(url, `DROP INDEX "${must(must(/INDEX (\S+) ON/.exec(def))[1]).replace(/"/g, '')}"`);
    await sql(
      url,
      `ALTER TABLE appreg_records ALTER COLUMN tbl TYPE text COLLATE "default", ALTER COLUMN id TYPE text COLLATE "default"`,
    );
    await sql(url, `ALTER TABLE appreg_hit_windows ALTER COLUMN key TYPE text COLLATE "default"`);
    await sql(url, `CREATE INDEX "appreg_ix_apps_ownerId" ON appreg_records ((data->>'ownerId')) WHERE tbl = 'apps'`);
    t.same(await collations(url, 'appreg_records'), { tbl: 'default', id: 'default' });

    const r = await migrate(url);
    t.same(r.applied, [6], 'only the new version runs');
    t.ok(r.indexes.includes('appreg_ix_apps_ownerId'), 'the old index was made again');
    t.same(await collations(url, 'appreg_records'), { tbl: 'C', id: 'C' });
    t.same(await collations(url, 'appreg_hit_windows'), { key: 'C' });
    t.same(
      (await findIndexDefs(url)).filter((d) => !IN_C.test(d)),
      [],
      'every index made again in "C"',
    );
    const again = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'upgrade' });
    t.same(
      await again.find('apps', 'ownerId', 'u1'),
      [{ id: 'a1', ownerId: 'u1' }],
      'records kept, found by their index',
    );
    t.same((await again.findPage('wsMessages', 'channelId', 'c1', { orderBy: 'seq', limit: 10 })).length, 1);
    await again.close();
  },
);

void testWithPg(t, 'every test database is a new, empty one', async (t, url) => {
  const other = await createTestDatabase();
  t.not(other, url);
  await migrate(url);
  const tables = await sql<{ n: number }>(
    other,
    `SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'appreg_%'`,
  );
  t.equal(must(tables[0]).n, 0);
});

void testWithPg(t, 'three stores opening a new database at once', async (t, url) => {
  const stores = await Promise.all(
    ['x', 'y', 'z'].map((id) => openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: id })),
  );
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  await must(stores[0]).commit([{ table: 't', id: '1', value: { a: 1 } }]);
  t.same(await must(stores[2]).get('t', '1'), { a: 1 });
});

void testWithPg(t, 'the password never reaches the log', async (t, url) => {
  const u = new URL(url);
  u.username = 'nobody';
  u.password = 'hunter2-secret';
  const logger = captureLogger();
  const err = await openPostgresStore<TestTables>({ url: u.toString(), logger, instanceId: 'p' }).catch(
    (e: Error) => e,
  );
  t.ok(err instanceof Error, 'a role that does not exist: open fails');
  t.notMatch((err as Error).message, /hunter2/, 'not in the error');
  t.match((err as Error).message, /nobody/, "the database's own reason");
  t.notMatch(logger.lines.join('\n'), /hunter2/, 'not in the log');
});

void testWithPg(t, 'a dropped connection: health not ok, then ok again', async (t, url) => {
  const logger = captureLogger();
  // the store's probe (every 50 ms) and its LISTEN reconnect (250 ms) run when the test advances it
  const clock = createTestClock();
  const store = await openPostgresStore<TestTables>({ url, logger, clock, instanceId: 'health-test', retryMs: 50 });
  t.teardown(() => store.close());
  let heard = 0;
  const gaps: number[] = [];
  store.subscribe(
    'ping',
    () => heard++,
    (lostMs) => gaps.push(lostMs),
  );
  await store.publish('ping', 'x');
  await until('the first message', () => heard === 1);
  t.same(gaps, [], 'no gap while the connection holds');
  await store.get('t', '1'); // leaves an idle pooled connection
  t.same(store.health(), { ok: true });
  // Every connection of this store is killed, as a database restart would.
  await sql(
    url,
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'appreg-health-test'`,
  );
  await until('health to fail', () => !store.health().ok);
  await until('the LISTEN connection to be missed', () => /LISTEN connection/.test(logger.lines.join('\n')));
  await clock.advance(50);
  t.same(store.health(), { ok: true }, 'ok again at the next probe, without a request');
  t.match(logger.lines.join('\n'), /unreachable/);
  await store.commit([{ table: 't', id: '1', value: { back: true } }]);
  t.same(await store.get('t', '1'), { back: true }, 'reads and writes work again');
  t.same(gaps, [], 'not told of a gap while the LISTEN connection is down');
  await clock.advance(200); // the listener reconnects by itself, and LISTENs again
  t.equal(gaps.length, 1, 'the subscription is told of the gap once, when the LISTEN is back');
  t.equal(gaps[0], 250, 'with how long messages were not heard');
  await store.subscribed();
  await store.publish('ping', 'y');
  await until('the message after the drop', () => heard === 2);
  t.pass('subscriptions survive the drop');
});

void testWithPg(t, 'timings', async (t, url) => {
  const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'timing' });
  t.teardown(() => store.close());
  const n = 300;
  await store.commit([{ table: 't', id: 'warm', value: { v: 0 } }]);
  let start = process.hrtime.bigint();
  for (let i = 0; i < n; i++)
    await store.commit([{ table: 't', id: `k${i}`, value: { v: i } }], [{ table: 't', id: `k${i}`, value: undefined }]);
  const commitUs = Number(process.hrtime.bigint() - start) / 1000 / n;
  start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await store.get('t', `k${i}`);
  const getUs = Number(process.hrtime.bigint() - start) / 1000 / n;
  t.comment(
    `commit with an expectation: ${commitUs.toFixed(0)} µs; get: ${getUs.toFixed(0)} µs (sequential, fsync off)`,
  );
  t.ok(commitUs < 50_000 && getUs < 50_000, 'sane');
});

void testWithPg(t, 'an expectation on a record read names its row version', async (t, url) => {
  const a = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'ver-a' });
  t.teardown(() => a.close());
  const b = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'ver-b' });
  t.teardown(() => b.close());
  await a.commit([{ table: 't', id: 'r', value: { v: 1 } }]);
  const read = must(await a.get('t', 'r'));
  read.v = 5; // the caller's copy: changing it changes neither the record nor what was read
  await a.commit([{ table: 't', id: 'r', value: { v: 2 } }], [{ table: 't', id: 'r', value: read }]);
  t.same(await b.get('t', 'r'), { v: 2 }, 'unchanged since read: lands');
  const again = must(await a.get('t', 'r'));
  await b.commit([{ table: 't', id: 'r', value: { v: 3 } }]);
  await b.commit([{ table: 't', id: 'r', value: { v: 2 } }]);
  await t.rejects(
    a.commit([{ table: 't', id: 'r', value: { v: 9 } }], [{ table: 't', id: 'r', value: again }]),
    StoreConflict,
    'rewritten, even back to the same value: a conflict',
  );
  const same = must(await a.get('t', 'r'));
  await b.commit([{ table: 't', id: 'r', value: { v: 2 } }]);
  await a.commit([{ table: 't', id: 'r', value: { v: 2, by: 'a' } }], [{ table: 't', id: 'r', value: same }]);
  t.same(
    await b.get('t', 'r'),
    { v: 2, by: 'a' },
    'a write of what the record already holds changes nothing, its version neither',
  );
  await b.commit([{ table: 't', id: 'r', value: { v: 2 } }]);
  await a.commit([{ table: 't', id: 'r', value: { v: 4 } }], [{ table: 't', id: 'r', value: { v: 2 } }]);
  t.same(await b.get('t', 'r'), { v: 4 }, 'a value the caller built is compared as a value');
  const [seen] = await a.getMany([{ table: 't', id: 'r' }]);
  await t.rejects(a.commit([], [{ table: 't', id: 'r', value: { v: 2 } }]), StoreConflict, 'and fails when it differs');
  await a.commit([{ table: 't', id: 'r', value: null }], [{ table: 't', id: 'r', value: must(seen) }]);
  t.equal(await b.get('t', 'r'), undefined, 'getMany records carry their version too');
  await a.commit([{ table: 'q', id: 'e', value: { id: 'e', dueAt: 1 } }]);
  const [claimed] = await a.claim({ table: 'q', dueField: 'dueAt', now: 10, leaseUntil: 100, limit: 1, owner: 'A' });
  await a.commit([{ table: 'q', id: 'e', value: null }], [{ table: 'q', id: 'e', value: must(claimed) }]);
  t.equal(await b.get('q', 'e'), undefined, 'a claimed record is expected as claimed');
});

void testWithPg(t, 'commits made at once go to the database together', async (t, url) => {
  const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'batch' });
  t.teardown(() => store.close());
  // what each of the store's connections ran last (pg_stat_activity keeps it while the connection is idle)
  const last = async () =>
    (
      await sql<{ query: string }>(
        url,
        `SELECT query FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'appreg-batch'`,
      )
    ).map((r) => r.query);
  await store.commit([{ table: 't', id: 'alone', value: { i: 0 } }]);
  t.match((await last()).join('\n'), /appreg_commit_batch/, 'a commit alone is a batch of one');
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      store.commit(
        [{ table: 't', id: `c${i % 10}`, value: { i } }],
        [{ table: 't', id: `c${i % 10}`, value: undefined }],
      ),
    ),
  );
  t.match(
    (await last()).join('\n'),
    /appreg_commit_batch/,
    'twenty made at once: in batches (test/unit/pg-batcher.test.ts shows which go together)',
  );
  t.equal(
    results.filter((r) => r.status === 'fulfilled').length,
    10,
    'and each answered alone: ten creators, ten conflicts',
  );
  t.equal(await store.count('t'), 11);
});

void testWithPg(
  t,
  'reading a whole table is planned for that table: a small one is not found by scanning every record',
  async (t, url) => {
    const seeding = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'plans' });
    await sql(
      url,
      `INSERT INTO appreg_records (tbl, id, data) SELECT 'big', 'b' || g, jsonb_build_object('id', 'b' || g) FROM generate_series(1, 5000) g`,
    );
    await seeding.commit([{ table: 'tiny', id: 't1', value: { id: 't1' } }]);
    await sql(url, 'ANALYZE appreg_records');
    await seeding.close();
    const scans = async () =>
      Number(
        (
          await sql<{ n: string }>(
            url,
            `SELECT seq_scan::text AS n FROM pg_stat_user_tables WHERE relname = 'appreg_records'`,
          )
        )[0]?.n,
      );
    const settled = () => settledCount(url, scans);
    const before = await settled();
    const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'plans' });
    // a prepared statement turns generic after five runs: the whole-table plan the big table needs would then serve the
    // tiny one too
    for (let i = 0; i < 6; i++) t.equal((await store.all('big')).length, 5000);
    for (let i = 0; i < 10; i++) t.equal((await store.all('tiny')).length, 1);
    t.equal(await store.count('tiny'), 1);
    await store.close(); // its connections end, and report their counters
    t.equal((await settled()) - before, 6, 'the big table was scanned six times; the tiny one never');
  },
);

void testWithPg(t, 'appreg_commit_batch decides each commit of a batch on its own, in the database', async (t, url) => {
  const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'batch-sql' });
  await store.commit([{ table: 't', id: 'there', value: { v: 1 } }]);
  await store.close();
  const batch = (commits: unknown[]) =>
    sql<{ out: unknown[] }>(url, 'SELECT appreg_commit_batch($1::jsonb) AS out', [JSON.stringify(commits)]).then(
      (r) => must(r[0]).out,
    );
  const v = must(
    (await sql<{ v: string }>(url, `SELECT xmin::text AS v FROM appreg_records WHERE tbl = 't' AND id = 'there'`))[0],
  ).v;
  const out = await batch([
    [[{ table: 't', id: 'new1' }], [{ table: 't', id: 'new1', value: { n: 1 } }]], // expects absent: lands
    [[{ table: 't', id: 'there' }], [{ table: 't', id: 'x', value: { n: 2 } }]], // expects absent, but it is there
    [[{ table: 't', id: 'there', v }], [{ table: 't', id: 'there', value: { v: 2 } }]], // the version read: lands
    [[{ table: 't', id: 'there', v: '1' }], [{ table: 't', id: 'y', value: { n: 3 } }]], // another version: refused
    [[{ table: 't', id: 'gone', value: { v: 1 } }], [{ table: 't', id: 'z', value: { n: 4 } }]], // expects a record that is not there
    [[{ table: 't', id: 'new2' }], []], // expects absent and writes nothing: its placeholder goes
  ]);
  t.same(
    out,
    [null, { table: 't', id: 'there' }, null, { table: 't', id: 'there' }, { table: 't', id: 'gone' }, null],
    'one answer per commit',
  );
  const rows = await sql<{ id: string; data: unknown }>(
    url,
    `SELECT id, data FROM appreg_records WHERE tbl = 't' ORDER BY id`,
  );
  t.same(
    rows,
    [
      { id: 'new1', data: { n: 1 } },
      { id: 'there', data: { v: 2 } },
    ],
    'only what the commits that held wrote; no placeholder left',
  );
});

void testWithPg(
  t,
  "a page of a channel's messages reads that page from an index, not the whole channel",
  async (t, url) => {
    const seeding = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'pages' });
    await sql(
      url,
      `INSERT INTO appreg_records (tbl, id, data)
    SELECT 'wsMessages', 'm' || g, jsonb_build_object('id', 'm' || g, 'channelId', CASE WHEN g % 100 = 0 THEN 'other' ELSE 'big' END, 'seq', g / 2) FROM generate_series(1, 6000) g`,
    );
    await seeding.commit([
      { table: 'wsMessages', id: 'unordered', value: { id: 'unordered', channelId: 'big', seq: 'not a number' } },
    ]);
    await sql(url, 'ANALYZE appreg_records');
    await seeding.close();
    const index = 'appreg_px_wsMessages_channelId_seq';
    const stat = (column: string) => async () =>
      Number(
        (
          await sql<{ n: string }>(
            url,
            `SELECT ${column}::text AS n FROM pg_stat_user_indexes WHERE indexrelname = $1`,
            [index],
          )
        )[0]?.n,
      );
    t.ok(Number.isFinite(await stat('idx_scan')()), 'the page index is made at start');
    const [scans0, read0] = [await settledCount(url, stat('idx_scan')), await stat('idx_tup_read')()];

    const store = await openPostgresStore<TestTables>({ url, logger: captureLogger(), instanceId: 'pages' });
    type M = { id: string; seq: number };
    const seqs = (ms: M[]) => ms.map((m) => `${m.seq}/${m.id}`);
    // more than five calls: the prepared statement's generic plan must use the index too
    let after: { value: number; id: string } | undefined;
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const ms = await store.findPage('wsMessages', 'channelId', 'big', {
        orderBy: 'seq',
        desc: true,
        limit: 5,
        ...(after ? { after } : {}),
      });
      seen.push(...seqs(ms));
      after = { value: must(ms.at(-1)).seq, id: must(ms.at(-1)).id };
    }
    // seq = g / 2, so two messages share each seq (then ids in byte order, largest first); m6000 is
    // in the other channel
    t.same(seen.slice(0, 6), ['2999/m5999', '2999/m5998', '2998/m5997', '2998/m5996', '2997/m5995', '2997/m5994']);
    t.equal(seen.length, 40);
    t.notOk(
      seen.some((s) => s.endsWith('/m5900')),
      "another channel's message is on no page",
    );
    const oldest = await store.findPage('wsMessages', 'channelId', 'big', { orderBy: 'seq', limit: 3 });
    t.same(
      seqs(oldest),
      ['0/m1', '1/m2', '1/m3'],
      'oldest first too; a record whose order value is not a number is on no page',
    );
    await store.close();

    t.ok((await settledCount(url, stat('idx_scan'))) - scans0 >= 9, 'every page read the page index');
    t.ok(
      (await stat('idx_tup_read')()) - read0 < 100,
      'and only about the rows of its page (5,940 are in the channel)',
    );
  },
);
