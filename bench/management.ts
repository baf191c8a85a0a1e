/**
 * Management API against a daemon holding 10,000 apps: create and get throughput and
 * p50/p99 at 50 concurrent connections, start-up time and memory.
 * Run: npm run build && node dist/bench/management.js   (bounded: about a minute)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { load, startDaemonProcess, writeResult } from './lib.js';

const APPS = Number(process.env.BENCH_APPS ?? 10_000);
const CONC = 50;

function manifest(i: number) {
  return JSON.stringify({
    name: `bench-app-${i}`, displayName: `Bench App ${i}`, bot: true, botTitle: 'Benchmark bot',
    scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
    shortcuts: [{ shortcutType: 'GLOBAL', url: 'https://bench.example.com/shortcut', name: 'go', displayName: 'Go' }],
    slashCommands: [{ command: '/bench', url: 'https://bench.example.com/slash', usageHint: '[text]' }],
    eventSubscriptions: { url: 'https://bench.example.com/events', events: ['NEW_MESSAGE'] },
    redirectUrls: ['https://bench.example.com/redirect'], offlineMessage: 'offline',
  });
}

async function main() {
  // The per-user write limit (6000/min by default) would turn the seeding into 429s.
  process.env.APPREG_RATE_LIMIT_MANAGEMENT_WRITES = '0';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-'));
  try {
    let d = await startDaemonProcess(dir);
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
    const base = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    let pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
    const headers = { authtoken: creds.authToken, 'content-type': 'application/json' };
    const ids: string[] = [];
    const create = async (i: number) => {
      const r = await pool.request({ method: 'POST', path: `${base}/apps`, headers, body: manifest(i) });
      const b = (await r.body.json()) as { id: string };
      if (r.statusCode === 201) ids.push(b.id);
      return r.statusCode === 201;
    };
    const seed = await load(create, { concurrency: CONC, total: APPS });
    console.error(`seeded ${ids.length} apps: ${seed.rps} creates/s`);
    // restart so start-up and memory are measured with the full store on disk
    await pool.close();
    await d.stop();
    d = await startDaemonProcess(dir);
    const startupMs = d.startupMs;
    const rssAfterStart = d.rssMb();
    pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
    await load((i) => create(APPS + i), { concurrency: CONC, total: 500 }); // warm-up (JIT) after the restart
    const createRes = await load((i) => create(APPS + 500 + i), { concurrency: CONC, total: 3000 });
    const get = async (i: number) => {
      const r = await pool.request({ method: 'GET', path: `${base}/apps/mine/${ids[i % ids.length]}`, headers: { authtoken: creds.authToken } });
      await r.body.dump();
      return r.statusCode === 200;
    };
    await load(get, { concurrency: CONC, total: 2000 }); // warm-up
    const getRes = await load(get, { concurrency: CONC, seconds: 8 });
    const mem = d.rssMb();
    await pool.close();
    // a restart as an operator does it (SIGTERM, then serve again): socket-mode apps reconnect 2 s after the close
    const r0 = performance.now();
    await d.stop();
    const stopMs = Math.round(performance.now() - r0);
    d = await startDaemonProcess(dir);
    const restartMs = Math.round(performance.now() - r0);
    await d.stop();
    const result = {
      benchmark: 'management API, 50 concurrent connections, daemon in its own process, fsync on',
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      appsHeld: ids.length,
      seedCreates: seed,
      create: createRes,
      get: getRes,
      startupMsWith10kApps: startupMs,
      restartWith10kApps: { stopMs, stopAndStartMs: restartMs, targetMs: 1500 },
      memoryMb: { afterStart: rssAfterStart.rss, afterLoad: mem.rss, peak: mem.hwm },
      dataFileMb: Math.round((fs.statSync(path.join(dir, 'appreg.json')).size / 1048576) * 10) / 10,
      targets: { createP99Ms: 50, getRps: 3000, startupMs: 1000 },
      met: { createP99: createRes.p99 < 50, getRps: getRes.rps >= 3000, startup: startupMs < 1000, restart: restartMs < 1500 },
      at: new Date().toISOString(),
    };
    writeResult('management', result);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
