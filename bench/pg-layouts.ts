/**
 * What the token exchange's write costs the database under three table layouts, side by side in
 * one run: consume a code (rewrite its record) and insert a token, as one statement, on
 *   (a) `oneTable`: appreg's own schema (made by the store itself): every kind of record in
 *       appreg_records, a partial index per indexed field of every kind;
 *   (b) `tablePerKind`: the codes and the tokens in tables of their own, each with its one index;
 *   (c) `partitioned`: appreg_records partitioned by kind (codes, tokens, the rest), each
 *       partition with only its own kind's index.
 * Each database holds 200,000 codes and 110,000 tokens (the token benchmark's shapes). A statement
 * writes one exchange's records, or 16 exchanges' (as a busy daemon's commit batch does). The
 * layouts take turns, round after round (BENCH_ROUNDS, 5); the round of median CPU is kept. CPU
 * per write = the database backends serving the load (/proc), over exchanges' writes. A question
 * for the schema, not a target: it says what a migration to another layout would save an exchange.
 * PostgreSQL is a throwaway 15 cluster (test/helpers/pg.ts: fsync off).
 * Run: npm run bench:pg-layouts
 */
import os from 'node:os';
import pg from 'pg';
import { load, processCpuMs, writeResult } from './lib.js';
import { openPostgresStore } from '../src/store/postgres/pg-store.js';
import { sqlAt as sql, startPgCluster } from '../test/helpers/pg.js';
import { must } from '../src/must.js';

const CODES = Number(process.env.BENCH_CODES ?? 200_000);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 110_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONC = 4;
/** Exchanges' writes per statement: one alone, and as many as a busy daemon's commit batch holds (about 16). */
const BATCHES = [1, 16];

const codeJson = `jsonb_build_object('id', 'c' || g, 'clientId', 'app' || (g % 1000), 'sweepMinute', (29000000 + g / 500)::text, 'expiresAt', 1800000000000 + g, 'codeHash', md5(g::text) || md5(g::text), 'scopes', jsonb_build_array('messages:read', 'channels:read'), 'installationId', 'ins' || g, 'authorizationId', 'au' || g, 'redirectUrl', 'https://example.com/cb', 'workspaceId', 'ws_1', 'workspaceUserId', 'wu_' || (g % 10))`;
const tokenJson = `jsonb_build_object('id', 't' || g, 'appId', 'app' || (g % 1000), 'workspaceUserId', 'wu_' || (g % 10), 'kind', 'user', 'hash', md5(g::text) || md5(g::text), 'scopes', jsonb_build_array('messages:read'), 'createdAt', '2026-11-26T00:00:00.000Z', 'expiresAt', 1800000000000)`;

interface Layout {
  name: string;
  url: string;
  /**
   * Exchanges' writes in one statement: $1 the codes' ids (text[]), $2 the consumed mark, $3 the new tokens (a jsonb
   * array of {id, data}).
   */
  write: string;
}

/** The codes and tokens into `table`, a (tbl, id, data) table as appreg's, then vacuumed. */
async function seedKinds(url: string, table: string): Promise<void> {
  await sql(
    url,
    `INSERT INTO ${table} (tbl, id, data) SELECT 'oauthCodes', 'c' || g, ${codeJson} FROM generate_series(1, $1::int) g`,
    [CODES],
  );
  await sql(
    url,
    `INSERT INTO ${table} (tbl, id, data) SELECT 'oauthTokens', 't' || g, ${tokenJson} FROM generate_series(1, $1::int) g`,
    [TOKENS],
  );
  await sql(url, `VACUUM ANALYZE ${table}`);
}

async function oneTable(url: string): Promise<Layout> {
  const store = await openPostgresStore({ url, logger: { warn: () => {} }, instanceId: 'layouts' }); // the schema and indexes, as a daemon makes them
  await store.close();
  await seedKinds(url, 'appreg_records');
  const write = `WITH used AS (UPDATE appreg_records SET data = data || $2::jsonb WHERE tbl = 'oauthCodes' AND id = ANY($1::text[]) RETURNING 1)
    INSERT INTO appreg_records (tbl, id, data) SELECT 'oauthTokens', t->>'id', t->'data' FROM jsonb_array_elements($3::jsonb) t`;
  return { name: 'oneTable', url, write };
}

