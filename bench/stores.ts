/**
 * The two stores side by side, in one run: token exchanges/s and management gets/s against
 * (a) the embedded store, (b) PostgreSQL with one daemon, (c) PostgreSQL with two daemons, the
 * load generator alternating requests round-robin between them. The setups take turns, round
 * after round (BENCH_ROUNDS, 3), and the round of median CPU is recorded: the machine is shared,
 * and its speed drifts by a third within minutes. Every daemon is a real
 * `appreg serve` process; PostgreSQL is a throwaway 15 cluster on 127.0.0.1 with fsync=on and
 * synchronous_commit=on (durable, like the embedded store with fsync on) and default buffers.
 *
 * CPU per request = (the daemons' utime+stime + every process of the cluster's) / requests, from
 * /proc/<pid>/stat before and after each timed round. During (c) it also checks, under load, that
 * a code is consumed exactly once across daemons, that a revocation on one daemon is seen at once
 * by the other, and that an app created on one is readable on the other.
 *
 * Seeding goes through the service layer of an in-process daemon (fsync off for the embedded one;
 * synchronous_commit off on PostgreSQL while seeding only, switched on and checked before any round).
 * Run: npm run build && node dist/bench/stores.js   (a few minutes; BENCH_APPS, BENCH_USERS,
 * BENCH_SECONDS, BENCH_ROUNDS, BENCH_CODES, BENCH_PG_CODES to change the size)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import {
  benchManifest,
  inBatches,
  seedBenchApps,
  load,
  processCpuMs,
  quiet,
  startDaemonProcess,
  writeResult,
  type DaemonProc,
  type LoadResult,
  multipart,
} from './lib.js';
import { startCluster, type DbStats } from './pg-cluster.js';
import { loadConfig } from '../src/config.js';
import { silentLogger } from '../src/logger.js';
import { startDaemon } from '../src/server/start.js';
import { IDENTITY_TABLES } from '../src/model/identity.js';
import { OAUTH_TABLES } from '../src/model/oauth.js';
import { must } from '../src/must.js';

const APPS = Number(process.env.BENCH_APPS ?? 1_000);
const USERS = Number(process.env.BENCH_USERS ?? 10); // tokens seeded = APPS * USERS (+ one bot token per app)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
/** Timed rounds per setup and request kind (the median is recorded). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// codes per timed exchange round on each store (a round ends early when they run out)
const CODES = Number(process.env.BENCH_CODES ?? 18_000);
const PG_CODES = Number(process.env.BENCH_PG_CODES ?? 10_000);
/** Exchanges of each setup's warm-up (the same number everywhere: a daemon's code paths are optimized by then). */
const WARM = Number(process.env.BENCH_WARM ?? 6_000);
const CONC = 50;
/**
 * BENCH_ONLY=postgres1 measures only that setup (or a comma-separated list) and prints it, recording nothing (a quick
 * look while tuning).
 */
const ONLY = process.env.BENCH_ONLY;
/**
 * BENCH_B_ROOT=<another checkout, built>: daemon B runs that code, and the run measures "postgres1"
 * (daemon A, this checkout) and "postgresB" (daemon B alone), taking turns on one database: two
 * builds side by side in one run, on a machine whose speed drifts between runs. Nothing is recorded.
 */
const B_ROOT = process.env.BENCH_B_ROOT;
/**
 * BENCH_B_DATABASE_SQL=<file> (with BENCH_B_ROOT): daemon B gets a database of its own, a copy of
 * the seeded one with this file's SQL run on it first (to bring it to the schema B's code knows,
 * when the two builds differ in schema); else both take turns on one database.
 */
const B_DATABASE_SQL = process.env.BENCH_B_DATABASE_SQL;
/**
 * BENCH_PG_LOCALE=en_US.UTF-8 (say): the benchmark's database in that locale instead of the
 * cluster's "C" (the default of many installs; the locale must be installed on the machine).
 */
const PG_LOCALE = process.env.BENCH_PG_LOCALE;
/** BENCH_PG_STATEMENTS=1 loads pg_stat_statements and prints where the database's time went, per statement. */
const PG_STATEMENTS = process.env.BENCH_PG_STATEMENTS === '1';

