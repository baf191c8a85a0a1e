/**
 * The targets of bench/delivery.ts, each hosted in a process of its own (bench/host.ts):
 *   daemon <root> <receiver>: the daemon of the build at <root>, in-process; a round trip is a
 *       slash-command trigger through its delivery engine (build the payload, sign, POST, await
 *       the answer, classify, delivery log); call "budget": 200 concurrent triggers at a command
 *       whose URL never answers, each timed to its outcome;
 *   undici <receiver>: the floor, a plain loop of signed POSTs on an undici Pool;
 *   got <receiver>: the same loop with got, to show why the hot path uses undici.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Agent as HttpAgent } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import got from 'got';
import { Pool } from 'undici';
import { startInProcess } from './build.js';
import { serveTarget, type Target } from './host.js';
import { isMain, percentile } from './lib.js';
import { signedHeaders } from '../src/delivery/sign.js';
import { must } from '../src/must.js';

/** In-flight requests of every target. */
export const DELIVERY_CONCURRENCY = 50;
const HANGING = 200;

/** What the budget call answers: the time to each trigger's outcome (ms), and the outcomes. */
export interface BudgetResult {
  concurrent: number;
  p50Ms: number;
  p99Ms: number;
  minMs: number;
  maxMs: number;
  outcomes: Record<string, number>;
}

async function daemonTarget(root: string, receiver: string): Promise<Target> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-dlv-'));
  const d = await startInProcess(root, dataDir, { rateLimitManagementWrites: 0 });
  const app = await d.createApp({
    name: 'bench',
    displayName: 'Bench',
    bot: false,
    scopes: { botScopes: [], userScopes: [] },
    shortcuts: [],
    slashCommands: [
      { command: '/ok', url: `${receiver}/slash` },
      { command: '/hang', url: `${receiver}/hang` },
    ],
    eventSubscriptions: { url: '', events: [] },
    redirectUrls: [],
    offlineMessage: 'Bench is offline',
  });
  return {
    info: { signingSecret: app.signingSecret },
    roundTrip: async () =>
      (await d.trigger({ appId: app.id, kind: 'slash-command', command: '/ok', text: 'hi' })).outcome === 'acked',
    calls: {
      async budget(): Promise<BudgetResult> {
        const times: number[] = [];
        const outcomes: Record<string, number> = {};
        await Promise.all(
          Array.from({ length: HANGING }, async () => {
            const t0 = performance.now();
            const rec = await d.trigger({ appId: app.id, kind: 'slash-command', command: '/hang' });
            times.push(performance.now() - t0);
            const key = `${rec.outcome}${rec.ephemeralMessage === 'Bench is offline' ? ' + offline message' : ''}`;
            outcomes[key] = (outcomes[key] ?? 0) + 1;
          }),
        );
        times.sort((a, b) => a - b);
        return {
          concurrent: HANGING,
          p50Ms: Math.round(percentile(times, 50)),
          p99Ms: Math.round(percentile(times, 99)),
          minMs: Math.round(must(times[0])),
          maxMs: Math.round(must(times.at(-1))),
          outcomes,
        };
      },
    },
    async close() {
      await d.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The body the plain loops sign and POST: a slash command as the daemon builds it. */
const body = () =>
  JSON.stringify({
    messageType: 'SLASH_COMMAND',
    slashCommand: '/ok',
    text: 'hi',
    userId: 'wu_bench',
    channelId: 'ch_test',
    workspaceId: 'ws_bench',
    triggerId: crypto.randomUUID(),
  });
const SECRET = crypto.randomBytes(32).toString('base64url');

function undiciTarget(receiver: string): Target {
  const pool = new Pool(receiver, { connections: DELIVERY_CONCURRENCY, pipelining: 1 });
  return {
    async roundTrip() {
      const b = body();
      const r = await pool.request({
        method: 'POST',
        path: '/slash',
        headers: { 'content-type': 'application/json', ...signedHeaders(SECRET, b, Date.now()) },
        body: b,
      });
      await r.body.text();
      return r.statusCode === 200;
    },
    close: () => pool.close(),
  };
}

function gotTarget(receiver: string): Target {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: DELIVERY_CONCURRENCY });
  return {
    async roundTrip() {
      const b = body();
      const r = await got.post(`${receiver}/slash`, {
        body: b,
        headers: { 'content-type': 'application/json', ...signedHeaders(SECRET, b, Date.now()) },
        agent: { http: agent },
        retry: { limit: 0 },
        timeout: { request: 3000 },
      });
      return r.statusCode === 200;
    },
    async close() {
      agent.destroy();
    },
  };
}

if (isMain(import.meta.url)) {
  const [mode, ...args] = process.argv.slice(2);
  serveTarget(async () => {
    if (mode === 'daemon') return daemonTarget(must(args[0]), must(args[1]));
    if (mode === 'undici') return undiciTarget(must(args[0]));
    if (mode === 'got') return gotTarget(must(args[0]));
    throw new Error(`unknown delivery target "${mode}"`);
  });
}
