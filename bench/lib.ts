/** Shared bits of the benchmarks: a daemon child process, a fixed-concurrency load loop, percentiles. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DaemonHandle } from '../src/server/start.js';
import { IDENTITY_TABLES, type WorkspaceUserRecord } from '../src/model/identity.js';
import { must } from '../src/must.js';
import { checkManifest } from '../src/validation/manifest.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Whether the module at `metaUrl` (its import.meta.url) is the program node was asked to run, not an import. */
export function isMain(metaUrl: string): boolean {
  return !!process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(metaUrl);
}

/** The median (the upper one of an even count). */
export function median(xs: number[]): number {
  return must([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]);
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return must(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** CPU of this process per call (µs): the load generator's own cost, or the daemon's when it runs in-process. */
  cpuUsPerCall: number;
}

/** Run `fn` with `concurrency` workers until `total` calls or `seconds` elapse; latencies in ms. */
export async function load(
  fn: (i: number) => Promise<boolean>,
  opts: { concurrency: number; total?: number; seconds?: number },
): Promise<LoadResult> {
  const lat: number[] = [];
  let next = 0;
  let errors = 0;
  const start = performance.now();
  const cpu0 = process.cpuUsage();
  const deadline = opts.seconds ? start + opts.seconds * 1000 : Infinity;
  const total = opts.total ?? Infinity;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (next < total && performance.now() < deadline) {
        const i = next++;
        const t0 = performance.now();
        let ok = false;
        try {
          ok = await fn(i);
        } catch {
          ok = false;
        }
        lat.push(performance.now() - t0);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    requests: lat.length,
    errors,
    seconds: r(seconds),
    rps: Math.round(lat.length / seconds),
    p50: r(percentile(lat, 50)),
    p99: r(percentile(lat, 99)),
    cpuUsPerCall: r((cpu.user + cpu.system) / Math.max(1, lat.length)),
  };
}

export interface DaemonProc {
  child: ChildProcess;
  url: string;
  startupMs: number;
  stop(): Promise<void>;
  rssMb(): { rss: number; hwm: number };
}

let signalsHandled = false;
/** SIGINT and SIGTERM end the process through process.exit, so its 'exit' handlers run. */
export function exitOnSignals(): void {
  if (signalsHandled) return;
  signalsHandled = true;
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
}

/**
 * Start `appreg serve` of the checkout at `root` as a separate process (the load generator must not share its event
 * loop). `opts.nodeArgs`: node options for this daemon (e.g. --cpu-prof); `opts.execPath`: the Node binary (default:
 * this one); `opts.env`: its environment (default: this process's).
 */
export function startDaemonProcess(
  dataDir: string,
  extraArgs: string[] = [],
  root = ROOT,
  opts: { nodeArgs?: string[]; execPath?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<DaemonProc> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    // BENCH_DAEMON_NODE_ARGS: node options for the daemons only (e.g. --cpu-prof --cpu-prof-dir=/tmp/p while tuning)
    const nodeArgs = [
      ...(process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean),
      ...(opts.nodeArgs ?? []),
    ];
    const child = spawn(
      opts.execPath ?? process.execPath,
      [
        ...nodeArgs,
        '--',
        path.join(root, 'bin/appreg.js'),
        'serve',
        '--port',
        '0',
        '--data-dir',
        dataDir,
        '--log-level',
        'warn',
        '--json',
        ...extraArgs,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], env: opts.env ?? process.env },
    );
    // a benchmark that dies (an error, a timeout, Ctrl-C) takes its daemons with it instead of leaving them running
    exitOnSignals();
    const orphaned = () => child.kill('SIGKILL');
    process.once('exit', orphaned);
    child.once('exit', () => process.removeListener('exit', orphaned));
    let out = '';
    child.on('exit', (code) => reject(new Error(`daemon exited ${code}: ${out}`)));
    must(child.stdout).on('data', (c) => {
      out += c;
      // --json: the daemon prints {url, dataDir, pid} once it listens (its log is at warn)
      const m = /"url": "(http:\/\/[^"]+)"/.exec(out);
      if (m) {
        const startupMs = Math.round(performance.now() - t0);
        resolve({
          child,
          url: must(m[1]),
          startupMs,
          stop: () =>
            new Promise((r) => {
              child.removeAllListeners('exit');
              child.once('exit', () => {
                process.removeListener('exit', orphaned);
                r();
              });
              child.kill('SIGTERM');
            }),
          rssMb() {
            const s = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
            const kb = (k: string) => Number((new RegExp(`${k}:\\s+(\\d+)`).exec(s) || [])[1] || 0);
            return { rss: Math.round(kb('VmRSS') / 1024), hwm: Math.round(kb('VmHWM') / 1024) };
          },
        });
      }
    });
  });
}

