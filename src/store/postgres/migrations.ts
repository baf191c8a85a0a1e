/**
 * The PostgreSQL schema: numbered migrations recorded in appreg_migrations, and one partial
 * expression index per INDEXED_FIELDS entry. Both run in one transaction under a
 * transaction-level advisory lock, so daemons starting at once against a new database take
 * turns: the first one migrates, the others find nothing left to do.
 *
 * Every service table is a row set of the generic appreg_records table (tbl, id, jsonb data):
 * a service that adds a table needs no migration. A new indexed field needs none either: its
 * index is made at the next start.
 */
import pg, { type ClientBase } from 'pg';
import { INDEXED_FIELDS, PAGE_ORDERS, RETIRED_FIELDS } from '../indexes.js';
import { CONFLICT_SQLSTATE } from './errors.js';
import { COMMIT_BATCH_FUNCTION, COMMIT_FUNCTION_V4, COMMIT_MANY_FUNCTION } from './commit-sql.js';
import { APPREG_VERSION } from '../../version.js';

interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * appreg_commit(expects, changes): a commit in one round trip. Each expected-present record is
 * locked (FOR UPDATE, which waits for a concurrent writer and then sees its result) and compared
 * as jsonb; each expected-absent one is INSERTed as a placeholder without ON CONFLICT, so of two
 * concurrent commits expecting the same absence one waits and then fails on the unique key.
 * Placeholders no change wrote are removed before the end; nobody else ever sees them.
 */
const COMMIT_FUNCTION = `
CREATE OR REPLACE FUNCTION appreg_commit(expects jsonb, changes jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  e jsonb;
  cur jsonb;
BEGIN
  FOR e IN SELECT x FROM jsonb_array_elements(expects) AS t(x) LOOP
    IF e ? 'value' THEN
      SELECT data INTO cur FROM appreg_records WHERE tbl = e->>'table' AND id = e->>'id' FOR UPDATE;
      IF NOT FOUND OR cur IS DISTINCT FROM e->'value' THEN
        RAISE EXCEPTION 'store conflict' USING ERRCODE = '${CONFLICT_SQLSTATE}',
          DETAIL = jsonb_build_object('table', e->'table', 'id', e->'id')::text;
      END IF;
    ELSE
      BEGIN
        INSERT INTO appreg_records (tbl, id, data) VALUES (e->>'table', e->>'id', 'null'::jsonb);
      EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'store conflict' USING ERRCODE = '${CONFLICT_SQLSTATE}',
          DETAIL = jsonb_build_object('table', e->'table', 'id', e->'id')::text;
      END;
    END IF;
  END LOOP;
  INSERT INTO appreg_records (tbl, id, data)
    SELECT c->>'table', c->>'id', c->'value' FROM jsonb_array_elements(changes) AS t(c)
    WHERE jsonb_typeof(c->'value') = 'object'
    ON CONFLICT (tbl, id) DO UPDATE SET data = EXCLUDED.data;
  DELETE FROM appreg_records r USING jsonb_array_elements(changes) AS t(c)
    WHERE jsonb_typeof(c->'value') = 'null' AND r.tbl = c->>'table' AND r.id = c->>'id';
  DELETE FROM appreg_records r USING jsonb_array_elements(expects) AS t(x)
    WHERE NOT (x ? 'value') AND r.tbl = x->>'table' AND r.id = x->>'id' AND r.data = 'null'::jsonb;
END
$fn$`;