interface Client {
  id: string;
  secret: string;
  appKey: string;
}
interface Code {
  client: number;
  code: string;
}
interface Seeded {
  dir: string;
  clients: Client[];
  codes: Record<string, Code[]>;
  creds: { authToken: string; base: string };
  held: Record<string, number>;
  seconds: number;
}

const manifest = benchManifest;

/**
 * Apps, users, tokens and the named code sets, through an in-process daemon on `databaseUrl` or the embedded store in
 * `dir`.
 */
async function seed(dir: string, codeSets: Record<string, number>, databaseUrl?: string): Promise<Seeded> {
  const t0 = performance.now();
  const config = {
    ...loadConfig({ dataDir: dir, port: 0 }, {}),
    databaseUrl,
    fsync: false,
    codeTtlSeconds: 600,
    logLevel: 'warn' as const,
  };
  const d = await startDaemon(config, { logger: silentLogger });
  try {
    const owner = must(d.bootstrapped);
    const { store } = d.parts;
    const { exchange } = d.parts.oauth;
    const { users, clients, grant } = await seedBenchApps(d, { apps: APPS, users: USERS, width: 100 });
    await inBatches(APPS * USERS, 200, async (k) => {
      const c = must(clients[k % APPS]);
      await exchange.exchange({
        clientId: c.id,
        clientSecret: c.secret,
        code: await grant(c, must(users[Math.floor(k / APPS)])),
      });
    });
    const codes: Record<string, Code[]> = {};
    for (const [name, n] of Object.entries(codeSets)) {
      const salt = name.length * 104729;
      codes[name] = await inBatches(n, 200, async (i) => {
        const client = (i * 7919 + salt) % APPS;
        return { client, code: await grant(must(clients[client]), must(users[i % USERS])) };
      });
    }
    const held = {
      apps: await store.count(IDENTITY_TABLES.apps),
      tokens: await store.count(OAUTH_TABLES.tokens),
      codes: await store.count(OAUTH_TABLES.codes),
    };
    const base = `/workspaces/${owner.workspaceId}/workspaceUsers/${owner.workspaceUserId}`;
    return {
      dir,
      clients,
      codes,
      creds: { authToken: owner.authToken, base },
      held,
      seconds: Math.round((performance.now() - t0) / 100) / 10,
    };
  } finally {
    await d.close();
  }
}

/** CPU (ms) of these processes, with the children each reaped so that exited backends still count. */
const cpuMs = (pids: number[]) => pids.reduce((sum, p) => sum + processCpuMs(p, true), 0);

// ---- the rounds --------------------------------------------------------------------------------

interface Setup {
  name: string;
  seeded: Seeded;
  daemons: DaemonProc[];
  pools: Pool[];
  dbPids: () => number[];
  dbStats?: () => Promise<DbStats>;
  sql?: (q: string) => Promise<unknown[]>;
}

const exchangeOn = (s: Setup, pool: Pool, c: Code) => {
  const cl = must(s.seeded.clients[c.client]);
  const { body, type } = multipart({ 'client-id': cl.id, 'client-secret': cl.secret, code: c.code });
  return pool.request({ method: 'POST', path: '/oauth2/access', headers: { 'content-type': type }, body });
};

