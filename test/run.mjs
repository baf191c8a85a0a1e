#!/usr/bin/env node
// Test entry point (npm test): compile src and tests with tsc, run the emitted
// JavaScript (each file a process of its own, its tests written with tap), then print the
// closing line CI reads: "N passed, N failed, N skipped"; the exit code is 1 when a file failed.
//
// What the closing line counts: TESTS, not assertions. A test is a t.test() block
// that holds no t.test() block of its own (a leaf), or a test file that has no
// t.test() block at all. A test fails when one of its assertions fails or it ends
// badly (throws, times out, its process dies). A failure outside every leaf (an
// assertion of a group block itself, a test file that crashes after its tests
// passed) counts as one more failed test, so no failure is ever hidden. A test
// marked SKIP or TODO counts as skipped; the reason of each skip, and the name of each
// failed test, is printed just before the closing line. (tap's own "# { total, pass, fail }" comment counts
// assertions instead, about nine per test in this suite.)
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { Parser } from 'tap-parser';
import { killFileProcesses } from './file-processes.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// APPREG_TEST_BUILT=1: the tree is compiled and set up already (a test of this runner runs it on a fixture).
const built = process.env.APPREG_TEST_BUILT === '1';
const tsc = built
  ? { status: 0 }
  : spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  console.log(`tsc failed (exit ${tsc.status ?? tsc.signal}): no test ran`);
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(tsc.status ?? 1);
}
// The rest of the clone's set-up (tap's plugin set, the linter's workspace), each step only when out of date.
const setup = built
  ? { status: 0 }
  : spawnSync(process.execPath, [path.join(root, 'tools/dev-setup.mjs'), '--no-tsc'], { cwd: root, stdio: 'inherit' });
if (setup.status !== 0) {
  console.log(`the development set-up failed (exit ${setup.status ?? setup.signal}): no test ran`);
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(setup.status ?? 1);
}
// The compiled tests live in dist/: list them here.
function testFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(p) : e.name.endsWith('.test.js') ? [path.relative(root, p)] : [];
  });
}
const given = process.argv.slice(2);
// only tests whose TypeScript source still exists (a deleted test may linger in dist/)
const hasSource = (f) => fs.existsSync(path.join(root, f.replace(/^dist[\\/]/, '').replace(/\.js$/, '.ts')));
const files = given.length ? given : testFiles(path.join(root, 'dist/test')).filter(hasSource).sort();

/** Counts tests (see the top of this file) from the run's TAP stream. */
function testCounter() {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const skips = [];
  const failures = [];
  const parser = new Parser();
  // One node per test file or t.test() block; `path` is its names from the file down.
  const watch = (p, node) => {
    let pendingChild = null; // a block whose result line is the next assert of p
    p.on('child', (c) => {
      pendingChild = { path: [...node.path, c.name], subtests: 0, failures: 0 };
      watch(c, pendingChild);
    });
    p.on('assert', (r) => {
      const child = pendingChild;
      pendingChild = null;
      const skipped = Boolean(r.skip || r.todo);
      if (!child) {
        // an assertion, or a block tap reports on one line (a skipped t.test() has no body)
        if (skipped) {
          counts.skipped++;
          skips.push([...node.path, r.name].join(' › ') + (typeof r.skip === 'string' && r.skip ? `: ${r.skip}` : ''));
        }
        return;
      }
      node.subtests++;
      if (child.subtests === 0) {
        if (skipped) {
          counts.skipped++;
          skips.push(child.path.join(' › ') + (typeof r.skip === 'string' && r.skip ? `: ${r.skip}` : ''));
        } else if (r.ok) counts.passed++;
        else {
          counts.failed++;
          child.failures++;
          failures.push(child.path.join(' › '));
        }
      } else if (!r.ok && !skipped && child.failures === 0) {
        counts.failed++; // the block failed outside all of its tests
        child.failures++;
        failures.push(`${child.path.join(' › ')} (outside its tests)`);
      }
      node.failures += child.failures;
    });
  };
  watch(parser, { path: [], subtests: 0, failures: 0 });
  return { parser, counts, skips, failures };
}

