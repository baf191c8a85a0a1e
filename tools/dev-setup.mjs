#!/usr/bin/env node
// Development set-up of a clone, run by `npm start`, `npm run build` and `npm test` (test/run.mjs), never by an
// install: the package appreg ships has its compiled code in it (built by "prepack", tools/build-package.mjs) and
// no install script at all, so a project that installs it runs nothing of ours, and npm's refusal of dependencies'
// install scripts changes nothing for it.
//
// The steps, each skipped when what it made is still current:
//   1. tsc: src, tests and benches into dist/ (always; TypeScript 7 takes a few seconds);
//   2. tap build: tap's plugin set as package.json's "tap.plugin" lists it (a smaller set starts each test
//      process faster); redone when that list or tap's version changes;
//   3. the linter's own workspace, tools/lint (TypeScript 6 for typescript-eslint): `npm ci` there, redone when
//      its lockfile changes.
// `--no-tsc` leaves step 1 to the caller (test/run.mjs compiles itself and reports a failure in its own words).
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const marks = path.join(root, 'node_modules', '.cache', 'appreg-dev-setup');
const sha = (text) => crypto.createHash('sha256').update(text).digest('hex');

/** Runs `args` with this node; exits with its code when it fails. */
function step(name, args) {
  const r = spawnSync(args[0], args.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    console.error(`dev set-up: ${name} failed (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`})`);
    process.exit(r.status || 1);
  }
}

/** Runs `name` unless its output is there (`present`) and its mark says it was made from this very `key`. */
function once(name, key, present, run) {
  const file = path.join(marks, `${name}.sha256`);
  const want = sha(key);
  if (present && fs.existsSync(file) && fs.readFileSync(file, 'utf8') === want) return;
  run();
  fs.mkdirSync(marks, { recursive: true });
  fs.writeFileSync(file, want);
}

if (!fs.existsSync(path.join(root, 'node_modules', 'typescript'))) {
  console.error('dev set-up: node_modules is missing: run npm ci first');
  process.exit(2);
}

if (!process.argv.includes('--no-tsc')) {
  step('tsc', [process.execPath, path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json']);
}

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const tapVersion = JSON.parse(fs.readFileSync(path.join(root, 'node_modules/tap/package.json'), 'utf8')).version;
once('tap-build', JSON.stringify([tapVersion, pkg.tap?.plugin ?? []]), true, () =>
  step('tap build', [process.execPath, path.join(root, 'node_modules/tap/dist/esm/run.mjs'), 'build']),
);

const lintLock = fs.readFileSync(path.join(root, 'tools/lint/package-lock.json'), 'utf8');
const lintInstalled = fs.existsSync(path.join(root, 'tools/lint/node_modules/.bin/eslint'));
once('lint-install', lintLock, lintInstalled, () =>
  step('npm ci in tools/lint', [...npm(), 'ci', '--prefix', 'tools/lint', '--no-audit', '--no-fund']),
);

/** The npm that runs this script (npm_execpath) with this node, else `npm` from the PATH. */
function npm() {
  const cli = process.env.npm_execpath;
  return cli && cli.endsWith('.js') ? [process.execPath, cli] : ['npm'];
}
