/**
 * Delivery throughput and the 3 s budget's accuracy, side by side in one run.
 *
 *  A. through the daemon's delivery engine: trigger → build payload → sign → POST → await
 *     the answer → classify → delivery log (the daemon runs in this process, as `serve` does);
 *  B. the floor: a plain loop of signed POSTs with undici's Pool to the same receiver;
 *  C. the same loop with got (the card's client), to show why the hot path uses undici.
 * Rounds alternate (A, B, C, A, B, C, …) so the shared machine's noise hits all alike.
 * Then 200 concurrent triggers at an app that never answers: time to the offline message.
 * The receiver runs in its own process. Run: npm run bench:delivery
 */
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { Agent as HttpAgent } from 'node:http';
import { Pool } from 'undici';
import { load, percentile, writeResult } from './lib.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startDaemon } from '../src/server/start.js';
import { signedHeaders } from '../src/delivery/sign.js';

const CONC = 50;
const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HANGING = 200;

function receiverChild(): Promise<{ url: string; stop(): void }> {
  if (process.argv[2] === '--receiver') throw new Error('unreachable');
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--receiver'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve({ url: String((m as { url: string }).url), stop: () => child.kill('SIGTERM') }));
    child.once('exit', (c) => reject(new Error(`receiver exited ${c}`)));
  });
}

async function runReceiver() {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hang') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => process.send!({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
  process.on('SIGTERM', () => process.exit(0));
}

async function main() {
  const rx = await receiverChild();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-dlv-'));
  const config = { ...loadConfig({ dataDir, port: 0 }, {}), logLevel: 'warn' as const, rateLimitManagementWrites: 0 };
  const daemon = await startDaemon(config, { logger: createLogger({ level: 'warn' }) });
  try {
    const creds = daemon.bootstrapped!;
    const principal = { workspaceId: creds.workspaceId, workspaceUserId: creds.workspaceUserId, jti: 'bench' };
    const manifest = {
      name: 'bench', displayName: 'Bench', bot: false, scopes: { botScopes: [], userScopes: [] }, shortcuts: [],
      slashCommands: [{ command: '/ok', url: `${rx.url}/slash` }, { command: '/hang', url: `${rx.url}/hang` }],
      eventSubscriptions: { url: '', events: [] }, redirectUrls: [], offlineMessage: 'Bench is offline',
    };
    const { app } = await daemon.parts.apps.create(principal, manifest);
    const engine = daemon.parts.deliveries;
    const secret = String(app.signingSecret);

    const viaDaemon = async () => (await engine.trigger(principal, { appId: app.id, kind: 'slash-command', command: '/ok', text: 'hi' })).outcome === 'acked';
    const pool = new Pool(rx.url, { connections: CONC, pipelining: 1 });
    const body = () => JSON.stringify({ messageType: 'SLASH_COMMAND', slashCommand: '/ok', text: 'hi', userId: principal.workspaceUserId, channelId: 'ch_test', workspaceId: principal.workspaceId, triggerId: crypto.randomUUID() });
    const plainUndici = async () => {
      const b = body();
      const r = await pool.request({ method: 'POST', path: '/slash', headers: { 'content-type': 'application/json', ...signedHeaders(secret, b, Date.now()) }, body: b });
      await r.body.text();
      return r.statusCode === 200;
    };
    const agent = new HttpAgent({ keepAlive: true, maxSockets: CONC });
    const plainGot = async () => {
      const b = body();
      const r = await got.post(`${rx.url}/slash`, { body: b, headers: { 'content-type': 'application/json', ...signedHeaders(secret, b, Date.now()) }, agent: { http: agent }, retry: { limit: 0 }, timeout: { request: 3000 } });
      return r.statusCode === 200;
    };

    if (process.env.BENCH_PROFILE_DAEMON) {
      // for profiling: only path A
      await load(viaDaemon, { concurrency: CONC, seconds: 5 });
      return;
    }
    // warm-up
    for (const f of [viaDaemon, plainUndici, plainGot]) await load(f, { concurrency: CONC, total: 1000 });
    const rounds: Record<string, Array<{ rps: number; p50: number; p99: number; errors: number }>> = { daemon: [], undici: [], got: [] };
    for (let i = 0; i < ROUNDS; i++) {
      rounds.daemon!.push(await load(viaDaemon, { concurrency: CONC, seconds: ROUND_SECONDS }));
      rounds.undici!.push(await load(plainUndici, { concurrency: CONC, seconds: ROUND_SECONDS }));
      rounds.got!.push(await load(plainGot, { concurrency: CONC, seconds: ROUND_SECONDS }));
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const summary = (k: string) => ({ rps: med(rounds[k]!.map((r) => r.rps)), p50: med(rounds[k]!.map((r) => r.p50)), p99: med(rounds[k]!.map((r) => r.p99)), errors: rounds[k]!.reduce((n, r) => n + r.errors, 0) });
    const daemonS = summary('daemon');
    const undiciS = summary('undici');
    const gotS = summary('got');
    await pool.close();
    agent.destroy();

    // The 3 s budget under load: 200 concurrent triggers to an app that never answers.
    const times: number[] = [];
    const outcomes = new Map<string, number>();
    await Promise.all(
      Array.from({ length: HANGING }, async () => {
        const t0 = performance.now();
        const rec = await engine.trigger(principal, { appId: app.id, kind: 'slash-command', command: '/hang' });
        times.push(performance.now() - t0);
        const key = `${rec.outcome}${rec.ephemeralMessage === 'Bench is offline' ? ' + offline message' : ''}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      }),
    );
    times.sort((a, b) => a - b);
    const r1 = (x: number) => Math.round(x);
    const result = {
      benchmark: 'delivery: signed POST through the daemon vs a plain signed loop, same receiver (own process), 50 concurrent, median of alternating rounds',
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      throughput: {
        daemon: daemonS,
        plainUndiciPool: undiciS,
        plainGot: gotS,
        ratioDaemonToUndici: Math.round((daemonS.rps / undiciS.rps) * 100) / 100,
        ratioGotToUndici: Math.round((gotS.rps / undiciS.rps) * 100) / 100,
        perRound: rounds,
      },
      budget: { concurrent: HANGING, p50Ms: r1(percentile(times, 50)), p99Ms: r1(percentile(times, 99)), minMs: r1(times[0]!), maxMs: r1(times.at(-1)!), outcomes: Object.fromEntries(outcomes) },
      targets: { ratio: 0.6, budgetP99Ms: 3100 },
      met: { ratio: daemonS.rps / undiciS.rps >= 0.6, budget: percentile(times, 99) < 3100 },
      at: new Date().toISOString(),
    };
    writeResult('delivery', result);
  } finally {
    await daemon.close();
    rx.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--receiver') void runReceiver();
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