// The store matrix: the API, OAuth, delivery and socket test files run a second time with every
// daemon on PostgreSQL (test/helpers/daemon.ts gives each a fresh database of a throwaway cluster
// that test/helpers/pg.ts starts). Files about the embedded store's own files are left out; files about
// PostgreSQL itself (its outage) run in that pass only.
const MATRIX_DIRS = ['api', 'oauth', 'delivery', 'socket'];
const EMBEDDED_ONLY = new Set(['storage-start.test.js', 'hardening.test.js', 'socket-restart.test.js', 'resent-marked.test.js']);
// Files that choose their store themselves (a memory store, a PostgreSQL database of their own through testWithPg, or
// `appreg serve` processes on the embedded store) or none: a second run would repeat the first. A matrix run that made
// no PostgreSQL database says so (below), so a file that belongs here is found.
const OWN_STORE = new Set([
  'shared-state.test.js',
  'http-answers.test.js',
  'http-connections.test.js',
  'multi-daemon.test.js',
  'multi-worker.test.js',
  'redirect-urls.test.js',
  'sessions-transport.test.js',
  'socket-ack.test.js',
  'socket-deadlines.test.js',
  'socket-queue.test.js',
  'socket-takeover.test.js',
  'socket-writes.test.js',
]);
const POSTGRES_ONLY = new Set(['outbox-outage.test.js']);
const postgresOnly = (f) => POSTGRES_ONLY.has(f.split(/[\\/]/).at(-1));
const inMatrix = (f) => {
  const parts = f.split(/[\\/]/);
  const name = parts.at(-1);
  return parts[0] === 'dist' && parts[1] === 'test' && MATRIX_DIRS.includes(parts[2]) && !EMBEDDED_ONLY.has(name) && !OWN_STORE.has(name);
};
/** PostgreSQL's server binaries, where test/helpers/pg.ts looks for them. */
function hasPostgres() {
  const onPath = (process.env.PATH ?? '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, 'initdb')));
  const debian = fs.existsSync('/usr/lib/postgresql') && fs.readdirSync('/usr/lib/postgresql').some((v) => fs.existsSync(path.join('/usr/lib/postgresql', v, 'bin/initdb')));
  return onPath || debian || Boolean(process.env.APPREG_TEST_PG_URL);
}

// Files run this many at once: about twice the cores, as a file waits for its daemons, browser and
// database part of the time; APPREG_TEST_JOBS overrides it.
const CORES = os.cpus().length;
const JOBS = Number(process.env.APPREG_TEST_JOBS) || Math.max(2, CORES * 2);

// Longest first: each run's time in the last `npm test` (dist/.test-times.json: wall milliseconds and
// CPU seconds per run) orders this one, so the slow files do not start last and leave the other jobs
// idle at the end (one not timed yet goes first). APPREG_TEST_TIMES names another file.
const TIMES_FILE = process.env.APPREG_TEST_TIMES || path.join(root, 'dist', '.test-times.json');
let lastTimes = {};
try {
  lastTimes = JSON.parse(fs.readFileSync(TIMES_FILE, 'utf8'));
} catch {
  /* a first run */
}
/** A run's wall time in the last run, in ms (the file held plain numbers before it held CPU too). */
const lastMs = (name) => (typeof lastTimes[name] === 'number' ? lastTimes[name] : lastTimes[name]?.ms);

/**
 * Each file's time limit follows what it needs and what the machine gives: LIMIT_S (150 s), or three
 * times its wall time in the last run when that is more; and the limit's clock runs at the pace the
 * machine allows: while the load average is above the core count, a second counts only cores/load
 * of a second (at load 8 on 2 cores a file has four times as long), so a busy machine (another
 * suite beside this one, a CI host's neighbours) slows a file down without failing it. A file that
 * reaches its limit gets SIGALRM, on which tap fails the tests still running and names them; what is
 * left of it 10 s later, and every process it started, is killed (test/file-processes.mjs).
 * APPREG_TEST_FILE_LIMIT_S sets every file's limit instead (a test of this runner gives its fixture
 * one second). tap's own timeout is off in the files (TAP_TIMEOUT=0): this limit is the only one.
 */
const LIMIT_S = 150;
const fixedLimit = Number(process.env.APPREG_TEST_FILE_LIMIT_S) || 0;
const limitMs = (name) => (fixedLimit ? fixedLimit * 1000 : Math.max(LIMIT_S * 1000, 3 * (lastMs(name) ?? 0)));
const pace = () => Math.min(1, CORES / Math.max(os.loadavg()[0], 0.01));

/**
 * The files are run here, each a plain `node <file>` (its tests print TAP through the tap library),
 * not through tap's runner: the runner loads two module loaders into every test process (tap's
 * mocking, and process info for coverage, which this suite turns off), which doubled what a test
 * process that starts a daemon cost (measured: 1.35 s of CPU against 0.67 s). Each file's TAP is
 * printed as a subtest of one stream, as tap's runner prints it, and counted from that stream.
 *
 * What each file cost in CPU seconds (its process and the child processes it waited for: its daemons,
 * apps and commands; test/file-cpu.mjs) is kept beside its wall time in dist/.test-times.json: on a
 * machine shared with other work the wall times mislead, the CPU does not.
 * APPREG_TEST_CPU=<file.json> also writes those figures, and the run cluster's PostgreSQL server's, to that file.
 */
const CPU_FILE = process.env.APPREG_TEST_CPU;
let cluster; // the run's PostgreSQL cluster (below)
const cpu = {};
const CPU_REPORTER = pathToFileURL(path.join(root, 'test/file-cpu.mjs')).href;
const cpuDir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-test-cpu-'));
/** The files running now: their process and the mark their processes carry, to stop them if this run is stopped. */
const running = new Map();
let started = 0;
function runFile(run) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const id = ++started;
    const cpuOut = path.join(cpuDir, `${id}.json`);
    const mark = `APPREG_TEST_FILE=${process.pid}.${id}`;
    const child = spawn(process.execPath, ['--enable-source-maps', '--import', CPU_REPORTER, run.file], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true, // a process group of its own, stopped as one
      env: { ...process.env, ...run.env, TAP_TIMEOUT: '0', APPREG_TEST_CPU_OUT: cpuOut, [mark.split('=')[0]]: mark.split('=')[1] },
    });
    running.set(id, { pid: child.pid, mark });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    let timedOut = false;
    let left = [];
    let idle = false; // a store matrix run that made no database on PostgreSQL
    const limit = limitMs(run.name);
    let counted = 0;
    let at = performance.now();
    const tick = setInterval(() => {
      const now = performance.now();
      counted += (now - at) * pace();
      at = now;
      if (counted < limit || timedOut) return;
      timedOut = true;
      clearInterval(tick);
      try {
        process.kill(child.pid, 'SIGALRM');
      } catch {
        /* ended meanwhile */
      }
      setTimeout(() => killFileProcesses(child.pid, mark), 10_000).unref();
    }, Math.min(1000, limit / 4));
    child.on('exit', () => {
      clearInterval(tick);
      // whatever it left running (a daemon a teardown did not reach, a timed-out file's children) is stopped now
      const killed = killFileProcesses(child.pid, mark);
      left = killed.map((k) => `${k.pid} ${k.command}`.trim());
      running.delete(id);
      // a cluster of its own (test/helpers/pg.ts) that its exit handler did not stop: stopped and removed
      if ((killed.length || timedOut) && hasPostgres()) {
        stopOrphans().catch((e) => console.log(`# could not stop its PostgreSQL cluster: ${e.message}`));
      }
    });
    child.on('close', (code, signal) => {
      try {
        const { user, sys, pg } = JSON.parse(fs.readFileSync(cpuOut, 'utf8'));
        cpu[run.name] = { cpu: +(user + sys).toFixed(2), user, sys };
        if (run.env.APPREG_TEST_STORE === 'postgres' && !pg && !postgresOnly(run.file)) idle = true;
      } catch {
        /* killed before it could say */
      }
      resolve({ ...run, out, code, signal, timedOut, left, limit, idle, ms: performance.now() - t0 });
    });
  });
}

