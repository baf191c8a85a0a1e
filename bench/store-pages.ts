/**
 * A channel's pages on each store, side by side in one run: pages of 50 messages of a channel
 * holding 10,000 (half of them the newest page, half from a random place further back, as
 * scrolling up asks), 10 readers at once, on
 *   (a) the embedded store,
 *   (b) PostgreSQL with the page index (PAGE_ORDERS: channelId, seq, id),
 *   (c) PostgreSQL laid out as before it (an index on channelId only: every page sorts the channel).
 * The setups take turns, round after round (BENCH_ROUNDS, 3); the round of median CPU is kept.
 * CPU per page = this process (store and driver) + the database's backends, over pages.
 * PostgreSQL is a throwaway 15 cluster (test/helpers/pg.ts: fsync off; nothing here writes).
 * Run: npm run bench:pages
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { load, processCpuMs, writeResult } from './lib.js';
import { openEmbeddedStore } from '../src/store/embedded-store.js';
import { openPostgresStore } from '../src/store/postgres/pg-store.js';
import type { Store } from '../src/store/types.js';
import { sqlAt as sql, startPgCluster } from '../test/helpers/pg.js';
import type { TestTables } from '../test/helpers/test-tables.js';
import { must } from '../src/must.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const PAGE = 50;
const CONC = 10;
const TEXT = 'A message of about the length people write in a team channel, give or take a few words. '.repeat(2);

interface Setup {
  name: string;
  store: Store<TestTables>;
  /** The database's backends serving `store` (none for the embedded store). */
  backends: () => Promise<number[]>;
}

const message = (i: number, channelId: string) => ({
  id: `msg_${String(i).padStart(6, '0')}`,
  channelId,
  seq: i,
  author: `wu_${i % 40}`,
  text: TEXT,
  createdAt: 1_760_000_000_000 + i * 1000,
});

/**
 * A PostgreSQL store on a new database of `cluster`, the channels in it; `layout` 'before' swaps the page index for the
 * field's own.
 */