/** Append only: a released migration never changes (a database records the versions it ran). */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, hits, appreg_commit',
    sql: `
CREATE TABLE appreg_records (
  tbl text NOT NULL,
  id text NOT NULL,
  data jsonb NOT NULL,
  PRIMARY KEY (tbl, id)
);
CREATE TABLE appreg_hits (
  key text NOT NULL,
  window_ms bigint NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (key, window_ms, window_start)
);
CREATE INDEX appreg_hits_end ON appreg_hits ((window_start + window_ms));
${COMMIT_FUNCTION};`,
  },
  {
    version: 2,
    name: 'hits unlogged',
    // Rate-limit windows need no durability (a crash forgets at most a minute of counts), and a commit
    // that wrote only unlogged rows does not wait for a WAL flush: a counted request no longer costs an fsync.
    sql: `ALTER TABLE appreg_hits SET UNLOGGED;`,
  },
  {
    version: 3,
    name: 'hit windows from the first hit',
    // A window per key that starts at its first hit (as an in-process limiter's does) instead of at
    // whole multiples of its length, which let a burst straddling the turn of a window through twice.
    sql: `
DROP TABLE appreg_hits;
CREATE UNLOGGED TABLE appreg_hit_windows (
  key text NOT NULL,
  window_ms bigint NOT NULL,
  window_end bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (key, window_ms)
);
CREATE INDEX appreg_hit_windows_end ON appreg_hit_windows (window_end);`,
  },
  {
    version: 4,
    name: 'commits in batches, expectations by row version',
    // appreg_commit_many: a daemon sends the commits that queued while its last ones were at the database
    // in one statement; an expectation names the row version read instead of carrying the record
    sql: `${COMMIT_FUNCTION_V4};\n${COMMIT_MANY_FUNCTION};`,
  },
  {
    version: 5,
    name: 'commit batches set-based',
    // appreg_commit_batch: a batch in three statements, not a subtransaction and six statements per
    // commit (most of a PostgreSQL exchange's database CPU); appreg_commit_many stays for older daemons
    sql: `${COMMIT_BATCH_FUNCTION};`,
  },
  {
    version: 6,
    name: 'keys compared as bytes',
    // Ids, table names and indexed values compare in collation "C" (byte order) whatever the
    // database's own: under a language collation (en_US.UTF-8, the default of many installs) each
    // comparison of a key lookup or index insert went through the locale's rules, about 12-15 %
    // of a batched read or write (pgbench). The find and page indexes are dropped here and made
    // again in "C" by ensureIndexes; changing a column's collation rewrites no rows, only its indexes.
    sql: `
DO $$
DECLARE
  i record;
BEGIN
  FOR i IN SELECT indexname FROM pg_indexes
      WHERE schemaname = current_schema() AND tablename = 'appreg_records' AND indexname ~ '^appreg_[ip]x_' LOOP
    EXECUTE format('DROP INDEX %I', i.indexname);
  END LOOP;
END
$$;
ALTER TABLE appreg_records ALTER COLUMN tbl TYPE text COLLATE "C", ALTER COLUMN id TYPE text COLLATE "C";
ALTER TABLE appreg_hit_windows ALTER COLUMN key TYPE text COLLATE "C";`,
  },
];

