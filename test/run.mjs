#!/usr/bin/env node
// Test entry point (npm test): compile src and tests with tsc, run the emitted
// JavaScript under tap, then print the closing line CI reads:
// "N passed, N failed, N skipped". tap's own exit code is kept.
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
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { Parser } from 'tap-parser';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (tsc.status !== 0) {
  console.log(`tsc failed (exit ${tsc.status ?? tsc.signal}): no test ran`);
  console.log('0 passed, 1 failed, 0 skipped');
  process.exit(tsc.status ?? 1);
}
// The compiled tests live in dist/ (git-ignored, which tap's own file search skips): list them here.
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

/** Counts tests (see the top of this file) from tap's TAP output. */
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
// that test/helpers/pg.ts starts). Files about the embedded store's own files are left out.
const MATRIX_DIRS = ['api', 'oauth', 'delivery', 'socket'];
const EMBEDDED_ONLY = new Set(['storage-start.test.js', 'hardening.test.js', 'socket-restart.test.js']);
const inMatrix = (f) => {
  const parts = f.split(/[\\/]/);
  return parts[0] === 'dist' && parts[1] === 'test' && MATRIX_DIRS.includes(parts[2]) && !EMBEDDED_ONLY.has(parts.at(-1));
};
/** PostgreSQL's server binaries, where test/helpers/pg.ts looks for them. */
function hasPostgres() {
  const onPath = (process.env.PATH ?? '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, 'initdb')));
  const debian = fs.existsSync('/usr/lib/postgresql') && fs.readdirSync('/usr/lib/postgresql').some((v) => fs.existsSync(path.join('/usr/lib/postgresql', v, 'bin/initdb')));
  return onPath || debian || Boolean(process.env.APPREG_TEST_PG_URL);
}

// Files run this many at once: about twice the cores, as a file waits for its daemons, browser and
// database part of the time; APPREG_TEST_JOBS overrides it.
const JOBS = Number(process.env.APPREG_TEST_JOBS) || Math.max(2, os.cpus().length * 2);

// The store matrix's files are run through a wrapper each (dist/matrix/…): the wrapper sets
// APPREG_TEST_STORE=postgres and loads the test file, so both passes are one tap run whose files
// overlap (a long PostgreSQL file starts early), not a second run after the first.
const MATRIX_ROOT = path.join('dist', 'matrix');
function matrixWrapper(file) {
  const rel = path.relative(path.join('dist', 'test'), file);
  const wrapper = path.join(MATRIX_ROOT, rel);
  fs.mkdirSync(path.join(root, path.dirname(wrapper)), { recursive: true });
  const target = path.relative(path.dirname(path.join(root, wrapper)), path.join(root, file)).split(path.sep).join('/');
  fs.writeFileSync(path.join(root, wrapper), `// test/run.mjs: ${file} in the store matrix (every daemon on PostgreSQL)\nprocess.env.APPREG_TEST_STORE = 'postgres';\nawait import('${target.startsWith('.') ? target : './' + target}');\n`);
  return wrapper;
}
/** A test's name as the closing lines give it: a wrapper's is its test file's, marked [postgres]. */
const named = (s) => (s.startsWith(MATRIX_ROOT + path.sep) ? `[postgres] ${path.join('dist', 'test', s.slice(MATRIX_ROOT.length + 1))}` : s);

// Longest first: each file's time in the last run (dist/.test-times.json) orders this one, so the
// slow files do not start last and leave the other jobs idle at the end (a file not timed yet goes first).
const TIMES_FILE = path.join(root, 'dist', '.test-times.json');
let lastTimes = {};
try {
  lastTimes = JSON.parse(fs.readFileSync(TIMES_FILE, 'utf8'));
} catch {
  /* a first run */
}
const longestFirst = (list) => [...list].sort((a, b) => (lastTimes[b] ?? Infinity) - (lastTimes[a] ?? Infinity));

/** One tap run over `list`, its TAP stream counted; resolves tap's exit code and each file's time (ms). */
function runTap(list, env) {
  const { parser, counts, skips, failures } = testCounter();
  const times = {};
  let line = '';
  // -R tap: the raw TAP stream, whatever the terminal, so that it can be counted here.
  const args = [path.join(root, 'node_modules/tap/dist/esm/run.mjs'), '-R', 'tap', '-j', String(JOBS), ...list];
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    parser.write(chunk);
    const lines = (line + chunk).split('\n');
    line = lines.pop();
    for (const l of lines) {
      const m = /^(?:not )?ok \d+ - (\S+) # time=([\d.]+)ms/.exec(l);
      if (m) times[m[1]] = Number(m[2]);
    }
  });
  return new Promise((resolve) => {
    child.on('close', (code) => {
      parser.end();
      if (code !== 0 && counts.failed === 0) {
        counts.failed = 1; // tap failed where no test did (e.g. a file it could not load)
        failures.push(`tap exited with ${code ?? 'a signal'} where no test failed`);
      }
      resolve({ code: code ?? 1, counts, skips: skips.map(named), failures: failures.map(named), times });
    });
  });
}

// One PostgreSQL cluster for the whole run (test/helpers/pg.ts): the test files make their databases
// in it (APPREG_TEST_PG_SHARED) instead of each starting a cluster of its own. Not when
// APPREG_TEST_PG_URL names one already, nor without the server binaries (the tests say what is missing).
const env = {};
let cluster;
if (!process.env.APPREG_TEST_PG_URL && !process.env.APPREG_TEST_PG_SHARED && hasPostgres()) {
  const { startRunCluster } = await import(path.join(root, 'dist/test/helpers/pg.js'));
  cluster = await startRunCluster();
  env.APPREG_TEST_PG_SHARED = cluster.url('postgres');
}
const matrix = files.filter(inMatrix);
const skipped = [];
let wrappers = [];
fs.rmSync(path.join(root, MATRIX_ROOT), { recursive: true, force: true });
if (process.env.APPREG_TEST_MATRIX === '0' || matrix.length === 0) {
  // asked for, or nothing of the matrix among the files given
} else if (!hasPostgres() && process.env.CI !== 'true') {
  skipped.push('store matrix on PostgreSQL: no PostgreSQL server binaries (initdb) found; install Debian\'s postgresql to run it');
} else {
  console.log(`# store matrix: ${matrix.length} test files again on PostgreSQL`);
  wrappers = matrix.map(matrixWrapper);
}
const run = await runTap(longestFirst([...files, ...wrappers]), env);
await cluster?.stop();
fs.writeFileSync(TIMES_FILE, JSON.stringify({ ...lastTimes, ...run.times }, null, 1) + '\n');
const total = { passed: run.counts.passed, failed: run.counts.failed, skipped: run.counts.skipped + skipped.length };
for (const s of [...run.skips, ...skipped]) console.log(`skipped: ${s}`);
// the failed tests by name, last, where a reader of only the end of a long log finds them
for (const f of run.failures) console.log(`failed: ${f}`);
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(run.code);
