/**
 * How the daemon's cost grows with its data: at 10,000, 100,000 and 1,000,000 records on the
 * embedded store, and at 100,000 on PostgreSQL, the same measurements of a real `appreg serve`
 * process (fsync on, its default):
 *  - open: from spawning `appreg serve` until it prints that it listens (the store opened, the
 *    journal replayed, the code loaded);
 *  - RSS after the open (VmRSS), and its peak over the whole run (VmHWM);
 *  - token exchanges/s (POST /oauth2/access, a fresh code each, 50 connections);
 *  - management gets/s (GET …/apps/mine/{id} with secrets, 50 connections).
 * The records are the token benchmark's kinds in its proportions: apps with their installation
 * and bot tokens, ten users' tokens and authorizations per app (34 records an app), and pending
 * codes (30 %, at least 5,000 and at most 40,000: the exchange round's supply). Seeding goes
 * through the service layer of an in-process daemon with fsync off, as bench/stores.ts does.
 *
 * The sizes run one after the other, each on a fresh data dir: absolute rates drift with the
 * machine's load (recorded with each size), so read the table down a column, not across runs.
 * Run: npm run bench:scaling   (several minutes; BENCH_SCALES=10000,100000 to pick sizes,
 * BENCH_PG_SCALES=100000 or '' for none, BENCH_SECONDS=8 per timed round; BENCH_KEEP=<dir> keeps each embedded
 * data dir there, as <dir>/<records>, to profile a daemon on it afterwards)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import {
  inBatches,
  load,
  processCpuMs,
  seedBenchApps,
  startDaemonProcess,
  writeResult,
  type LoadResult,
  multipart,
} from './lib.js';
import { startCluster, type Cluster } from './pg-cluster.js';
import { loadConfig } from '../src/config.js';
import { silentLogger } from '../src/logger.js';
import { startDaemon } from '../src/server/start.js';
import { IDENTITY_TABLES } from '../src/model/identity.js';
import { OAUTH_TABLES } from '../src/model/oauth.js';
import { must } from '../src/must.js';

const USERS = 10;
/**
 * Records one app brings: itself, its installation, its bot's access and refresh tokens, and per user an access token,
 * a refresh token and an authorization.
 */
const PER_APP = 4 + 3 * USERS;
const CONC = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const sizesOf = (v: string | undefined, dflt: string) =>
  (v ?? dflt)
    .split(',')
    .filter(Boolean)
    .map((x) => Number(x));
const SCALES = sizesOf(process.env.BENCH_SCALES, '10000,100000,1000000');
const PG_SCALES = sizesOf(process.env.BENCH_PG_SCALES, '100000');

/** How a data set of about `records` records is made up. */
function composition(records: number): { apps: number; codes: number } {
  const codes = Math.min(40_000, Math.max(5_000, Math.round(records * 0.3)));
  return { apps: Math.max(1, Math.round((records - codes) / PER_APP)), codes };
}

interface Seeded {
  clients: Array<{ id: string; secret: string }>;
  codes: Array<{ client: number; code: string }>;
  owner: { authToken: string; base: string };
  records: number;
  seedSeconds: number;
}

/** Seed `dir` (and the database, when given) with about `records` records through an in-process daemon, fsync off. */
async function seed(dir: string, records: number, databaseUrl?: string): Promise<Seeded> {
  const t0 = performance.now();
  const { apps, codes: nCodes } = composition(records);
  const config = {
    ...loadConfig({ dataDir: dir, port: 0 }, {}),
    databaseUrl,
    fsync: false,
    codeTtlSeconds: 7200,
    logLevel: 'warn' as const,
  };
  const d = await startDaemon(config, { logger: silentLogger });
  try {
    const owner = must(d.bootstrapped);
    const { users, clients, grant } = await seedBenchApps(d, { apps, users: USERS, width: 100 });
    const { exchange } = d.parts.oauth;
    await inBatches(apps * USERS, 200, async (k) => {
      const c = must(clients[k % apps]);
      await exchange.exchange({
        clientId: c.id,
        clientSecret: c.secret,
        code: await grant(c, must(users[Math.floor(k / apps)])),
      });
    });
    const codes = await inBatches(nCodes, 200, async (i) => {
      const client = (i * 7919) % apps;
      return { client, code: await grant(must(clients[client]), must(users[i % USERS])) };
    });
    const counted = await Promise.all(
      [...Object.values(OAUTH_TABLES), IDENTITY_TABLES.apps, IDENTITY_TABLES.workspaceUsers].map((t) =>
        d.parts.store.count(t),
      ),
    );
    return {
      clients,
      codes,
      owner: {
        authToken: owner.authToken,
        base: `/workspaces/${owner.workspaceId}/workspaceUsers/${owner.workspaceUserId}`,
      },
      records: counted.reduce((a, b) => a + b, 0),
      seedSeconds: Math.round((performance.now() - t0) / 100) / 10,
    };
  } finally {
    await d.close();
  }
}

