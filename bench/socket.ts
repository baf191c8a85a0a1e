/**
 * Socket mode with 1,000 connected app sockets: round trips per second (deliver + ack) and
 * p50/p99, through the daemon and, side by side in the same run, through a bare `ws` echo
 * server driven the same way (the floor). The server side runs in a child process
 * (bench/socket-server.ts); this process holds the 1,000 client sockets, which answer every
 * frame as the official SDK does (binary JSON `{correlation_id, status: 200}`).
 * `npm run bench:compare` runs the engine side for two builds beside the echo (socketPath).
 *
 * Run:  npm run build && node dist/bench/socket.js     (about a minute)
 * Env:  BENCH_SOCKETS (1000), BENCH_APPS (100: 10 connections each, the default per-app cap),
 * BENCH_SECONDS (4 per round), BENCH_ROUNDS (3, alternating echo / daemon / engine), BENCH_CONCURRENCY ("100,1000":
 * in-flight round trips). File descriptors: this process holds 2 × BENCH_SOCKETS sockets, each server BENCH_SOCKETS; if
 * `ulimit -n` is below ~2,500, raise it first (`ulimit -n 4096`).
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { openHost, type Host, type HostResult } from './host.js';
import { inBatches, isMain, median, writeResult } from './lib.js';
import { openFigureSpecs, openFigures } from './open-loop.js';
import type { SocketTargetInfo } from './socket-server.js';
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
import { must } from '../src/must.js';

const PATH_NOTE =
  "daemon: the socket transport's send() inside a real daemon process (ticketed connections through websocket-connection), reply matched by correlation id; engine: the same daemon, each round trip a slash-command trigger through the delivery engine (payload, transport, classification, delivery log)";
const here = path.dirname(fileURLToPath(import.meta.url));

/** A client as the official SDK answers: parse the frame, reply binary JSON with its correlation id. */
function openClient(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { correlation_id: string };
      ws.send(Buffer.from(JSON.stringify({ correlation_id: frame.correlation_id, status: 200 })), { binary: true });
    });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

interface Sockets {
  host: Host;
  clients: WebSocket[];
  connectMs: number;
}

/** Start a target (echo, or a build's daemon) and connect `sockets` clients to it, as apps do. */
async function open(
  mode: 'echo' | 'daemon' | 'engine',
  sizes: { sockets: number; apps: number },
  root?: string,
  launch: Launch = {},
): Promise<Sockets> {
  const host = await openHost(
    path.join(here, 'socket-server.js'),
    mode === 'echo' ? ['echo'] : [mode, must(root), String(sizes.apps)],
    launch,
  );
  const ready = host.info as unknown as SocketTargetInfo;
  const t0 = performance.now();
  const clients: WebSocket[] = [];
  try {
    await inBatches(sizes.sockets, 50, async (i) => {
      if (mode === 'echo') return clients.push(await openClient(ready.url));
      const app = must(must(ready.apps)[i % must(ready.apps).length]);
      const res = await fetch(
        `${ready.url}/apps/${app.id}/websocket-connection?appKey=${encodeURIComponent(app.appKey)}`,
      );
      if (res.status !== 200) throw new Error(`websocket-connection: ${res.status}`);
      return clients.push(await openClient(((await res.json()) as { url: string }).url));
    });
  } catch (e) {
    await close({ host, clients, connectMs: 0 });
    throw e;
  }
  const connectMs = Math.round(performance.now() - t0);
  console.error(`${mode}: ${clients.length} sockets open in ${connectMs} ms`);
  return { host, clients, connectMs };
}

async function close(s: Sockets) {
  for (const ws of s.clients) ws.terminate();
  await s.host.stop();
}

/** A side measured at each in-flight count in turn, each round: rps<c>, p50_<c>, p99_<c>, cpuUs<c>. */
function socketSide(s: Sockets, concurrency: number[], seconds: number): Side {
  return {
    pids: () => [s.host.pid],
    async warm() {
      for (const c of concurrency) await s.host.go({ concurrency: c, seconds: 2 });
    },
    async round() {
      const out: Figures = { errors: 0 };
      for (const c of concurrency) {
        const r: HostResult = await s.host.go({ concurrency: c, seconds });
        Object.assign(out, {
          [`rps${c}`]: r.rps,
          [`p50_${c}`]: r.p50,
          [`p99_${c}`]: r.p99,
          [`cpuUs${c}`]: r.cpuUsPerRoundTrip,
        });
        out.errors = must(out.errors) + r.errors;
      }
      return out;
    },
    close: () => close(s),
  };
}

/** 1,000 sockets at every scale: the figures are at 100 and 1,000 round trips in flight. */
const SIZES = { sockets: 1000, apps: 100 };
const COMPARED = [100, 1000];

/** A closed-loop path's sides: the builds' daemons in `mode` and the echo, each at 100 then 1,000 in flight. */
const closedLoop = (mode: 'engine' | 'daemon') => async (o: RunOptions) => ({
  open: async (build: Build) =>
    socketSide(await open(mode, SIZES, build.root, launchOf(o, build)), COMPARED, o.seconds),
  floor: async () => socketSide(await open('echo', SIZES), COMPARED, o.seconds),
  async close() {},
});