/** One timed round, with the CPU of the daemons and of the database per request. */
async function round(s: Setup, kind: 'exchange' | 'get', codes: Code[], seconds: number, timedStats = true) {
  const ids = s.seeded.clients.map((c) => c.id);
  const fn =
    kind === 'exchange'
      ? async (i: number) => {
          const c = codes[i];
          if (!c) return false;
          const r = await exchangeOn(s, must(s.pools[i % s.pools.length]), c);
          return r.statusCode === 200 && !!((await r.body.json()) as { accessToken?: string }).accessToken;
        }
      : async (i: number) => {
          const r = await must(s.pools[i % s.pools.length]).request({
            method: 'GET',
            path: `${s.seeded.creds.base}/apps/mine/${ids[(i * 7) % ids.length]}`,
            headers: { authtoken: s.seeded.creds.authToken },
          });
          await r.body.dump();
          return r.statusCode === 200;
        };
  const daemonPids = s.daemons.map((d) => must(d.child.pid));
  const st0 = timedStats ? await s.dbStats?.() : undefined;
  if (timedStats && PG_STATEMENTS && s.sql) await s.sql('SELECT pg_stat_statements_reset()');
  const d0 = cpuMs(daemonPids);
  const p0 = cpuMs(s.dbPids());
  const res: LoadResult = await load(fn, {
    concurrency: CONC,
    seconds,
    total: kind === 'exchange' ? codes.length : undefined,
  });
  const daemonMs = cpuMs(daemonPids) - d0;
  const dbMs = cpuMs(s.dbPids()) - p0;
  const per = (ms: number) => Math.round((ms * 1000) / Math.max(1, res.requests));
  const cpuUsPerRequest = { daemons: per(daemonMs), database: per(dbMs), total: per(daemonMs + dbMs) };
  const st1 = st0 ? await must(s.dbStats)() : undefined;
  const r2 = (x: number) => Math.round((x / Math.max(1, res.requests)) * 100) / 100;
  const database =
    st0 && st1
      ? {
          transactionsPerRequest: r2(st1.xacts - st0.xacts),
          walFsyncsPerRequest: r2(st1.walSyncs - st0.walSyncs),
          walBytesPerRequest: Math.round((st1.walBytes - st0.walBytes) / Math.max(1, res.requests)),
          walFullPagesPerRequest: r2(st1.walFpi - st0.walFpi),
        }
      : undefined;
  if (timedStats && PG_STATEMENTS && s.sql) {
    const top = (await s.sql(
      `SELECT calls, round((total_exec_time * 1000 / ${Math.max(1, res.requests)})::numeric) AS us_per_request, round((total_exec_time * 1000 / calls)::numeric) AS us_per_call, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements WHERE calls > 0 ORDER BY total_exec_time DESC LIMIT 12`,
    )) as unknown[];
    console.error(top.map((r) => JSON.stringify(r)).join('\n'));
  }
  console.error(
    `${s.name} ${kind}: ${res.rps}/s p99 ${res.p99} ms, ${res.errors} errors, CPU ${cpuUsPerRequest.total} µs/request (daemons ${cpuUsPerRequest.daemons}, database ${cpuUsPerRequest.database}) ${JSON.stringify(database ?? {})}`,
  );
  return { ...res, cpuUsPerRequest, database };
}

/** The correctness checks across the two daemons (run while exchange load goes on). */
async function checks(s: Setup) {
  const [a, b] = s.pools as [Pool, Pool];
  const once: number[] = [];
  for (const c of must(s.seeded.codes.checkOnce)) {
    const statuses = await Promise.all(
      Array.from({ length: 10 }, async (_, k) => {
        const r = await exchangeOn(s, k % 2 ? b : a, c);
        await r.body.dump();
        return r.statusCode;
      }),
    );
    once.push(statuses.filter((x) => x === 200).length);
  }
  const revoked: Array<{ before: number; revoke: number; after: number }> = [];
  for (const c of must(s.seeded.codes.checkRevoke)) {
    const r = await exchangeOn(s, a, c);
    const tok = ((await r.body.json()) as { accessToken: string }).accessToken;
    const headers = { token: tok, 'x-app-token': must(s.seeded.clients[c.client]).appKey };
    const me = async (p: Pool) => {
      const x = await p.request({ method: 'GET', path: '/oauth2/me', headers });
      await x.body.dump();
      return x.statusCode;
    };
    const before = await me(b);
    const del = await a.request({ method: 'DELETE', path: '/v1/app/authorization', headers });
    await del.body.dump();
    revoked.push({ before, revoke: del.statusCode, after: await me(b) });
  }
  const made = await a.request({
    method: 'POST',
    path: `${s.seeded.creds.base}/apps`,
    headers: { authtoken: s.seeded.creds.authToken, 'content-type': 'application/json' },
    body: JSON.stringify(manifest(APPS + 1)),
  });
  const id = ((await made.body.json()) as { id: string }).id;
  const read = await b.request({
    method: 'GET',
    path: `${s.seeded.creds.base}/apps/mine/${id}`,
    headers: { authtoken: s.seeded.creds.authToken },
  });
  const readBody = (await read.body.json()) as { id?: string };
  return {
    codeOnceAcrossDaemons: { runs: once.length, successesPerRun: once, ok: once.every((n) => n === 1) },
    revokeOnOneRefusedByOther: {
      runs: revoked.length,
      statuses: revoked,
      ok: revoked.every((x) => x.before === 200 && x.revoke === 204 && x.after === 401),
    },
    createdOnOneReadOnOther: {
      create: made.statusCode,
      read: read.statusCode,
      ok: made.statusCode === 201 && read.statusCode === 200 && readBody.id === id,
    },
  };
}

