/**
 * Issue 36's memory target on a fixed amount of work: the token benchmark's data (npm run
 * bench:oauth's seeding: 10,000 apps, 10 users, 100,000 exchanges, 4 sets of 50,000 pending codes)
 * seeded once over HTTP, then, for each build named, its daemon (`appreg serve`, fsync on) opens a
 * copy of that data directory and every pending code is exchanged at 50 connections (their expiry
 * moved on first: postponeCodes). bench:oauth's
 * own peak depends on how many exchanges its timed rounds make (the load of the machine): this one
 * does not. Records the daemon's RSS once it listens (VmRSS) and its peak (VmHWM) at the end, and
 * when the peak came: its second, and whether a compaction was writing the data file then.
 *
 * Run: npm run bench:memory-peak -- [name=<checkout root, built> ...]   (default: this checkout)
 * Env: BENCH_APPS, BENCH_USERS, BENCH_CODES as bench:oauth; BENCH_OUT (default bench/results/memory-peak.json);
 * BENCH_SEED_DIR: keep the seeded data there and use it again on the next run (codes postponed a day).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { inBatches, isMain, ROOT, startDaemonProcess } from './lib.js';
import { CODE_TTL_SECONDS, exchange, fullSizes, postponeCodes, seedOverHttp } from './oauth-exchange.js';
import { must } from '../src/must.js';

const CONC = 50;
const SETS = 4;

async function main(): Promise<void> {
  const builds = (process.argv.slice(2).length ? process.argv.slice(2) : [`this=${ROOT}`]).map((a) => {
    const [name, root] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, a];
    return { name, root: path.resolve(root) };
  });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-memory-'));
  try {
    // BENCH_SEED_DIR: where the seeded data is kept, and taken from when it is there already
    const kept = process.env.BENCH_SEED_DIR;
    const seedDir = kept ? path.join(kept, 'data') : path.join(tmp, 'seed');
    const seedFile = kept && path.join(kept, 'seed.json');
    let seed: Awaited<ReturnType<typeof seedOverHttp>>;
    if (seedFile && fs.existsSync(seedFile)) seed = JSON.parse(fs.readFileSync(seedFile, 'utf8')) as typeof seed;
    else {
      seed = await seedOverHttp(ROOT, seedDir, fullSizes(), SETS);
      postponeCodes(seedDir);
      if (seedFile) fs.writeFileSync(seedFile, JSON.stringify(seed));
    }
    const codes = seed.codes.flat();
    console.error(`  seeded ${codes.length} codes in ${seed.seedSeconds} s`);
    const results: Record<string, object> = {};
    for (const { name, root } of builds) {
      const dir = path.join(tmp, name);
      fs.cpSync(seedDir, dir, { recursive: true });
      const env: NodeJS.ProcessEnv = { ...process.env, APPREG_CODE_TTL_SECONDS: CODE_TTL_SECONDS };
      delete env.APPREG_FSYNC;
      const d = await startDaemonProcess(dir, [], root, { env });
      const afterStart = d.rssMb();
      // with BENCH_DAEMON_NODE_ARGS=--trace-gc: the heap after each full collection (V8's line, MB)
      const fullGcs: string[] = [];
      d.child.stdout?.on('data', (c: Buffer) => {
        for (const m of c
          .toString()
          .matchAll(/Mark-Compact[^\n]*?(\d+\.\d+ \(\d+\.\d+\) -> \d+\.\d+ \(\d+\.\d+\) MB)/g))
          fullGcs.push(must(m[1]));
      });
      const pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
      const t0 = performance.now();
      const timeline = sampleTimeline(d, dir, t0);
      let failed = 0;
      try {
        await inBatches(codes.length, CONC, async (i) => {
          const c = must(codes[i]);
          if (!(await exchange(pool, must(seed.clients[c.client]), c.code))) failed++;
        });
      } finally {
        await pool.close();
      }
      const seconds = (performance.now() - t0) / 1000;
      const end = d.rssMb();
      const when = timeline.stop();
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
      results[name] = {
        root,
        exchanges: codes.length,
        failed,
        seconds: Math.round(seconds),
        rssAfterStartMB: afterStart.rss,
        rssAtEndMB: end.rss,
        peakMB: end.hwm,
        ...when,
        ...(fullGcs.length ? { lastFullGcsHeapMB: fullGcs.slice(-3) } : {}),
      };
      console.error(`  ${name}: ${JSON.stringify(results[name])}`);
    }
    const out = {
      benchmark: "issue 36's memory target: the token benchmark's daemon over a fixed amount of work",
      date: new Date().toISOString(),
      node: process.version,
      machine: `${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end`,
      held: seed.held,
      method:
        'one data set seeded over HTTP, copied for each build; its daemon (fsync on) opens it and every pending code is exchanged at 50 connections; VmRSS once it listens, VmHWM at the end',
      builds: results,
      target: { peakMB: 500 },
    };
    const file = process.env.BENCH_OUT ?? path.join(ROOT, 'bench/results/memory-peak.json');
    fs.writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
    console.log(JSON.stringify(out, null, 2));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** A compaction seen during the run: its first and last sample (seconds) and the RSS it reached. */
interface Compaction {
  from: number;
  to: number;
  rssMB: number;
}

/**
 * Where in the run the peak came: the daemon's RSS sampled twice a second, and whether a compaction
 * was writing then (its temp data file exists in the data directory while it streams).
 */
function sampleTimeline(
  d: { rssMb(): { rss: number; hwm: number } },
  dir: string,
  t0: number,
): { stop(): { peakAtSecond: number; peakDuringCompaction: boolean; compactions: Compaction[] } } {
  const tmpFile = path.join(dir, '.appreg.json.tmp');
  let peak = { rss: 0, at: 0, compacting: false };
  const compactions: Compaction[] = [];
  let open: Compaction | undefined;
  const timer = setInterval(() => {
    const at = Math.round((performance.now() - t0) / 100) / 10;
    let rss: number;
    try {
      rss = d.rssMb().rss;
    } catch {
      return; // the daemon is gone
    }
    const compacting = fs.existsSync(tmpFile);
    if (compacting && !open) compactions.push((open = { from: at, to: at, rssMB: rss }));
    if (open) {
      open.to = at;
      open.rssMB = Math.max(open.rssMB, rss);
      if (!compacting) open = undefined;
    }
    if (rss > peak.rss) peak = { rss, at, compacting };
  }, 500);
  return {
    stop() {
      clearInterval(timer);
      return { peakAtSecond: peak.at, peakDuringCompaction: peak.compacting, compactions };
    },
  };
}

if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