async function stopOrphans() {
  const { stopOrphanClusters } = await import(path.join(root, 'dist/test/helpers/pg.js'));
  stopOrphanClusters();
}

/** Stops every running file and what it started (the run is interrupted, or ends badly). */
function stopAll() {
  for (const { pid, mark } of running.values()) killFileProcesses(pid, mark);
  running.clear();
}
process.on('exit', () => {
  stopAll();
  fs.rmSync(cpuDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopAll();
    console.log(`\n# stopped by ${signal}: every test file's processes were ended`);
    (cluster ? cluster.stop() : Promise.resolve()).finally(() => process.exit(130));
  });
}

/** One file's TAP as a subtest of the whole stream, numbered `n`. */
function asSubtest(r, n) {
  const body = r.out.replace(/\n$/, '').split('\n').map((l) => (l ? `    ${l}` : l)).join('\n');
  const skip = /^1\.\.0 # (.*)$/m.exec(r.out);
  const time = ` # time=${r.ms.toFixed(3)}ms`;
  const ok = r.code === 0 && !r.timedOut;
  const why = r.timedOut ? ` (timed out: limit ${Math.round(r.limit / 1000)} s at the machine's pace)` : r.signal ? ` (ended by ${r.signal})` : r.code !== 0 ? ` (exit code ${r.code})` : '';
  const result = skip && ok ? `ok ${n} - ${r.name} # SKIP ${skip[1]}` : `${ok ? 'ok' : 'not ok'} ${n} - ${r.name}${ok ? time : `${time}${why}`}`;
  const left =
    r.left.map((p) => `# left running, now killed: ${p}\n`).join('') +
    (r.idle ? '# this run made no PostgreSQL database: it repeats the first run (OWN_STORE in test/run.mjs)\n' : '');
  return `# Subtest: ${r.name}\n${body}\n${left}${result}\n`;
}