interface Row {
  store: 'embedded' | 'postgres';
  recordsAsked: number;
  records: number;
  seedSeconds: number;
  openMs: number;
  /** CPU the daemon used to open (ms): less sensitive to a busy machine than the wall time. */
  openCpuMs: number;
  rssAfterOpenMb: number;
  rssPeakMb: number;
  exchange: Round;
  get: Round;
  loadAverage: number;
}

type Round = Pick<LoadResult, 'rps' | 'p50' | 'p99' | 'errors' | 'requests'> & { daemonCpuUs: number };

/** A timed round's figures, with the daemon's CPU per request (µs) from /proc before and after it. */
async function timed(pid: number, run: () => Promise<LoadResult>): Promise<Round> {
  const cpu0 = processCpuMs(pid);
  const r = await run();
  const daemonCpuUs = Math.round(((processCpuMs(pid) - cpu0) * 1000) / Math.max(1, r.requests));
  return { rps: r.rps, p50: r.p50, p99: r.p99, errors: r.errors, requests: r.requests, daemonCpuUs };
}

/** One size on one store: seed, start the measured daemon, open time and RSS, then an exchange and a get round. */
async function measure(records: number, cluster?: Cluster): Promise<Row> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-scaling-'));
  try {
    if (cluster) await cluster.sql('DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public');
    console.error(`${cluster ? 'postgres' : 'embedded'} ${records}: seeding…`);
    const s = await seed(dir, records, cluster?.url);
    console.error(`  ${s.records} records in ${s.seedSeconds} s`);
    const d = await startDaemonProcess(dir, cluster ? ['--database-url', cluster.url] : []);
    const pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
    try {
      const pid = must(d.child.pid);
      const openCpuMs = Math.round(processCpuMs(pid));
      const afterOpen = d.rssMb();
      const exchange = await timed(pid, () =>
        load(
          async (i) => {
            const c = s.codes[i];
            if (!c) return false;
            const cl = must(s.clients[c.client]);
            const { body, type } = multipart({ 'client-id': cl.id, 'client-secret': cl.secret, code: c.code });
            const r = await pool.request({
              method: 'POST',
              path: '/oauth2/access',
              headers: { 'content-type': type },
              body,
            });
            const j = (await r.body.json()) as { accessToken?: string };
            return r.statusCode === 200 && !!j.accessToken;
          },
          { concurrency: CONC, seconds: SECONDS, total: s.codes.length },
        ),
      );
      const get = await timed(pid, () =>
        load(
          async (i) => {
            const r = await pool.request({
              method: 'GET',
              path: `${s.owner.base}/apps/mine/${must(s.clients[(i * 7) % s.clients.length]).id}`,
              headers: { authtoken: s.owner.authToken },
            });
            await r.body.dump();
            return r.statusCode === 200;
          },
          { concurrency: CONC, seconds: SECONDS },
        ),
      );
      const row: Row = {
        store: cluster ? 'postgres' : 'embedded',
        recordsAsked: records,
        records: s.records,
        seedSeconds: s.seedSeconds,
        openMs: d.startupMs,
        openCpuMs,
        rssAfterOpenMb: afterOpen.rss,
        rssPeakMb: d.rssMb().hwm,
        exchange,
        get,
        loadAverage: Math.round(must(os.loadavg()[0]) * 10) / 10,
      };
      console.error(
        `  open ${row.openMs} ms (CPU ${openCpuMs} ms), RSS ${row.rssAfterOpenMb} MB (peak ${row.rssPeakMb}), exchange ${exchange.rps}/s p99 ${exchange.p99} ms ${exchange.daemonCpuUs} µs, get ${get.rps}/s p99 ${get.p99} ms ${get.daemonCpuUs} µs, load ${row.loadAverage}`,
      );
      return row;
    } finally {
      await pool.close();
      await d.stop();
    }
  } finally {
    const keep = process.env.BENCH_KEEP;
    if (keep && !cluster) fs.cpSync(dir, path.join(keep, String(records)), { recursive: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const rows: Row[] = [];
  for (const n of SCALES) rows.push(await measure(n));
  if (PG_SCALES.length) {
    const cluster = await startCluster();
    try {
      for (const n of PG_SCALES) rows.push(await measure(n, cluster));
    } finally {
      cluster.stop();
    }
  }
  writeResult('scaling', {
    benchmark:
      'one appreg serve process (fsync on) per data size: open time, RSS after open and peak, token exchanges/s and management gets/s at 50 connections',
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}`,
    composition: `${PER_APP} records per app (app, installation, bot tokens, ${USERS} users' access and refresh tokens and authorizations) and pending codes (30 %, 5,000–40,000)`,
    secondsPerRound: SECONDS,
    rows,
    at: new Date().toISOString(),
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