/** Any lock id would do, as long as every appreg daemon uses the same one. */
const LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('appreg:migrate'))`;

/** Names are spelled into SQL: only these characters (table and field names are code constants). */
const SAFE_NAME = /^[A-Za-z0-9_]+$/;

export function assertSafeName(name: string): void {
  if (!SAFE_NAME.test(name))
    throw new TypeError(`store: ${JSON.stringify(name)} cannot be used as a table or field name on PostgreSQL`);
}

const indexName = (table: string, field: string) => `appreg_ix_${table}_${field}`;
const pageIndexName = (table: string, field: string, orderBy: string) => `appreg_px_${table}_${field}_${orderBy}`;

/**
 * A page's order value: the field as a number, NULL when it holds none (such records are on no
 * page). findPage spells it exactly so, which is how the planner matches it to the page index.
 */
export function pageKey(orderBy: string): string {
  assertSafeName(orderBy);
  return `(CASE WHEN jsonb_typeof(data->'${orderBy}') = 'number' THEN (data->>'${orderBy}')::float8 END)`;
}

/**
 * A record's value under an indexed field, as its index holds it and as a find compares it: text in
 * collation "C" (byte order, as the keys since schema version 6). A find spells it exactly so; a
 * comparison in another collation would not use the index.
 */
export function fieldKey(field: string): string {
  assertSafeName(field);
  return `(data->>'${field}') COLLATE "C"`;
}

export interface MigrateResult {
  /** Versions applied now (empty when the schema was current). */
  applied: number[];
  /** Indexes created now. */
  indexes: string[];
}

/** Bring the schema and the find indexes up to date; safe when several daemons do it at once. */
export async function migrateWith(client: ClientBase): Promise<MigrateResult> {
  await client.query('BEGIN');
  try {
    await client.query(LOCK_SQL);
    await client.query(`CREATE TABLE IF NOT EXISTS appreg_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM appreg_migrations')).rows.map((r) => r.version),
    );
    // A newer appreg migrated this database: this one does not know its schema, so it must not use it.
    const known = new Set(MIGRATIONS.map((m) => m.version));
    const unknown = [...done].filter((v) => !known.has(v));
    if (unknown.length)
      throw new Error(
        `the database schema is at version ${Math.max(...unknown)}, newer than this appreg (${APPREG_VERSION}) knows (${MIGRATIONS.length}): run the appreg that migrated it, or a newer one`,
      );
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO appreg_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    const indexes = await ensureIndexes(client);
    await client.query('COMMIT');
    return { applied, indexes };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/**
 * One partial index per indexed field, and one per page order (the field, the order value, the
 * id), made only when missing: CREATE INDEX takes a lock that blocks writes even when the index
 * exists, so existing ones are looked up first. A field with a page order has no index of its own:
 * the page index, which starts with it, serves its finds and counts too, and the planner, given
 * both, took the field's own index and sorted the whole channel for every page (the estimate of
 * rows left after the order value's conditions is one). One made before is dropped, as are the
 * indexes of RETIRED_FIELDS.
 */
async function ensureIndexes(client: ClientBase): Promise<string[]> {
  const existing = new Set(
    (
      await client.query<{ indexname: string }>(
        `SELECT indexname FROM pg_indexes WHERE tablename = 'appreg_records' AND schemaname = current_schema()`,
      )
    ).rows.map((r) => r.indexname),
  );
  const made: string[] = [];
  const make = async (name: string, def: string) => {
    if (existing.has(name)) return;
    await client.query(`CREATE INDEX IF NOT EXISTS "${name}" ON appreg_records ${def}`);
    made.push(name);
  };
  const drop = async (name: string) => {
    if (existing.has(name)) await client.query(`DROP INDEX IF EXISTS "${name}"`);
  };
  for (const [table, fields] of Object.entries(INDEXED_FIELDS)) {
    assertSafeName(table);
    for (const field of fields) {
      assertSafeName(field);
      const orders = PAGE_ORDERS[table]?.[field] ?? [];
      for (const orderBy of orders)
        await make(
          pageIndexName(table, field, orderBy),
          `(${fieldKey(field)}, ${pageKey(orderBy)}, id) WHERE tbl = '${table}'`,
        );
      if (!orders.length) await make(indexName(table, field), `(${fieldKey(field)}) WHERE tbl = '${table}'`);
      else await drop(indexName(table, field));
    }
  }
  // the indexes of fields no lookup uses any more: each write of their records paid for them
  for (const [table, fields] of Object.entries(RETIRED_FIELDS)) {
    for (const field of fields) if (!INDEXED_FIELDS[table]?.includes(field)) await drop(indexName(table, field));
  }
  return made;
}

/** A connection of its own to `url` for `fn` (the `db` commands, which open no store), closed after. */
export async function withClient<T>(
  url: string,
  applicationName: string,
  fn: (c: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** `appreg db migrate`: bring the database at `url` up to date, without opening a store. */
export function migrate(url: string): Promise<MigrateResult> {
  return withClient(url, 'appreg-migrate', migrateWith);
}
