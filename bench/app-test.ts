/**
 * appreg test: a 20-test suite against the example app (examples/standup-app), the daemon and the
 * app started by the runner itself, as CI runs it: the wall time of the whole command with
 * --jobs 1 and with --jobs 4, runs interleaved so that a busy moment of the machine hits both.
 * The suite is the example's 8 tests, repeated to 20 (the command, the buttons as two users, the
 * menu and the select, the modal, the thread reply, the signature check).
 * Run: npm run bench:app-test   (BENCH_RUNS=5 by default; about a minute)
 * The machine is shared: the medians are recorded, and the fastest runs beside them (what the code
 * does when nothing else runs).
 * Targets: a run under 10 s; --jobs 4 in less than half the time of --jobs 1.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { ROOT, percentile, writeResult } from './lib.js';
import { must } from '../src/must.js';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 5));
const TESTS = 20;
const BIN = path.join(ROOT, 'bin/appreg.js');

/** The example app's folder copied, with a suite of TESTS tests made of the example's. */
function prepare(): string {
  const dir = fs.mkdtempSync(path.join(ROOT, 'bench/.tmp', 'app-test-'));
  fs.cpSync(path.join(ROOT, 'examples/standup-app'), dir, {
    recursive: true,
    filter: (src) => !/(^|\/)(\.env|tokens\.json|[^/]*\.apptest\.[a-z]+)$/.test(src),
  });
  const example = parse(fs.readFileSync(path.join(ROOT, 'examples/standup-app/standup.apptest.yaml'), 'utf8')) as {
    tests: Array<{ name: string }>;
  };
  const tests = Array.from({ length: TESTS }, (_x, i) => ({
    ...must(example.tests[i % example.tests.length]),
    name: `${must(example.tests[i % example.tests.length]).name} (${i + 1})`,
  }));
  fs.writeFileSync(
    path.join(dir, 'bench.apptest.json'),
    JSON.stringify({ ...example, name: 'Standup ×20', tests }, null, 2),
  );
  return dir;
}

interface Once {
  wallMs: number;
  runMs: number;
  passed: number;
  failed: number;
}

function once(dir: string, jobs: number): Once {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--', BIN, 'test', dir, '--reporter', 'json', '--jobs', String(jobs)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
  const wallMs = performance.now() - t0;
  const out = JSON.parse(r.stdout.toString('utf8')) as {
    durationMs: number;
    counts: { passed: number; failed: number };
  };
  if (r.status !== 0)
    throw new Error(
      `appreg test --jobs ${jobs} exited ${r.status}: ${r.stderr}\n${JSON.stringify(out).slice(0, 2000)}`,
    );
  return { wallMs, runMs: out.durationMs, passed: out.counts.passed, failed: out.counts.failed };
}

function main(): void {
  fs.mkdirSync(path.join(ROOT, 'bench/.tmp'), { recursive: true });
  const dir = prepare();
  try {
    once(dir, 4); // warm the file system cache; not counted
    const runs: Record<string, Once[]> = { 'jobs 1': [], 'jobs 4': [] };
    for (let i = 0; i < RUNS; i++) {
      must(runs['jobs 1']).push(once(dir, 1));
      must(runs['jobs 4']).push(once(dir, 4));
    }
    const round = (x: number) => Math.round(x);
    const median = (l: number[]) =>
      percentile(
        [...l].sort((a, b) => a - b),
        50,
      );
    const stats = Object.fromEntries(
      Object.entries(runs).map(([k, l]) => [
        k,
        {
          wallMs: l.map((x) => round(x.wallMs)),
          medianWallMs: round(median(l.map((x) => x.wallMs))),
          fastestWallMs: round(Math.min(...l.map((x) => x.wallMs))),
          medianRunMs: round(median(l.map((x) => x.runMs))),
          passed: l.every((x) => x.passed === TESTS && x.failed === 0),
        },
      ]),
    );
    const j1 = must(stats['jobs 1']).medianWallMs;
    const j4 = must(stats['jobs 4']).medianWallMs;
    writeResult('app-test', {
      benchmark: `appreg test: a ${TESTS}-test suite against examples/standup-app, daemon and app started by the runner; wall time of the whole command, ${RUNS} interleaved runs each`,
      date: new Date().toISOString(),
      node: process.version,
      machine: `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}, load average ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} at the end`,
      targets: { wallMs: 10_000, jobs4OverJobs1: 0.5 },
      results: stats,
      jobs4OverJobs1: Math.round((j4 / j1) * 100) / 100,
      fastestJobs4OverJobs1:
        Math.round((must(stats['jobs 4']).fastestWallMs / must(stats['jobs 1']).fastestWallMs) * 100) / 100,
      runnerJobs4OverJobs1:
        Math.round((must(stats['jobs 4']).medianRunMs / must(stats['jobs 1']).medianRunMs) * 100) / 100,
      met: { under10s: Math.max(j1, j4) < 10_000, halfWithJobs4: j4 / j1 < 0.5 },
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