async function pgSetup(
  cluster: Awaited<ReturnType<typeof startPgCluster>>,
  name: string,
  layout: 'now' | 'before',
): Promise<Setup> {
  const url = await cluster.createDatabase();
  const store = await openPostgresStore<TestTables>({ url, logger: { warn: () => {} }, instanceId: `pages-${layout}` });
  const rows = `SELECT 'wsMessages', 'msg_' || lpad(g::text, 6, '0'), jsonb_build_object('id', 'msg_' || lpad(g::text, 6, '0'), 'channelId', $1::text, 'seq', g, 'author', 'wu_' || (g % 40), 'text', $2::text, 'createdAt', 1760000000000 + g * 1000::bigint)`;
  await sql(url, `INSERT INTO appreg_records (tbl, id, data) ${rows} FROM generate_series(1, $3::int) g`, [
    'big',
    TEXT,
    MESSAGES,
  ]);
  await sql(
    url,
    `INSERT INTO appreg_records (tbl, id, data) ${rows.replace(/'msg_'/g, "'small_'")} FROM generate_series(1, 100) g`,
    ['small', TEXT],
  );
  if (layout === 'before') {
    await sql(url, 'DROP INDEX "appreg_px_wsMessages_channelId_seq"');
    await sql(
      url,
      `CREATE INDEX "appreg_ix_wsMessages_channelId" ON appreg_records ((data->>'channelId')) WHERE tbl = 'wsMessages'`,
    );
  }
  await sql(url, 'VACUUM ANALYZE appreg_records');
  const db = new URL(url).pathname.slice(1);
  const backends = async () =>
    (
      await sql<{ pid: number }>(
        url,
        `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        [db],
      )
    ).map((r) => r.pid);
  return { name, store, backends };
}

async function round(s: Setup) {
  const pids = await s.backends();
  const db0 = pids.reduce((n, p) => n + processCpuMs(p), 0);
  const me0 = process.cpuUsage();
  let pages = 0;
  const res = await load(
    async (i) => {
      const deep = i % 2 === 1;
      const at = PAGE + 1 + Math.floor(Math.random() * (MESSAGES - PAGE));
      const got = await s.store.findPage('wsMessages', 'channelId', 'big', {
        orderBy: 'seq',
        desc: true,
        limit: PAGE,
        ...(deep ? { after: { value: at, id: message(at, 'big').id } } : {}),
      });
      pages++;
      return got.length === PAGE && must(got[0]).seq === (deep ? at - 1 : MESSAGES);
    },
    { concurrency: CONC, seconds: SECONDS },
  );
  const me = process.cpuUsage(me0);
  // the pool's connections are the same before and after (none is opened during a round)
  const db = (await s.backends()).reduce((n, p) => n + processCpuMs(p), 0) - db0;
  const perPage = (ms: number) => Math.round((ms * 1000) / Math.max(1, pages));
  const cpu = { store: perPage((me.user + me.system) / 1000), database: perPage(db) };
  const out = {
    pages: res.requests,
    errors: res.errors,
    pagesPerSecond: res.rps,
    p50Ms: res.p50,
    p99Ms: res.p99,
    cpuUsPerPage: { ...cpu, total: cpu.store + cpu.database },
  };
  console.error(`${s.name}: ${JSON.stringify(out)}`);
  return out;
}

async function main() {
  const cluster = await startPgCluster();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-pages-'));
  const setups: Setup[] = [];
  try {
    const embedded = await openEmbeddedStore<TestTables>({ dir, fsync: false });
    for (let i = 1; i <= MESSAGES; i += 500) {
      await embedded.commit(
        Array.from({ length: Math.min(500, MESSAGES - i + 1) }, (_, k) => ({
          table: 'wsMessages',
          id: message(i + k, 'big').id,
          value: message(i + k, 'big'),
        })),
      );
    }
    for (let i = 1; i <= 100; i++)
      await embedded.commit([
        { table: 'wsMessages', id: `small_${i}`, value: { ...message(i, 'small'), id: `small_${i}` } },
      ]);
    setups.push({ name: 'embedded', store: embedded, backends: async () => [] });
    setups.push(await pgSetup(cluster, 'postgres', 'now'));
    setups.push(await pgSetup(cluster, 'postgresBefore', 'before'));
    for (const s of setups)
      await load(
        async () =>
          (await s.store.findPage('wsMessages', 'channelId', 'big', { orderBy: 'seq', desc: true, limit: PAGE }))
            .length === PAGE,
        { concurrency: CONC, total: 300 },
      );
    const rounds: Record<string, Awaited<ReturnType<typeof round>>[]> = Object.fromEntries(
      setups.map((s) => [s.name, []]),
    );
    for (let r = 0; r < ROUNDS; r++) for (const s of setups) must(rounds[s.name]).push(await round(s));
    const median = (rs: Awaited<ReturnType<typeof round>>[]) => {
      const sorted = [...rs].sort((a, b) => a.cpuUsPerPage.total - b.cpuUsPerPage.total);
      return {
        ...must(sorted[Math.floor(sorted.length / 2)]),
        roundsCpuUsPerPage: rs.map((x) => x.cpuUsPerPage.total),
      };
    };
    const results = Object.fromEntries(Object.entries(rounds).map(([n, rs]) => [n, median(rs)]));
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    writeResult('store-pages', {
      benchmark: `pages of ${PAGE} messages of a ${MESSAGES}-message channel (half the newest, half from a random place further back), ${CONC} readers at once, store in this process`,
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}`,
      settings: { messages: MESSAGES, page: PAGE, concurrency: CONC, seconds: SECONDS, rounds: ROUNDS },
      method:
        "the three setups take turns, round after round; each result is the round of median CPU. CPU = this process (store and driver) plus the database backends serving the store (/proc/<pid>/stat), over pages. postgresBefore: the page index dropped and the field's own index made, as a database was laid out before page orders",
      results,
      cpuVsEmbedded: {
        postgres: ratio(must(results.postgres).cpuUsPerPage.total, must(results.embedded).cpuUsPerPage.total),
        postgresBefore: ratio(
          must(results.postgresBefore).cpuUsPerPage.total,
          must(results.embedded).cpuUsPerPage.total,
        ),
      },
      pageIndexSpeedup: ratio(must(results.postgres).pagesPerSecond, must(results.postgresBefore).pagesPerSecond),
    });
  } finally {
    await Promise.all(setups.map((s) => s.store.close()));
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
