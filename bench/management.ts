/**
 * Management API against a daemon holding 10,000 apps: create and get throughput and
 * p50/p99 at 50 concurrent connections, start-up time and memory. Beside the daemon, in the
 * same run and taking turns with it, the floor: a bare `node:http` server in its own process
 * answering the same GETs with the same JSON (the daemon's own answers, byte for byte) from a
 * Map; get is reported as a ratio to it. `npm run bench:compare` runs the same sides for two
 * builds (managementPath).
 * Run: npm run build && node dist/bench/management.js   (a few minutes)
 * Env: BENCH_APPS (10,000), BENCH_ROUNDS (3), BENCH_SECONDS (6 of gets per round), BENCH_CREATES (1,000 per round)
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { isMain, load, median, processCpuMs, ROOT, startDaemonProcess, writeResult, type DaemonProc } from './lib.js';
import {
  launchOf,
  takeTurns,
  type Build,
  type Launch,
  type Figures,
  type HotPath,
  type RunOptions,
  type Side,
} from './sides.js';
import { openFigureSpecs, openFigures, openLoop } from './open-loop.js';
import { must } from '../src/must.js';

const CONC = 50;

function manifest(i: number) {
  return JSON.stringify({
    name: `bench-app-${i}`,
    displayName: `Bench App ${i}`,
    bot: true,
    botTitle: 'Benchmark bot',
    scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
    shortcuts: [{ shortcutType: 'GLOBAL', url: 'https://bench.example.com/shortcut', name: 'go', displayName: 'Go' }],
    slashCommands: [{ command: '/bench', url: 'https://bench.example.com/slash', usageHint: '[text]' }],
    eventSubscriptions: { url: 'https://bench.example.com/events', events: ['NEW_MESSAGE'] },
    redirectUrls: ['https://bench.example.com/redirect'],
    offlineMessage: 'offline',
  });
}

/** The per-user write limit (6000/min by default) would turn the seeding into 429s. */
const DAEMON_ENV = { ...process.env, APPREG_RATE_LIMIT_MANAGEMENT_WRITES: '0' };

/** A daemon (`appreg serve` of a build) and the management calls the benchmark makes of it. */
class ManagedDaemon {
  pool: Pool;
  readonly ids: string[] = [];
  readonly headers: Record<string, string>;
  readonly base: string;
  private created = 0;

  constructor(
    public d: DaemonProc,
    readonly dir: string,
    readonly root: string,
  ) {
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
    this.base = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    this.headers = { authtoken: creds.authToken };
    this.pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
  }

