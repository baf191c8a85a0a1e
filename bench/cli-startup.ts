/**
 * CLI start-up: wall time of `appreg --help` and `appreg apps list --help` next to `node -e 0`,
 * run interleaved so that a busy moment of the machine hits all three alike.
 * Run: npm run build && node dist/bench/cli-startup.js   (BENCH_RUNS=20 by default; about 15 s)
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { ROOT, percentile, writeResult } from './lib.js';
import { must } from '../src/must.js';

const RUNS = Math.max(20, Number(process.env.BENCH_RUNS ?? 20));
const BIN = path.join(ROOT, 'bin/appreg.js');

const cases: Array<{ name: string; args: string[] }> = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'appreg --help', args: ['--', BIN, '--help'] },
  { name: 'appreg apps list --help', args: ['--', BIN, 'apps', 'list', '--help'] },
];

function once(args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function main(): void {
  const times = new Map(cases.map((c) => [c.name, [] as number[]]));
  for (const c of cases) once(c.args); // warm the file system cache; not counted
  for (let i = 0; i < RUNS; i++) for (const c of cases) must(times.get(c.name)).push(once(c.args));
  const round = (x: number) => Math.round(x * 10) / 10;
  const stats = Object.fromEntries(
    [...times].map(([name, list]) => {
      const sorted = [...list].sort((a, b) => a - b);
      return [
        name,
        {
          medianMs: round(percentile(sorted, 50)),
          p90Ms: round(percentile(sorted, 90)),
          minMs: round(sorted[0] ?? NaN),
        },
      ];
    }),
  );
  const median = (name: string) => stats[name]?.medianMs ?? NaN;
  const base = median('node -e 0');
  writeResult('cli-startup', {
    benchmark: `CLI start-up, wall time of a spawned process, ${RUNS} interleaved runs each`,
    date: new Date().toISOString(),
    node: process.version,
    machine: `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}`,
    targetMs: 150,
    results: stats,
    ratioToNode: {
      'appreg --help': round(median('appreg --help') / base),
      'appreg apps list --help': round(median('appreg apps list --help') / base),
    },
  });
}

main();
