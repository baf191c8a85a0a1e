/**
 * A throwaway PostgreSQL 15 cluster for the benchmarks, on 127.0.0.1 and a unix socket in a temp dir, run as the
 * postgres user when we are root (PostgreSQL refuses root); fsync and synchronous_commit on, default buffers. Stopped
 * and removed by stop() or at the process's exit.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import pg from 'pg';
import { procStat } from './lib.js';
import { must } from '../src/must.js';

const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface ClusterOptions {
  /** The benchmark database in this locale instead of the cluster's "C". */
  locale?: string;
  /** Load pg_stat_statements. */
  statements?: boolean;
}

const ppid = (pid: number) => Number(procStat(pid)?.[1] ?? -1);

/** The processes of the cluster whose data directory is `dataDir`: its postmaster and its children (backends, …). */
export function clusterPids(dataDir: string): number[] {
  const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return [
    postmaster,
    ...fs
      .readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .map(Number)
      .filter((p) => ppid(p) === postmaster),
  ];
}

export interface Cluster {
  url: string;
  pgDir: string;
  pids(): number[];
  sql(q: string): Promise<unknown[]>;
  stats(): Promise<DbStats>;
  stop(): void;
}
/** Transactions in the bench database (each autocommit statement is one) and WAL fsyncs of the cluster. */
export interface DbStats {
  xacts: number;
  walSyncs: number;
  walBytes: number;
  walFpi: number;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net
      .createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
  });

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    fs.chownSync(
      dir,
      Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
      Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
    );
  const run = (cmd: string, args: string[]) => {
    const [file, argv] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', path.join(PG_BIN, cmd), ...args]]
      : [path.join(PG_BIN, cmd), args];
    const r = spawnSync(file, argv, { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  const data = path.join(dir, 'data');
  const port = await freePort();
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C']);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']);
    } catch {
      /* not running */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', stop);
  // fsync and synchronous_commit on (the defaults, spelled out); default shared_buffers
  run('pg_ctl', [
    'start',
    '-D',
    data,
    '-w',
    '-t',
    '60',
    '-l',
    path.join(dir, 'log'),
    '-o',
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=on -c synchronous_commit=on${opts.statements ? ' -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all' : ''}`,
  ]);
  const admin = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const sql = async (q: string) => {
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      return (await c.query(q)).rows;
    } finally {
      await c.end();
    }
  };
  await sql(
    opts.locale
      ? `CREATE DATABASE appreg_bench LOCALE '${opts.locale.replace(/'/g, '')}' TEMPLATE template0`
      : 'CREATE DATABASE appreg_bench',
  );
  if (opts.statements) await sql('CREATE EXTENSION pg_stat_statements');
  // the postmaster and its children (backends, checkpointer, walwriter, autovacuum, …)
  const pids = () => clusterPids(data);
  const stats = async () => {
    // a backend reports its counters when idle, at most every second and at the latest after 10 s
    await new Promise((r) => setTimeout(r, 10_500));
    const [row] = (await sql(
      "SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'appreg_bench')::float8 AS xacts, (SELECT wal_sync FROM pg_stat_wal)::float8 AS syncs, (SELECT wal_bytes FROM pg_stat_wal)::float8 AS bytes, (SELECT wal_fpi FROM pg_stat_wal)::float8 AS fpi",
    )) as Array<{ xacts: number; syncs: number; bytes: number; fpi: number }>;
    return { xacts: must(row).xacts, walSyncs: must(row).syncs, walBytes: must(row).bytes, walFpi: must(row).fpi };
  };
  // BENCH_PG_SOCKET=unix: the daemons reach the database through its unix socket instead of TCP on 127.0.0.1
  const url =
    process.env.BENCH_PG_SOCKET === 'unix'
      ? `postgresql://postgres@localhost/appreg_bench?host=${encodeURIComponent(dir)}&port=${port}`
      : `postgresql://postgres@127.0.0.1:${port}/appreg_bench`;
  return { url, pgDir: dir, pids, sql, stats, stop };
}
