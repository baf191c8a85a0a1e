/**
 * Socket mode with 1,000 connected app sockets: round trips per second (deliver + ack) and
 * p50/p99, through the daemon and, side by side in the same run, through a bare `ws` echo
 * server driven the same way (the floor). The server side runs in a child process
 * (bench/socket-server.ts); this process holds the 1,000 client sockets, which answer every
 * frame as the official SDK does (binary JSON `{correlation_id, status: 200}`).
 *
 * Run:  npm run build && node dist/bench/socket.js     (about a minute)
 * Env:  BENCH_SOCKETS (1000), BENCH_APPS (100: 10 connections each, the default per-app cap),
 *       BENCH_SECONDS (4 per round), BENCH_ROUNDS (3, alternating echo / daemon), BENCH_CONCURRENCY ("100,1000": in-flight round trips),
 *       BENCH_PROF_WINDOW=<dir> (a CPU profile of each measured window, named <mode>-c<concurrency>-<round trips>.cpuprofile).
 * File descriptors: this process holds 2 × BENCH_SOCKETS sockets, each server BENCH_SOCKETS; if `ulimit -n` is below ~2,500,
 * raise it first (`ulimit -n 4096`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { writeResult } from './lib.js';
import type { ChildMessage, GoMessage } from './socket-server.js';

const SOCKETS = Number(process.env.BENCH_SOCKETS ?? 1000);
const APPS = Number(process.env.BENCH_APPS ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PATH_NOTE = "daemon: the socket transport's send() inside a real daemon process (ticketed connections through websocket-connection), reply matched by correlation id; engine: the same daemon, each round trip a slash-command trigger through the delivery engine (payload, transport, classification, delivery log)";
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '100,1000').split(',').map(Number);
const here = path.dirname(fileURLToPath(import.meta.url));

function next(child: ChildProcess): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const onMsg = (m: ChildMessage) => {
      child.off('exit', onExit);
      if (m.type === 'error') reject(new Error(m.message));
      else resolve(m);
    };
    const onExit = (code: number) => reject(new Error(`bench server exited ${code}`));
    child.once('message', onMsg);
    child.once('exit', onExit);
  });
}

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

async function inBatches<T>(n: number, batch: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += batch) out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, k) => fn(i + k)))));
  return out;
}

interface Side { child: ChildProcess; clients: WebSocket[]; connectMs: number }

async function open(mode: 'echo' | 'daemon' | 'engine'): Promise<Side> {
  const child = fork(path.join(here, 'socket-server.js'), [mode, String(APPS)], { execArgv: process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/sockprof'] : [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await next(child);
  if (ready.type !== 'ready') throw new Error('unexpected message');
  const t0 = performance.now();
  const clients = await inBatches(SOCKETS, 50, async (i) => {
    if (mode === 'echo') return openClient(ready.url);
    const app = ready.apps![i % ready.apps!.length]!;
    const res = await fetch(`${ready.url}/apps/${app.id}/websocket-connection?appKey=${encodeURIComponent(app.appKey)}`);
    if (res.status !== 200) throw new Error(`websocket-connection: ${res.status}`);
    return openClient(((await res.json()) as { url: string }).url);
  });
  const connectMs = Math.round(performance.now() - t0);
  console.error(`${mode}: ${clients.length} sockets open in ${connectMs} ms`);
  return { child, clients, connectMs };
}

async function close(side: Side) {
  for (const ws of side.clients) ws.terminate();
  side.child.send({ type: 'stop' });
  await new Promise((r) => side.child.once('exit', r));
}

/** What one measured round reports (the load process's result message). */
interface Measured { rps: number; p50: number; p99: number; errors: number; cpuUsPerRoundTrip: number; cpuCoreShare: number }

async function measure(side: Side, concurrency: number, warmupSeconds: number): Promise<Measured> {
  const go: GoMessage = { type: 'go', concurrency, seconds: SECONDS, warmupSeconds };
  side.child.send(go);
  const m = await next(side.child);
  if (m.type !== 'result') throw new Error('unexpected message');
  return m.result as unknown as Measured;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  // Both servers hold their 1,000 sockets at once; rounds alternate echo / daemon so that the
  // noise of a shared machine hits both alike. Each figure is the median over the rounds.
  const echo = await open('echo');
  const daemon = await open('daemon');
  const engine = await open('engine');
  const results: Record<string, unknown> = {};
  try {
    for (const c of CONCURRENCY) {
      const rounds: Record<'echo' | 'daemon' | 'engine', Measured[]> = { echo: [], daemon: [], engine: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const [name, side] of [['echo', echo], ['daemon', daemon], ['engine', engine]] as const) {
          const res = await measure(side, c, r === 0 ? 2 : 0);
          rounds[name].push(res);
          console.error(`round ${r + 1} ${name} c=${c}: ${res.rps} round trips/s, p50 ${res.p50} ms, p99 ${res.p99} ms, errors ${res.errors}, server cpu ${res.cpuUsPerRoundTrip} µs/rt (${res.cpuCoreShare} core)`);
        }
      }
      const summary = (xs: Measured[]) => ({ rps: median(xs.map((x) => x.rps)), p50: median(xs.map((x) => x.p50)), p99: median(xs.map((x) => x.p99)), errors: xs.reduce((a, x) => a + x.errors, 0), serverCpuUsPerRoundTrip: median(xs.map((x) => x.cpuUsPerRoundTrip)) });
      const e = summary(rounds.echo);
      const d = summary(rounds.daemon);
      const g = summary(rounds.engine);
      results[`concurrency${c}`] = { echo: e, daemon: d, engine: g, ratio: Math.round((d.rps / e.rps) * 100) / 100, ratioEngine: Math.round((g.rps / e.rps) * 100) / 100, rounds };
    }
  } finally {
    await close(echo);
    await close(daemon);
    await close(engine);
  }
  writeResult('socket', {
    benchmark: 'socket',
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    path: PATH_NOTE,
    sockets: SOCKETS,
    apps: APPS,
    connectMs: { echo: echo.connectMs, daemon: daemon.connectMs },
    secondsPerRound: SECONDS,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    results,
    targets: { ratio: 0.5, p99Ms: 100 },
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