export function writeResult(name: string, data: unknown): void {
  const dir = path.join(ROOT, 'bench/results');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(data, null, 2) + '\n');
  console.log(JSON.stringify(data, null, 2));
}

/** The redirect URL of the token benchmarks' apps. */
export const BENCH_REDIRECT = 'https://bench.example.com/cb';

/** The manifest of the token benchmarks' app number i: a bot app with the scopes an exchange grants. */
export function benchManifest(i: number) {
  return {
    name: `bench-app-${i}`,
    displayName: `Bench App ${i}`,
    bot: true,
    botTitle: 'Benchmark bot',
    scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
    shortcuts: [],
    slashCommands: [],
    eventSubscriptions: { url: 'https://bench.example.com/events', events: ['NEW_MESSAGE'] },
    redirectUrls: [BENCH_REDIRECT],
    offlineMessage: 'offline',
  };
}

/** fn(0..n-1), at most `width` at a time; the results in order. */
export async function inBatches<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** What the token benchmarks seed: users of the owner's workspace, and bot apps (their client ids and secrets). */
export interface BenchSeed {
  users: WorkspaceUserRecord[];
  clients: Array<{ id: string; secret: string; appKey: string }>;
  /** A fresh authorization code of `client` granted by `user`, through the service layer. */
  grant(client: { id: string }, user: WorkspaceUserRecord): Promise<string>;
}

/** Seed `users` workspace users and `apps` apps into an in-process daemon that just bootstrapped, `width` at a time. */
export async function seedBenchApps(
  d: DaemonHandle,
  counts: { apps: number; users: number; width: number },
): Promise<BenchSeed> {
  const owner = must(d.bootstrapped);
  const principal = { workspaceId: owner.workspaceId, workspaceUserId: owner.workspaceUserId, jti: '' };
  const users: WorkspaceUserRecord[] = Array.from({ length: counts.users }, (_, i) => ({
    id: `wu_bench${i}`,
    workspaceId: owner.workspaceId,
    accountId: `acc_bench${i}@example.com`,
    email: `bench${i}@example.com`,
    name: `Bench ${i}`,
    createdAt: new Date().toISOString(),
  }));
  await d.parts.store.commit(users.map((u) => ({ table: IDENTITY_TABLES.workspaceUsers, id: u.id, value: u })));
  const clients = await inBatches(counts.apps, counts.width, async (i) => {
    const app = await d.parts.apps.create(principal, checkManifest(benchManifest(i), {}).manifest);
    return { id: app.id, secret: app.clientSecret as string, appKey: app.appKey as string };
  });
  const { requests } = d.parts.oauth;
  const grant = async (c: { id: string }, u: WorkspaceUserRecord) =>
    (
      await requests.grant(
        await requests.validate({
          clientId: c.id,
          scopes: 'messages:read,bot:messages:read,bot:messages:write',
          redirectUrl: BENCH_REDIRECT,
        }),
        u,
      )
    ).code;
  return { users, clients, grant };
}

const TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/** The fields of /proc/<pid>/stat after the command name (state first), or undefined once the process is gone. */
export function procStat(pid: number): string[] | undefined {
  try {
    return must(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system, ms) a process has used (0 once it is gone); with `reaped`, also that
 * of the children it waited for (a postmaster's exited backends).
 */
export function processCpuMs(pid: number, reaped = false): number {
  const f = procStat(pid);
  if (!f) return 0;
  const ticks = Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0);
  return (ticks * 1000) / TICKS_PER_S;
}

/**
 * Wait until these processes are idle (together at most 20 ms of CPU in 250 ms, four times in a
 * row, after 2.5 s: the embedded store compacts after 2 s without commits), so that one side's
 * background work (compaction, garbage collection, a database's checkpoint) does not land in
 * another side's round on this 2-core machine; gives up after 30 s (no wait for no process). With `reaped`, the CPU of
 * the children each process waited for counts too (a postmaster's exited backends).
 */
export async function quiet(pids: () => number[], opts: { reaped?: boolean } = {}): Promise<void> {
  if (!pids().length) return;
  const cpu = () => pids().reduce((sum, p) => sum + processCpuMs(p, opts.reaped), 0);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 2500));
  let calm = 0;
  let last = cpu();
  while (calm < 4 && performance.now() - t0 < 30_000) {
    await new Promise((r) => setTimeout(r, 250));
    const now = cpu();
    calm = now - last <= 20 ? calm + 1 : 0;
    last = now;
  }
}

/** A multipart form of text fields, as the official SDK sends the token endpoint's (one plain header per part). */
export function multipart(
  parts: Record<string, string>,
  boundary = '----bench0123456789abcdef',
): { body: string; type: string } {
  let body = '';
  for (const [k, v] of Object.entries(parts))
    body += `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  return { body: body + `--${boundary}--\r\n`, type: `multipart/form-data; boundary=${boundary}` };
}