async function tablePerKind(url: string): Promise<Layout> {
  for (const q of [
    'CREATE TABLE kind_codes (id text PRIMARY KEY, data jsonb NOT NULL)',
    `CREATE INDEX kind_codes_sweep ON kind_codes ((data->>'sweepMinute'))`,
    'CREATE TABLE kind_tokens (id text PRIMARY KEY, data jsonb NOT NULL)',
    `CREATE INDEX kind_tokens_app ON kind_tokens ((data->>'appId'))`,
  ])
    await sql(url, q);
  await sql(url, `INSERT INTO kind_codes (id, data) SELECT 'c' || g, ${codeJson} FROM generate_series(1, $1::int) g`, [
    CODES,
  ]);
  await sql(
    url,
    `INSERT INTO kind_tokens (id, data) SELECT 't' || g, ${tokenJson} FROM generate_series(1, $1::int) g`,
    [TOKENS],
  );
  await sql(url, 'VACUUM ANALYZE kind_codes, kind_tokens');
  const write = `WITH used AS (UPDATE kind_codes SET data = data || $2::jsonb WHERE id = ANY($1::text[]) RETURNING 1)
    INSERT INTO kind_tokens (id, data) SELECT t->>'id', t->'data' FROM jsonb_array_elements($3::jsonb) t`;
  return { name: 'tablePerKind', url, write };
}

async function partitioned(url: string): Promise<Layout> {
  for (const q of [
    'CREATE TABLE parted (tbl text NOT NULL, id text NOT NULL, data jsonb NOT NULL, PRIMARY KEY (tbl, id)) PARTITION BY LIST (tbl)',
    `CREATE TABLE parted_codes PARTITION OF parted FOR VALUES IN ('oauthCodes')`,
    `CREATE TABLE parted_tokens PARTITION OF parted FOR VALUES IN ('oauthTokens')`,
    'CREATE TABLE parted_rest PARTITION OF parted DEFAULT',
    `CREATE INDEX parted_codes_sweep ON parted_codes ((data->>'sweepMinute'))`,
    `CREATE INDEX parted_tokens_app ON parted_tokens ((data->>'appId'))`,
  ])
    await sql(url, q);
  await seedKinds(url, 'parted');
  const write = `WITH used AS (UPDATE parted SET data = data || $2::jsonb WHERE tbl = 'oauthCodes' AND id = ANY($1::text[]) RETURNING 1)
    INSERT INTO parted (tbl, id, data) SELECT 'oauthTokens', t->>'id', t->'data' FROM jsonb_array_elements($3::jsonb) t`;
  return { name: 'partitioned', url, write };
}

let tokenNo = 0;
/** One round of `l` with `batch` exchanges' writes per statement; CPU per exchange's write. */
async function round(l: Layout, pool: pg.Pool, batch: number) {
  const db = new URL(l.url).pathname.slice(1);
  const pids = (
    await sql<{ pid: number }>(
      l.url,
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      [db],
    )
  ).map((r) => r.pid);
  const cpu = () => pids.reduce((n, p) => n + processCpuMs(p), 0);
  const db0 = cpu();
  const res = await load(
    async () => {
      const codes: string[] = [];
      const tokens: Array<{ id: string; data: object }> = [];
      for (let k = 0; k < batch; k++) {
        const n = ++tokenNo;
        codes.push(`c${1 + ((n * 7919) % CODES)}`);
        tokens.push({
          id: `n${n}`,
          data: {
            id: `n${n}`,
            appId: `app${n % 1000}`,
            workspaceUserId: 'wu_1',
            kind: 'user',
            hash: `h${n}`.padEnd(64, '0'),
            scopes: ['messages:read'],
            createdAt: new Date().toISOString(),
            expiresAt: 1_800_000_000_000,
          },
        });
      }
      const r = await pool.query({
        name: 'write',
        text: l.write,
        values: [codes, JSON.stringify({ consumedAt: tokenNo }), JSON.stringify(tokens)],
      });
      return r.rowCount === batch;
    },
    { concurrency: CONC, seconds: SECONDS },
  );
  const writes = res.requests * batch;
  const usPerWrite = Math.round(((cpu() - db0) * 1000) / Math.max(1, writes));
  const out = {
    writes,
    errors: res.errors,
    writesPerSecond: Math.round(res.rps * batch),
    databaseCpuUsPerWrite: usPerWrite,
  };
  console.error(`${l.name}, ${batch} per statement: ${JSON.stringify(out)}`);
  return out;
}

