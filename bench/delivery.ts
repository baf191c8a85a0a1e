/**
 * Delivery throughput and the 3 s budget's accuracy, side by side in one run.
 *
 *  A. through the daemon's delivery engine: trigger → build payload → sign → POST → await
 *     the answer → classify → delivery log (the daemon runs in-process, as `serve` does);
 *  B. the floor: a plain loop of signed POSTs with undici's Pool to the same receiver;
 *  C. the same loop with got (the card's client), to show why the hot path uses undici.
 * Each runs in a process of its own with its load loop (bench/delivery-target.ts); rounds take
 * turns (A, B, C, A, B, C, …) so the shared machine's noise hits all alike. Then 200 concurrent
 * triggers at an app that never answers: time to the offline message. The receiver runs in its
 * own process. `npm run bench:compare` runs A for two builds beside B (deliveryPath).
 * Run: npm run bench:delivery    Env: BENCH_ROUNDS (3), BENCH_ROUND_SECONDS (3)
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DELIVERY_CONCURRENCY, type BudgetResult } from './delivery-target.js';
import { openHost, type Host, type HostResult } from './host.js';
import { isMain, median, writeResult } from './lib.js';
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

const here = path.dirname(fileURLToPath(import.meta.url));

function receiverChild(): Promise<{ url: string; stop(): void }> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--receiver'], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    process.once('exit', () => child.kill('SIGKILL'));
    child.once('message', (m) =>
      resolve({ url: String((m as { url: string }).url), stop: () => child.kill('SIGTERM') }),
    );
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
  server.listen(0, '127.0.0.1', () =>
    process.send?.({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }),
  );
  process.on('SIGTERM', () => process.exit(0));
}

const figures = (r: HostResult): Figures => ({ rps: r.rps, p99: r.p99, cpuUs: r.cpuUsPerRoundTrip, errors: r.errors });

/** A side whose target is hosted by `host`: 1,000 round trips to warm, `seconds` per round. */
function hostedSide(host: Host, seconds: number): Side {
  return {
    pids: () => [host.pid],
    warm: async () => {
      await host.go({ concurrency: DELIVERY_CONCURRENCY, total: 1000 });
    },
    round: async () => figures(await host.go({ concurrency: DELIVERY_CONCURRENCY, seconds })),
    close: () => host.stop(),
  };
}

const target = (mode: string, args: string[], launch: Launch = {}) =>
  openHost(path.join(here, 'delivery-target.js'), [mode, ...args], launch);

export const deliveryPath: HotPath = {
  id: 'delivery',
  title: 'delivery, signed POST',
  floor: 'plain undici loop',
  figures: [
    { key: 'rps', label: 'deliveries/s', better: 'higher', target: { atLeastFloor: 0.8 } },
    { key: 'p99', label: 'p99 ms', better: 'lower' },
    { key: 'cpuUs', label: 'CPU µs per delivery (with its load loop)', better: 'lower' },
  ],
  async setup(o: RunOptions) {
    const rx = await receiverChild();
    return {
      open: async (build: Build) =>
        hostedSide(await target('daemon', [build.root, rx.url], launchOf(o, build)), o.seconds),
      floor: async () => hostedSide(await target('undici', [rx.url]), o.seconds),
      close: async () => rx.stop(),
    };
  },
};

async function main() {
  const ROUND_SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 3);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
  const rx = await receiverChild();
  const hosts: Host[] = [];
  try {
    const daemon = await target('daemon', [path.resolve(here, '../..'), rx.url]);
    hosts.push(daemon);
    hosts.push(await target('undici', [rx.url]));
    hosts.push(await target('got', [rx.url]));
    const [d, u, g] = hosts.map((h) => hostedSide(h, ROUND_SECONDS)) as [Side, Side, Side];
    const turns = await takeTurns(
      [
        ['daemon', d],
        ['undici', u],
        ['got', g],
      ],
      { rounds: ROUNDS, log: (l) => console.error(l) },
    );
    const summary = (k: string) => {
      const rs = must(turns[k]).rounds;
      return {
        rps: median(rs.map((r) => must(r.rps))),
        p99: median(rs.map((r) => must(r.p99))),
        cpuUsPerDelivery: median(rs.map((r) => must(r.cpuUs))),
        errors: rs.reduce((n, r) => n + must(r.errors), 0),
      };
    };
    const [daemonS, undiciS, gotS] = [summary('daemon'), summary('undici'), summary('got')];
    // The 3 s budget under load: 200 concurrent triggers to an app that never answers.
    const budget = await daemon.call<BudgetResult>('budget');
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    writeResult('delivery', {
      benchmark:
        'delivery: signed POST through the daemon vs a plain signed loop, same receiver (own process), 50 concurrent, each in its own process with its load loop, median of alternating rounds',
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      throughput: {
        daemon: daemonS,
        plainUndiciPool: undiciS,
        plainGot: gotS,
        ratioDaemonToUndici: ratio(daemonS.rps, undiciS.rps),
        ratioGotToUndici: ratio(gotS.rps, undiciS.rps),
        perRound: { daemon: must(turns.daemon).rounds, undici: must(turns.undici).rounds, got: must(turns.got).rounds },
      },
      budget,
      targets: { ratio: 0.8, budgetP99Ms: 3100 },
      met: { ratio: daemonS.rps / undiciS.rps >= 0.8, budget: budget.p99Ms < 3100 },
      at: new Date().toISOString(),
    });
  } finally {
    for (const h of hosts) await h.stop();
    rx.stop();
  }
}

if (isMain(import.meta.url) && process.argv[2] === '--receiver') void runReceiver();
else if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