type Round = Awaited<ReturnType<typeof round>>;

/** The round of median CPU per request, with every round's total beside it. */
function median(rounds: Round[]): Round & { roundsCpuUsPerRequest: number[] } {
  const sorted = [...rounds].sort((a, b) => a.cpuUsPerRequest.total - b.cpuUsPerRequest.total);
  return {
    ...must(sorted[Math.floor(sorted.length / 2)]),
    roundsCpuUsPerRequest: rounds.map((r) => r.cpuUsPerRequest.total),
  };
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-stores-'));
  const cluster = await startCluster({ locale: PG_LOCALE, statements: PG_STATEMENTS });
  const daemons: DaemonProc[] = [];
  const pools: Pool[] = [];
  const up = async (dir: string, args: string[] = [], from?: string) => {
    const d = await startDaemonProcess(dir, args, from);
    daemons.push(d);
    const p = new Pool(d.url, { connections: CONC, pipelining: 1 });
    pools.push(p);
    return { d, p };
  };
  const down = async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
    await Promise.all(daemons.splice(0).map((d) => d.stop()));
  };
  const names = B_ROOT
    ? ['postgres1', 'postgresB']
    : ['embedded', 'postgres1', 'postgres2'].filter((n) => !ONLY || ONLY.split(',').includes(n));
  const timedSets = (prefix: string, n: number) =>
    Object.fromEntries(Array.from({ length: ROUNDS }, (_, r) => [`${prefix}${r}`, n]));
  try {
    const load0 = os.loadavg();
    delete process.env.APPREG_FSYNC; // the measured daemons run with the default: fsync on
    // PostgreSQL first, then the embedded store: codes live 600 s at most, and the rounds that use
    // them (all exchange rounds, then the checks) must end before the first seeded expire
    await cluster.sql('ALTER SYSTEM SET synchronous_commit = off'); // seeding only
    await cluster.sql('SELECT pg_reload_conf()');
    const pgSeed = await seed(
      path.join(root, 'pg-seed'),
      {
        warm1: WARM,
        warm2: WARM,
        ...timedSets('p1-', PG_CODES),
        ...timedSets('p2-', PG_CODES),
        underLoad: PG_CODES,
        checkOnce: 20,
        checkRevoke: 20,
      },
      cluster.url,
    );
    console.error(`PostgreSQL seeded in ${pgSeed.seconds} s: ${JSON.stringify(pgSeed.held)}`);
    await cluster.sql('ALTER SYSTEM RESET synchronous_commit');
    await cluster.sql('SELECT pg_reload_conf()');
    // what seeding left for autovacuum (a pass over a table of 100,000 fresh rows) is done now, as
    // pgbench does before its runs, so that it does not land in a timed round; then a checkpoint
    await cluster.sql('VACUUM ANALYZE');
    await cluster.sql('CHECKPOINT');
    const pgSettings = Object.fromEntries(
      (
        (await cluster.sql(
          "SELECT name, setting FROM pg_settings WHERE name IN ('fsync','synchronous_commit','shared_buffers','wal_sync_method','max_connections','jit')",
        )) as Array<{ name: string; setting: string }>
      ).map((r) => [r.name, r.setting]),
    );
    if (pgSettings.fsync !== 'on' || pgSettings.synchronous_commit !== 'on')
      throw new Error(`PostgreSQL is not durable: ${JSON.stringify(pgSettings)}`);
    const emb = names.includes('embedded')
      ? await seed(path.join(root, 'embedded'), { warm: WARM, ...timedSets('e-', CODES) })
      : undefined;
    if (emb) console.error(`embedded store seeded in ${emb.seconds} s: ${JSON.stringify(emb.held)}`);

    // every daemon on the database has its own data dir with the seeding daemon's key file
    const pgDir = (n: number) => {
      const dir = path.join(root, `pg-daemon-${n}`);
      fs.mkdirSync(dir, { mode: 0o700 });
      fs.copyFileSync(path.join(pgSeed.dir, 'secret.key'), path.join(dir, 'secret.key'));
      return dir;
    };
    const dbArgs = ['--database-url', cluster.url];
    // (copied before any daemon connects: a template database must have no connections)
    let bArgs = dbArgs;
    if (B_ROOT && B_DATABASE_SQL) {
      await cluster.sql('CREATE DATABASE appreg_bench_b TEMPLATE appreg_bench');
      const bUrl = cluster.url.replace(/appreg_bench/, 'appreg_bench_b');
      const c = new pg.Client({ connectionString: bUrl });
      await c.connect();
      try {
        await c.query(fs.readFileSync(B_DATABASE_SQL, 'utf8'));
      } finally {
        await c.end();
      }
      bArgs = ['--database-url', bUrl];
    }
    const e = emb ? await up(emb.dir) : undefined;
    const a = await up(pgDir(1), dbArgs);
    const b = await up(pgDir(2), bArgs, B_ROOT);
    const allUp = performance.now();
    const onPg = { dbPids: cluster.pids, dbStats: cluster.stats, sql: cluster.sql };
    const setups: Record<string, Setup & { codes: (r: number | 'warm') => Code[] }> = {
      ...(emb && e
        ? {
            embedded: {
              name: 'embedded',
              seeded: emb,
              daemons: [e.d],
              pools: [e.p],
              dbPids: () => [],
              codes: (r: number | 'warm') => must(emb.codes[r === 'warm' ? 'warm' : `e-${r}`]),
            },
          }
        : {}),
      postgres1: {
        name: 'postgres, 1 daemon',
        seeded: pgSeed,
        daemons: [a.d],
        pools: [a.p],
        ...onPg,
        codes: (r) => must(pgSeed.codes[r === 'warm' ? 'warm1' : `p1-${r}`]),
      },
      postgresB: {
        name: 'postgres, daemon B',
        seeded: pgSeed,
        daemons: [b.d],
        pools: [b.p],
        ...onPg,
        codes: (r) => must(pgSeed.codes[r === 'warm' ? 'warm2' : `p2-${r}`]),
      },
      postgres2: {
        name: 'postgres, 2 daemons',
        seeded: pgSeed,
        daemons: [a.d, b.d],
        pools: [a.p, b.p],
        ...onPg,
        codes: (r) => must(pgSeed.codes[r === 'warm' ? 'warm2' : `p2-${r}`]),
      },
    };
    // every process of every setup is idle before any round, so a setup's rounds never share the machine with another's
    // leftovers
    const all = () => [...daemons.map((d) => must(d.child.pid)), ...cluster.pids()];
    for (const n of names) {
      await quiet(all, { reaped: true });
      await round(must(setups[n]), 'exchange', must(setups[n]).codes('warm'), 3, false);
      await quiet(all, { reaped: true });
      await round(must(setups[n]), 'get', [], 2, false);
    }
    // A daemon's first sweep of expired codes, a minute after it started, reads every code once (later
    // sweeps read the codes of the minutes that ended): start-up work, so the timed rounds begin after it.
    await new Promise((r) => setTimeout(r, Math.max(0, allUp + 65_000 - performance.now())));
    // the setups take turns, round after round: a drift of the shared machine's speed touches them all alike
    const exchanges: Record<string, Round[]> = Object.fromEntries(names.map((n) => [n, []]));
    const gets: Record<string, Round[]> = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const n of names) {
        await quiet(all, { reaped: true });
        must(exchanges[n]).push(await round(must(setups[n]), 'exchange', must(setups[n]).codes(r), SECONDS));
      }
    }
    let checked: Awaited<ReturnType<typeof checks>> | undefined;
    let underLoad: Round | undefined;
    if (names.includes('postgres2')) {
      await quiet(all, { reaped: true });
      [underLoad, checked] = await Promise.all([
        round(must(setups.postgres2), 'exchange', must(pgSeed.codes.underLoad), SECONDS),
        checks(must(setups.postgres2)),
      ]);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const n of names) {
        await quiet(all, { reaped: true });
        must(gets[n]).push(await round(must(setups[n]), 'get', [], SECONDS));
      }
    }
    const results = Object.fromEntries(
      names.map((n) => [
        n,
        {
          daemons: must(setups[n]).daemons.length,
          exchange: median(must(exchanges[n])),
          get: median(must(gets[n])),
          memoryMb: must(setups[n]).daemons.map((d) => d.rssMb()),
        },
      ]),
    );
    await down();
    for (const n of names)
      console.error(
        `${n}: exchange ${JSON.stringify(must(results[n]).exchange.roundsCpuUsPerRequest)} µs/request, get ${JSON.stringify(must(results[n]).get.roundsCpuUsPerRequest)}`,
      );
    if (ONLY || B_ROOT) return; // a look while tuning, or two builds compared: nothing recorded

    const ratio = (x: number, y: number) => Math.round((x / y) * 100) / 100;
    const [embedded, pgOne, pgTwo] = [must(results.embedded), must(results.postgres1), must(results.postgres2)];
    const cpuVsEmbedded = (r: typeof pgOne) => ({
      exchange: ratio(r.exchange.cpuUsPerRequest.total, embedded.exchange.cpuUsPerRequest.total),
      get: ratio(r.get.cpuUsPerRequest.total, embedded.get.cpuUsPerRequest.total),
    });
    const cpu = { postgres1: cpuVsEmbedded(pgOne), postgres2: cpuVsEmbedded(pgTwo) };
    writeResult('stores', {
      benchmark:
        'token exchange and management get: embedded store vs PostgreSQL with one and two daemons (round-robin), 50 connections, each daemon its own `appreg serve` process, load generator in this process',
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}, PostgreSQL ${String(((await cluster.sql('SHOW server_version')) as Array<{ server_version: string }>)[0]?.server_version)}`,
      load: {
        loadavgAtStart: load0.map((x) => Math.round(x * 100) / 100),
        loadavgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
      },
      settings: {
        apps: APPS,
        users: USERS,
        seconds: SECONDS,
        rounds: ROUNDS,
        warmUpExchanges: WARM,
        codesPerRound: { embedded: CODES, postgres: PG_CODES },
        concurrency: CONC,
        embeddedFsync: true,
        postgres: { ...pgSettings, databaseLocale: PG_LOCALE ?? 'C' },
        seeding:
          'through an in-process daemon, PostgreSQL then the embedded store, before any round (codes live 600 s at most); embedded with fsync off, PostgreSQL with synchronous_commit off, both switched back before any round; PostgreSQL then VACUUM ANALYZE and CHECKPOINT',
        held: { embedded: emb?.held, postgres: pgSeed.held },
      },
      method: `all three setups up at once (the embedded daemon, PostgreSQL daemons A and B; "postgres1" loads A, "postgres2" A and B); a warm-up per setup (the same number of exchanges for each, then 2 s of gets); the timed rounds start once every daemon made its first sweep of expired codes (a minute after its start; it reads every code once); then ${ROUNDS} rounds of exchanges with the setups taking turns in each, the checks under exchange load on two daemons, ${ROUNDS} rounds of gets taking turns; each result is the round of median CPU (every round's total in roundsCpuUsPerRequest). Before every round, wait until every daemon and the database are idle. CPU = /proc/<pid>/stat utime+stime (+cutime+cstime of the postmaster) of the setup's daemons and of every process of the cluster, before/after the round, over requests; on PostgreSQL also transactions (pg_stat_database) and WAL fsyncs, bytes and full-page images (pg_stat_wal) per request, read 10.5 s after the cluster went idle so every backend has reported`,
      results: { embedded, postgres1: pgOne, postgres2: pgTwo, postgres2WhileChecking: underLoad },
      cpuPerRequestVsEmbedded: cpu,
      cpuTargetMet: Object.values(cpu).every((c) => c.exchange <= 2 && c.get <= 2),
      throughputVsEmbedded: {
        postgres1: {
          exchange: ratio(pgOne.exchange.rps, embedded.exchange.rps),
          get: ratio(pgOne.get.rps, embedded.get.rps),
        },
        postgres2: {
          exchange: ratio(pgTwo.exchange.rps, embedded.exchange.rps),
          get: ratio(pgTwo.get.rps, embedded.get.rps),
        },
      },
      checks: checked,
      checksOk: Object.values(checked ?? {}).every((c) => c.ok),
      at: new Date().toISOString(),
    });
  } finally {
    await down().catch(() => {});
    cluster.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