  static async start(root: string, launch: Launch = {}): Promise<ManagedDaemon> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-mgmt-'));
    return new ManagedDaemon(await startDaemonProcess(dir, [], root, { env: DAEMON_ENV, ...launch }), dir, root);
  }

  /** Stop (SIGTERM) and serve again on the same data, as an operator restarts it; how long each took (ms). */
  async restart(): Promise<{ stopMs: number; stopAndStartMs: number }> {
    await this.pool.close();
    const t0 = performance.now();
    await this.d.stop();
    const stopMs = Math.round(performance.now() - t0);
    this.d = await startDaemonProcess(this.dir, [], this.root, { env: DAEMON_ENV });
    this.pool = new Pool(this.d.url, { connections: CONC, pipelining: 1 });
    return { stopMs, stopAndStartMs: Math.round(performance.now() - t0) };
  }

  /** One create of the next app; whether it was made. */
  async create(): Promise<boolean> {
    const r = await this.pool.request({
      method: 'POST',
      path: `${this.base}/apps`,
      headers: { ...this.headers, 'content-type': 'application/json' },
      body: manifest(this.created++),
    });
    const b = (await r.body.json()) as { id: string };
    if (r.statusCode === 201) this.ids.push(b.id);
    return r.statusCode === 201;
  }

  /** `total` creates, 50 at a time. */
  creates(total: number) {
    return load(() => this.create(), { concurrency: CONC, total });
  }

  /** The path of a get of the i-th app (round robin over those created). */
  getPath(i: number): string {
    return `${this.base}/apps/mine/${this.ids[i % this.ids.length]}`;
  }

  /** Each app's GET answer, as the floor serves it. */
  async answers(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    await load(
      async (i) => {
        if (i >= this.ids.length) return true;
        const r = await this.pool.request({ method: 'GET', path: this.getPath(i), headers: this.headers });
        out[this.getPath(i)] = await r.body.text();
        return r.statusCode === 200;
      },
      { concurrency: CONC, total: this.ids.length },
    );
    return out;
  }

  async stop(): Promise<void> {
    await this.pool.close();
    await this.d.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** GETs of `paths(i)` with the management token, 50 connections at a time. */
function gets(
  pool: Pool,
  headers: Record<string, string>,
  paths: (i: number) => string,
  o: { seconds?: number; total?: number },
) {
  return load(
    async (i) => {
      const r = await pool.request({ method: 'GET', path: paths(i), headers });
      await r.body.dump();
      return r.statusCode === 200;
    },
    { concurrency: CONC, ...o },
  );
}

/** The floor: a bare node:http server in its own process answering `answers` (path → JSON) from a Map. */
function startBareJson(answers: Record<string, string>): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-bare-')), 'answers.json');
  fs.writeFileSync(file, JSON.stringify(answers));
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--bare-json', file], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    process.once('exit', () => child.kill('SIGKILL'));
    child.once('exit', (c) => reject(new Error(`bare node:http server exited ${c}`)));
    child.once('message', (m) => {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      resolve({
        url: String((m as { url: string }).url),
        pid: must(child.pid),
        stop: () =>
          new Promise((r) => {
            child.removeAllListeners('exit');
            child.once('exit', () => r());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}

function runBareJson(file: string) {
  const answers = new Map(Object.entries(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>));
  const server = http.createServer((req, res) => {
    const body = answers.get(req.url ?? '');
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () =>
    process.send?.({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
  );
  process.on('SIGTERM', () => process.exit(0));
}

interface Plan {
  seconds: number;
  creates: number;
}

/**
 * The daemon's side: each round gets for `seconds`, then `creates` creates. Gets come first: the
 * embedded store compacts once no commit came for 2 s, which after the creates fell inside the get
 * window and was counted as the gets' CPU; after them, the wait before the next round (quiet) takes it.
 */
function daemonSide(m: ManagedDaemon, plan: Plan): Side {
  return {
    pids: () => [must(m.d.child.pid)],
    async warm() {
      await m.creates(500);
      await gets(m.pool, m.headers, (i) => m.getPath(i), { total: 2000 });
    },
    async round(): Promise<Figures> {
      const pid = must(m.d.child.pid);
      const cpu0 = processCpuMs(pid);
      const g = await gets(m.pool, m.headers, (i) => m.getPath(i), { seconds: plan.seconds });
      const cpu1 = processCpuMs(pid);
      const c = await m.creates(plan.creates);
      const cpu2 = processCpuMs(pid);
      const us = (ms: number, n: number) => Math.round((ms * 1000) / Math.max(1, n));
      return {
        getRps: g.rps,
        getP99: g.p99,
        getCpuUs: us(cpu1 - cpu0, g.requests),
        createRps: c.rps,
        createP99: c.p99,
        createCpuUs: us(cpu2 - cpu1, c.requests),
        errors: c.errors + g.errors,
      };
    },
    close: () => m.stop(),
  };
}

/** The floor's side: the same gets (paths, token) against the bare server holding `source`'s answers. */
async function floorSide(source: ManagedDaemon, plan: Plan): Promise<Side> {
  const bare = await startBareJson(await source.answers());
  const pool = new Pool(bare.url, { connections: CONC, pipelining: 1 });
  const paths = [...source.ids];
  const path = (i: number) => `${source.base}/apps/mine/${paths[i % paths.length]}`;
  return {
    pids: () => [bare.pid],
    warm: async () => {
      await gets(pool, source.headers, path, { total: 2000 });
    },
    async round(): Promise<Figures> {
      const g = await gets(pool, source.headers, path, { seconds: plan.seconds });
      return { getRps: g.rps, getP99: g.p99, errors: g.errors };
    },
    async close() {
      await pool.close();
      await bare.stop();
    },
  };
}

const APPS = { quick: 500, compare: 3000, full: 10_000 };

/** A build's daemon holding the scale's apps. */
async function seeded(build: Build, o: RunOptions): Promise<ManagedDaemon> {
  const m = await ManagedDaemon.start(build.root, launchOf(o, build));
  try {
    const seed = await m.creates(APPS[o.scale]);
    if (seed.errors) throw new Error(`${seed.errors} of ${seed.requests} creates failed while seeding`);
    return m;
  } catch (e) {
    await m.stop();
    throw e;
  }
}

export const managementPath: HotPath = {
  id: 'management',
  title: 'management API, 50 connections',
  floor: 'bare node:http server, same JSON from a Map',
  figures: [
    { key: 'getRps', label: 'get/s', better: 'higher', target: { atLeastFloor: 0.3 } },
    { key: 'getP99', label: 'get p99 ms', better: 'lower' },
    { key: 'getCpuUs', label: 'daemon CPU µs per get', better: 'lower' },
    { key: 'createRps', label: 'create/s', better: 'higher' },
    { key: 'createP99', label: 'create p99 ms', better: 'lower', target: { below: 15 } },
    { key: 'createCpuUs', label: 'daemon CPU µs per create', better: 'lower' },
  ],
  async setup(o: RunOptions) {
    const plan = { seconds: o.seconds, creates: o.scale === 'quick' ? 300 : 1000 };
    const opened = new Map<Build['role'], ManagedDaemon>();
    return {
      async open(build: Build) {
        const m = await seeded(build, o);
        opened.set(build.role, m);
        return daemonSide(m, plan);
      },
      // the working tree's answers (the ref's, when it is measured alone)
      async floor() {
        const source = opened.get('wt') ?? opened.get('ref');
        if (!source) throw new Error("the floor serves a daemon's answers: open a build first");
        return floorSide(source, plan);
      },
      async close() {},
    };
  },
};

/** Issue 36: creates at 300/s on schedule, fsync on, p99 < 10 ms. */
const CREATE_RATE = 300;

/** The open-loop side: creates at CREATE_RATE for the round's length (the pool opens connections as it needs them). */
function createOpenSide(m: ManagedDaemon, seconds: number): Side {
  return {
    pids: () => [must(m.d.child.pid)],
    async warm() {
      await openLoop(() => m.create(), { rate: CREATE_RATE, seconds: 1 });
    },
    async round(): Promise<Figures> {
      const pid = must(m.d.child.pid);
      const cpu0 = processCpuMs(pid);
      const r = await openLoop(() => m.create(), { rate: CREATE_RATE, seconds });
      return { ...openFigures(r), cpuUs: Math.round(((processCpuMs(pid) - cpu0) * 1000) / Math.max(1, r.answered)) };
    },
    close: () => m.stop(),
  };
}

export const createOpenPath: HotPath = {
  id: 'create-open',
  title: `management create, open loop at ${CREATE_RATE}/s, fsync on`,
  figures: openFigureSpecs({ below: 10 }, 'daemon CPU µs per create'),
  async setup(o: RunOptions) {
    return {
      async open(build: Build) {
        const m = await seeded(build, o);
        return createOpenSide(m, o.seconds);
      },
      async close() {},
    };
  },
};

async function main() {
  const apps = Number(process.env.BENCH_APPS ?? APPS.full);
  const plan = { seconds: Number(process.env.BENCH_SECONDS ?? 6), creates: Number(process.env.BENCH_CREATES ?? 1000) };
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const m = await ManagedDaemon.start(ROOT);
  let floor: Side | undefined;
  try {
    const seed = await m.creates(apps);
    console.error(`seeded ${m.ids.length} apps: ${seed.rps} creates/s`);
    // restart so start-up and memory are measured with the full store on disk
    await m.restart();
    const startupMs = m.d.startupMs;
    const rssAfterStart = m.d.rssMb();
    floor = await floorSide(m, plan);
    const turns = await takeTurns(
      [
        ['daemon', daemonSide(m, plan)],
        ['bare', floor],
      ],
      { rounds, log: (l) => console.error(l) },
    );
    const mem = m.d.rssMb();
    // a restart as an operator does it (SIGTERM, then serve again): socket-mode apps reconnect 2 s after the close
    const restart = await m.restart();
    const med = (side: string, k: string) => median(must(turns[side]).rounds.map((r) => must(r[k])));
    const perRound = must(turns.daemon).rounds.map(
      (r, i) => Math.round((must(r.getRps) / must(must(must(turns.bare).rounds[i]).getRps)) * 100) / 100,
    );
    const getRatio = median(perRound);
    const createP99 = med('daemon', 'createP99');
    const getRps = med('daemon', 'getRps');
    writeResult('management', {
      benchmark:
        'management API, 50 concurrent connections, daemon in its own process, fsync on; rounds take turns with a bare node:http server answering the same JSON from a Map (own process)',
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      appsHeld: m.ids.length,
      seedCreates: seed,
      rounds,
      create: {
        perRound: plan.creates,
        rps: med('daemon', 'createRps'),
        p99: createP99,
        daemonCpuUs: med('daemon', 'createCpuUs'),
      },
      get: { seconds: plan.seconds, rps: getRps, p99: med('daemon', 'getP99'), daemonCpuUs: med('daemon', 'getCpuUs') },
      bareNodeHttp: { rps: med('bare', 'getRps'), p99: med('bare', 'getP99') },
      getRatioToBareHttp: getRatio,
      getRatioPerRound: perRound,
      perRound: { daemon: must(turns.daemon).rounds, bare: must(turns.bare).rounds },
      startupMsWith10kApps: startupMs,
      restartWith10kApps: { ...restart, targetMs: 1500 },
      memoryMb: { afterStart: rssAfterStart.rss, afterLoad: mem.rss, peak: mem.hwm },
      dataFileMb: Math.round((fs.statSync(path.join(m.dir, 'appreg.json')).size / 1048576) * 10) / 10,
      targets: { createP99Ms: 15, getRatioToBareHttp: 0.3, getRps: 3000, startupMs: 1000 },
      met: {
        createP99: createP99 < 15,
        getRatio: getRatio >= 0.3,
        getRps: getRps >= 3000,
        startup: startupMs < 1000,
        restart: restart.stopAndStartMs < 1500,
      },
      at: new Date().toISOString(),
    });
  } finally {
    await floor?.close();
    await m.stop();
  }
}

if (isMain(import.meta.url) && process.argv[2] === '--bare-json') runBareJson(must(process.argv[3]));
else if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
