/**
 * The store matrix's databases (test/helpers/pg.ts): a test daemon's is a copy of the run cluster's template, which
 * holds this build's schema, so its migration at start finds nothing to do; a database made for a test of the
 * migrations themselves is empty. Needs the run's cluster (test/run.mjs starts it): run alone, it is skipped.
 */
import t from 'tap';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.js';
import { createSchemaDatabase, createTestDatabase, sqlAt } from '../helpers/pg.js';

const template = process.env.APPREG_TEST_PG_TEMPLATE;
if (!template || !process.env.APPREG_TEST_PG_SHARED) {
  t.plan(0, 'no run cluster with a template (test/run.mjs makes one on PostgreSQL 15 or later)');
} else {
  t.test('a schema database holds every migration, and its first start migrates nothing', async (t) => {
    const url = await createSchemaDatabase();
    t.not(new URL(url).pathname, `/${template}`, 'a database of its own, not the template');
    const versions = await sqlAt<{ version: number }>(url, 'SELECT version FROM appreg_migrations ORDER BY version');
    t.same(
      versions.map((r) => r.version),
      MIGRATIONS.map((m) => m.version),
      'every migration of this build is recorded',
    );
    t.same(await migrate(url), { applied: [], indexes: [] }, 'migrate finds nothing to do');
    const records = await sqlAt<{ n: string }>(url, 'SELECT count(*)::text AS n FROM appreg_records');
    t.equal(records[0]?.n, '0', 'and no record');
  });

  t.test('a test database is empty: a migration test still migrates from nothing', async (t) => {
    const url = await createTestDatabase();
    const tables = await sqlAt<{ n: string }>(
      url,
      `SELECT count(*)::text AS n FROM pg_tables WHERE tablename LIKE 'appreg_%'`,
    );
    t.equal(tables[0]?.n, '0', 'no appreg table');
    const first = await migrate(url);
    t.same(
      first.applied,
      MIGRATIONS.map((m) => m.version),
      'its first migration applies every version',
    );
  });
}