async function main() {
  const cluster = await startPgCluster();
  const pools: pg.Pool[] = [];
  try {
    const layouts = [
      await oneTable(await cluster.createDatabase()),
      await tablePerKind(await cluster.createDatabase()),
      await partitioned(await cluster.createDatabase()),
    ];
    for (const l of layouts) {
      // the same backends all run long (their CPU is read by pid)
      const pool = new pg.Pool({ connectionString: l.url, max: CONC, idleTimeoutMillis: 0 });
      pools.push(pool);
      await Promise.all(Array.from({ length: CONC }, () => pool.query('SELECT 1'))); // every connection open before the first round
      for (const b of BATCHES) await round(l, pool, b); // warm-up
    }
    type Round = Awaited<ReturnType<typeof round>>;
    const median = (rs: Round[]) => {
      const sorted = [...rs].sort((a, b) => a.databaseCpuUsPerWrite - b.databaseCpuUsPerWrite);
      return {
        ...must(sorted[Math.floor(sorted.length / 2)]),
        roundsCpuUsPerWrite: rs.map((x) => x.databaseCpuUsPerWrite),
      };
    };
    const byBatch: Record<string, unknown> = {};
    const rounds: Record<string, Record<string, Round[]>> = Object.fromEntries(
      BATCHES.map((b) => [b, Object.fromEntries(layouts.map((l) => [l.name, [] as Round[]]))]),
    );
    for (let r = 0; r < ROUNDS; r++)
      for (const b of BATCHES)
        for (const [i, l] of layouts.entries()) must(must(rounds[b])[l.name]).push(await round(l, must(pools[i]), b));
    for (const b of BATCHES) {
      const rs = must(rounds[b]);
      const results = Object.fromEntries(Object.entries(rs).map(([n, x]) => [n, median(x)]));
      const ratio = (a: string) =>
        Math.round((must(results[a]).databaseCpuUsPerWrite / must(results.oneTable).databaseCpuUsPerWrite) * 100) / 100;
      // the same comparison round by round (the machine's speed drifts between rounds, less within one)
      const perRound = (a: string) =>
        must(rs[a]).map(
          (x, i) =>
            Math.round((x.databaseCpuUsPerWrite / must(must(rs.oneTable)[i]).databaseCpuUsPerWrite) * 100) / 100,
        );
      byBatch[`${b} per statement`] = {
        results,
        cpuVsOneTable: { tablePerKind: ratio('tablePerKind'), partitioned: ratio('partitioned') },
        cpuVsOneTableByRound: { tablePerKind: perRound('tablePerKind'), partitioned: perRound('partitioned') },
      };
    }
    writeResult('pg-layouts', {
      benchmark: `the token exchange's write (consume a code, insert a token) on three table layouts, ${BATCHES.join(' or ')} exchanges' writes per statement, ${CODES} codes and ${TOKENS} tokens in each, ${CONC} connections`,
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}`,
      settings: {
        codes: CODES,
        tokens: TOKENS,
        concurrency: CONC,
        seconds: SECONDS,
        rounds: ROUNDS,
        batches: BATCHES,
        fsync: false,
      },
      method:
        "the layouts and batch sizes take turns, round after round, after a warm-up round each; each result is the round of median database CPU (its backends, /proc/<pid>/stat) per exchange's write",
      ...byBatch,
    });
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
