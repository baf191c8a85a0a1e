/**
 * What an idle daemon costs: CPU per second of a daemon that serves nothing (its pollers, sweeps
 * and heartbeats only), on the embedded store and on PostgreSQL, side by side in one run: the
 * daemons are up at once and their CPU is read over the same windows (BENCH_ROUNDS of
 * BENCH_SECONDS each; the median window is kept). On PostgreSQL the database's part is the CPU
 * of every process of the cluster (backends, and the background ones a running PostgreSQL has;
 * exited backends through the postmaster's reaped-children time). Each daemon is a real
 * `appreg serve` process; PostgreSQL is a throwaway 15 cluster (test/helpers/pg.ts).
 *
 * BENCH_B_ROOT=<another checkout, built>: a third daemon on PostgreSQL runs that code, beside
 * (two builds compared; nothing is recorded). Two daemons share the cluster then, so each one's
 * database part is the CPU of its own database's backends that lived through the window.
 * Run: npm run bench:idle
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { processCpuMs, procStat, startDaemonProcess, writeResult, type DaemonProc } from './lib.js';
import { clusterPids } from './pg-cluster.js';
import { startPgCluster } from '../test/helpers/pg.js';
import { must } from '../src/must.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** Start-up work (the first sweeps) is over by then. */
const SETTLE_S = Number(process.env.BENCH_SETTLE_SECONDS ?? 75);
const B_ROOT = process.env.BENCH_B_ROOT;

interface Idle {
  name: string;
  daemon: DaemonProc;
  /**
   * The processes whose CPU is the database's part, and whether exited children count (the postmaster's reaped time).
   */
  dbPids: () => Promise<{ pids: number[]; reaped: boolean }>;
}

/** CPU (ms) of each pid now; a pid that is gone is left out. */
const cpuOf = (pids: number[], reaped: boolean) =>
  new Map(pids.filter((p) => procStat(p)).map((p) => [p, processCpuMs(p, reaped)]));
/** CPU spent between two readings by the processes present in both. */
const spent = (a: Map<number, number>, b: Map<number, number>) =>
  [...b].reduce((n, [p, ms]) => n + (a.has(p) ? ms - must(a.get(p)) : 0), 0);

async function main() {
  const cluster = await startPgCluster();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-idle-'));
  const setups: Idle[] = [];
  const admins: pg.Client[] = [];
  try {
    const dir = (name: string) => {
      const d = path.join(root, name);
      fs.mkdirSync(d, { mode: 0o700 });
      return d;
    };
    setups.push({
      name: 'embedded',
      daemon: await startDaemonProcess(dir('embedded')),
      dbPids: async () => ({ pids: [], reaped: false }),
    });
    const onPg = async (name: string, from?: string) => {
      const url = await cluster.createDatabase();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      admins.push(admin);
      const daemon = await startDaemonProcess(dir(name), ['--database-url', url], from);
      const backends = async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
          )
        ).rows.map((r) => r.pid);
      const dataDir = must(
        (await admin.query<{ data_directory: string }>('SHOW data_directory')).rows[0],
      ).data_directory;
      const wholeCluster = async () => ({ pids: clusterPids(dataDir), reaped: true });
      setups.push({
        name,
        daemon,
        dbPids: B_ROOT ? async () => ({ pids: await backends(), reaped: false }) : wholeCluster,
      });
    };
    await onPg('postgres');
    if (B_ROOT) await onPg('postgresB', B_ROOT);
    await new Promise((r) => setTimeout(r, SETTLE_S * 1000));

    const windows: Record<string, Array<{ daemon: number; database: number; total: number }>> = Object.fromEntries(
      setups.map((s) => [s.name, []]),
    );
    for (let r = 0; r < ROUNDS; r++) {
      const cpu = async () =>
        Promise.all(
          setups.map(async (s) => {
            const db = await s.dbPids();
            return { daemon: processCpuMs(must(s.daemon.child.pid)), database: cpuOf(db.pids, db.reaped) };
          }),
        );
      const before = await cpu();
      const t0 = performance.now();
      await new Promise((res) => setTimeout(res, SECONDS * 1000));
      const after = await cpu();
      const secs = (performance.now() - t0) / 1000;
      setups.forEach((s, i) => {
        const per = (a: number, b: number) => Math.round(((a - b) / secs) * 100) / 100;
        const w = {
          daemon: per(must(after[i]).daemon, must(before[i]).daemon),
          database: per(spent(must(before[i]).database, must(after[i]).database), 0),
          total: 0,
        };
        w.total = Math.round((w.daemon + w.database) * 100) / 100;
        must(windows[s.name]).push(w);
        console.error(`${s.name}: ${JSON.stringify(w)} ms of CPU per second`);
      });
    }
    const median = (ws: Array<{ total: number }>) =>
      must([...ws].sort((a, b) => a.total - b.total)[Math.floor(ws.length / 2)]);
    const results = Object.fromEntries(
      Object.entries(windows).map(([n, ws]) => [n, { ...median(ws), windowsTotal: ws.map((w) => w.total) }]),
    );
    if (B_ROOT) {
      console.error(JSON.stringify(results));
      return;
    }
    writeResult('idle', {
      benchmark:
        'CPU of an idle daemon (no requests): its pollers, sweeps and heartbeats, in ms of CPU per second of wall time',
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}`,
      settings: { rounds: ROUNDS, secondsPerWindow: SECONDS, settleSeconds: SETTLE_S },
      method:
        'both daemons up at once, CPU (/proc/<pid>/stat) read over the same windows after start-up settled; the median window is kept. On PostgreSQL the database part is the CPU of every process of the cluster (the postmaster with its reaped children, the backends and the background processes)',
      results,
    });
  } finally {
    await Promise.all(admins.map((a) => a.end().catch(() => {})));
    await Promise.all(setups.map((s) => s.daemon.stop()));
    await cluster.stop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