/** Runs `runs` JOBS at a time, longest first; resolves what the stream counted, and each run's time. */
async function runAll(runs) {
  const { parser, counts, skips, failures } = testCounter();
  const emit = (s) => {
    process.stdout.write(s);
    parser.write(s);
  };
  emit('TAP version 14\n');
  const queue = [...runs].sort((a, b) => (lastMs(b.name) ?? Infinity) - (lastMs(a.name) ?? Infinity));
  const times = {};
  let n = 0;
  let failed = false;
  const worker = async () => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      const r = await runFile(run);
      // a run cut at its limit did not say what it needs: its last whole run's time is kept
      if (!r.timedOut) times[r.name] = { ms: Math.round(r.ms), ...(cpu[r.name] && { cpu: cpu[r.name].cpu }) };
      if (r.code !== 0 || r.timedOut) failed = true;
      emit(asSubtest(r, ++n));
    }
  };
  await Promise.all(Array.from({ length: Math.min(JOBS, runs.length) }, worker));
  emit(`1..${n}\n`);
  parser.end();
  if (failed && counts.failed === 0) {
    counts.failed = 1; // a file failed where no test did (e.g. it could not load)
    failures.push('a test file failed where no test did');
  }
  return { code: failed ? 1 : 0, counts, skips, failures, times };
}

// One PostgreSQL cluster for the whole run (test/helpers/pg.ts): the test files make their databases
// in it (APPREG_TEST_PG_SHARED) instead of each starting a cluster of its own. Not when
// APPREG_TEST_PG_URL names one already, nor without the server binaries (the tests say what is missing).
const env = {};
if (!process.env.APPREG_TEST_PG_URL && !process.env.APPREG_TEST_PG_SHARED && hasPostgres()) {
  const { startRunCluster } = await import(path.join(root, 'dist/test/helpers/pg.js'));
  cluster = await startRunCluster();
  env.APPREG_TEST_PG_SHARED = cluster.url('postgres');
  if (cluster.template) env.APPREG_TEST_PG_TEMPLATE = cluster.template; // the store matrix's daemons start on copies

}
// Every file once, and the store matrix's again with every daemon on PostgreSQL, in the same
// stream (a long PostgreSQL file starts early instead of in a second pass after the first).
const runs = files.filter((f) => !postgresOnly(f)).map((file) => ({ file, name: file, env }));
const matrix = files.filter(inMatrix);
const skipped = [];
if (process.env.APPREG_TEST_MATRIX === '0' || matrix.length === 0) {
  // asked for, or nothing of the matrix among the files given
} else if (!hasPostgres() && process.env.CI !== 'true') {
  skipped.push('store matrix on PostgreSQL: no PostgreSQL server binaries (initdb) found; install Debian\'s postgresql to run it');
} else {
  console.log(`# store matrix: ${matrix.length} test files again on PostgreSQL`);
  for (const file of matrix) runs.push({ file, name: `[postgres] ${file}`, env: { ...env, APPREG_TEST_STORE: 'postgres' } });
}
const result = await runAll(runs);
/** CPU seconds of the cluster's server and the backends it reaped (/proc stat, in ticks of 1/100 s). */
function clusterCpu(port) {
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmdline;
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone
    }
    if (!cmdline[0]?.endsWith('/postgres') || cmdline.join(' ').indexOf(`-p ${port} `) < 0) continue;
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return +([11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0) / 100).toFixed(2);
  }
  return undefined;
}
if (CPU_FILE) {
  if (cluster) cpu['postgres server'] = { cpu: clusterCpu(new URL(cluster.url('postgres')).port) };
  fs.writeFileSync(CPU_FILE, JSON.stringify(cpu, null, 1) + '\n');
}
await cluster?.stop();
fs.writeFileSync(TIMES_FILE, JSON.stringify({ ...lastTimes, ...result.times }, null, 1) + '\n');
const total = { passed: result.counts.passed, failed: result.counts.failed, skipped: result.counts.skipped + skipped.length };
for (const s of [...result.skips, ...skipped]) console.log(`skipped: ${s}`);
// the failed tests by name, last, where a reader of only the end of a long log finds them
for (const f of result.failures) console.log(`failed: ${f}`);
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(result.code);