export const socketPath: HotPath = {
  id: 'socket',
  title: 'socket trigger through the engine, 1,000 sockets',
  floor: 'bare ws echo',
  figures: [
    { key: 'rps100', label: 'round trips/s, 100 in flight', better: 'higher', target: { atLeastFloor: 0.5 } },
    { key: 'rps1000', label: 'round trips/s, 1,000 in flight', better: 'higher', target: { atLeastFloor: 0.5 } },
    { key: 'p99_1000', label: 'p99 ms, 1,000 in flight', better: 'lower', target: { below: 50 } },
    { key: 'cpuUs1000', label: 'CPU µs per round trip (with its load loop)', better: 'lower' },
  ],
  setup: closedLoop('engine'),
};

/**
 * The socket transport alone (the daemon's send() of a ready request, the app's reply matched): the socket layer's
 * own cost beside the echo, without the delivery engine's payload, classification and log around it.
 */
export const socketTransportPath: HotPath = {
  id: 'socket-transport',
  title: "the socket transport's send alone, 1,000 sockets",
  floor: 'bare ws echo',
  figures: socketPath.figures.filter((f) => f.key !== 'p99_1000'),
  setup: closedLoop('daemon'),
};

/** A side driven open loop: `rate` round trips per second on schedule (bench/open-loop.ts), each round. */
function socketOpenSide(s: Sockets, rate: number, seconds: number): Side {
  return {
    pids: () => [s.host.pid],
    async warm() {
      await s.host.open({ rate, seconds: 2 });
    },
    async round() {
      const r = await s.host.open({ rate, seconds });
      return { ...openFigures(r), cpuUs: r.cpuUsPerRoundTrip };
    },
    close: () => close(s),
  };
}

/** Issue 36: socket triggers at 5,000/s over the 1,000 sockets, p99 within 2× the echo's at the same offered rate. */
const OPEN_RATE = 5000;

export const socketOpenPath: HotPath = {
  id: 'socket-open',
  title: `socket trigger through the engine, open loop at ${OPEN_RATE.toLocaleString('en-US')}/s over 1,000 sockets`,
  floor: `bare ws echo at ${OPEN_RATE.toLocaleString('en-US')}/s`,
  figures: openFigureSpecs({ atMostFloor: 2 }, 'CPU µs per round trip (with its load loop)'),
  async setup(o: RunOptions) {
    return {
      open: async (build: Build) =>
        socketOpenSide(await open('engine', SIZES, build.root, launchOf(o, build)), OPEN_RATE, o.seconds),
      floor: async () => socketOpenSide(await open('echo', SIZES), OPEN_RATE, o.seconds),
      async close() {},
    };
  },
};

async function main() {
  const sizes = { sockets: Number(process.env.BENCH_SOCKETS ?? 1000), apps: Number(process.env.BENCH_APPS ?? 100) };
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
  const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '100,1000').split(',').map(Number);
  const root = path.resolve(here, '../..');
  // All three hold their sockets at once; rounds take turns so that the noise of a shared
  // machine hits them alike. Each figure is the median over the rounds.
  const opened: Sockets[] = [];
  try {
    for (const mode of ['echo', 'daemon', 'engine'] as const) opened.push(await open(mode, sizes, root));
    const [echo, daemon, engine] = opened as [Sockets, Sockets, Sockets];
    const turns = await takeTurns(
      [
        ['echo', socketSide(echo, CONCURRENCY, SECONDS)],
        ['daemon', socketSide(daemon, CONCURRENCY, SECONDS)],
        ['engine', socketSide(engine, CONCURRENCY, SECONDS)],
      ],
      { rounds: ROUNDS, log: (l) => console.error(l) },
    );
    const results: Record<string, unknown> = {};
    for (const c of CONCURRENCY) {
      const summary = (name: string) => {
        const rs = must(turns[name]).rounds;
        return {
          rps: median(rs.map((r) => must(r[`rps${c}`]))),
          p50: median(rs.map((r) => must(r[`p50_${c}`]))),
          p99: median(rs.map((r) => must(r[`p99_${c}`]))),
          serverCpuUsPerRoundTrip: median(rs.map((r) => must(r[`cpuUs${c}`]))),
        };
      };
      const [e, d, g] = [summary('echo'), summary('daemon'), summary('engine')];
      results[`concurrency${c}`] = {
        echo: e,
        daemon: d,
        engine: g,
        ratio: Math.round((d.rps / e.rps) * 100) / 100,
        ratioEngine: Math.round((g.rps / e.rps) * 100) / 100,
      };
    }
    writeResult('socket', {
      benchmark: 'socket',
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      path: PATH_NOTE,
      sockets: sizes.sockets,
      apps: sizes.apps,
      connectMs: { echo: echo.connectMs, daemon: daemon.connectMs, engine: engine.connectMs },
      secondsPerRound: SECONDS,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      results,
      perRound: Object.fromEntries(Object.entries(turns).map(([k, v]) => [k, v.rounds])),
      targets: { ratio: 0.5, p99Ms: 100, engineRatio: 0.5, engineP99MsAt1000: 50 },
    });
  } finally {
    for (const s of opened) await close(s);
  }
}

if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
