/**
 * appreg as people install it: the working tree packed by `npm pack` (its prepack build included) in a copy of
 * its own, and the commands a user runs where that package is installed — child processes only, with the
 * environment of a person's shell, never this repository's node_modules or dist/.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { ROOT } from './cli.js';
import { tempDir } from './daemon.js';
import { until } from './until.js';
import { parse as parseJunit } from 'junit2json';
import { must } from '../../src/must.js';
import { alive } from '../../src/server/data-dir.js';

export interface Packed {
  tarball: string;
  /** Paths inside the package, without the leading "package/". */
  files: string[];
  /** The tarball's bytes, and the files' bytes unpacked. */
  size: number;
  unpackedSize: number;
  /** package.json as packed. */
  manifest: { version: string; scripts?: Record<string, string>; [k: string]: unknown };
}

/**
 * `npm pack` of the tree as it will be committed (tracked and new files, not the ignored ones), in a copy with this
 * clone's node_modules beside it: the pack's build writes into the copy's dist/, never into the dist/ that the other
 * test files are running from. The test files of a run share one pack of one tree: it is kept under the temporary
 * directory by a digest of the files' names and bytes, made by the first file that asks (the others wait for it).
 */
export async function packWorkingTree(): Promise<Packed> {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  const files = listed.stdout
    .split('\0')
    .filter((rel) => rel !== '' && fs.existsSync(path.join(ROOT, rel))) // deleted, not yet committed
    .sort();
  const digest = crypto.createHash('sha256');
  for (const rel of files)
    digest
      .update(rel)
      .update('\0')
      .update(fs.readFileSync(path.join(ROOT, rel)));
  const home = path.join(os.tmpdir(), `appreg-pack-${digest.digest('hex').slice(0, 16)}`);
  const done = path.join(home, 'packed.json');
  fs.mkdirSync(home, { recursive: true });
  const mine = takeLock(path.join(home, 'lock'));
  if (mine && !fs.existsSync(done)) {
    const copy = path.join(home, 'tree');
    fs.rmSync(copy, { recursive: true, force: true });
    for (const rel of files) {
      fs.mkdirSync(path.dirname(path.join(copy, rel)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, rel), path.join(copy, rel));
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
    const r = spawnSync('npm', ['pack', '--json', '--pack-destination', home], {
      cwd: copy,
      encoding: 'utf8',
      env: userEnv({}),
    });
    if (r.status !== 0) {
      fs.rmSync(path.join(home, 'lock'), { recursive: true, force: true });
      throw new Error(`npm pack failed (exit ${r.status}): ${r.stderr}`);
    }
    const [info] = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as Array<{
      filename: string;
      size: number;
      unpackedSize: number;
      files: Array<{ path: string }>;
    }>;
    const meta = must(info);
    const packed: Packed = {
      tarball: path.join(home, meta.filename),
      files: meta.files.map((f) => f.path).sort(),
      size: meta.size,
      unpackedSize: meta.unpackedSize,
      manifest: JSON.parse(fs.readFileSync(path.join(copy, 'package.json'), 'utf8')) as Packed['manifest'],
    };
    fs.rmSync(copy, { recursive: true, force: true });
    fs.writeFileSync(`${done}.tmp`, JSON.stringify(packed));
    fs.renameSync(`${done}.tmp`, done);
  }
  const ready = await until(() => fs.existsSync(done), Boolean, 120_000);
  if (!ready) throw new Error(`the pack of this tree (${home}) did not appear within 120 s`);
  return JSON.parse(fs.readFileSync(done, 'utf8')) as Packed;
}

/**
 * The pack's lock: a directory holding its maker's pid. Taken when free, or when its maker is gone (a run that was
 * stopped mid-pack); else another test file packs this very tree, and the caller waits for its result.
 */
function takeLock(dir: string): boolean {
  for (let i = 0; i < 2; i++) {
    try {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'pid'), String(process.pid));
      return true;
    } catch {
      const pid = Number(fs.existsSync(path.join(dir, 'pid')) ? fs.readFileSync(path.join(dir, 'pid'), 'utf8') : NaN);
      if (!Number.isInteger(pid) || alive(pid)) return false;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return false;
}

/**
 * A person's environment: this one without npm's and appreg's variables (npm test sets npm_*), `node` first on
 * the PATH (so npm, npx and appreg's `#!/usr/bin/env node` all run on it), HOME a directory of the test's, and npm's
 * cache the machine's own (an install takes the packages npm ci already fetched).
 */
export function userEnv(o: { node?: string; home?: string; extra?: Record<string, string> }): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(npm_|APPREG_|NODE_OPTIONS$|INIT_CWD$)/i.test(k)) continue;
    env[k] = v;
  }
  env.npm_config_cache = process.env.npm_config_cache ?? path.join(process.env.HOME ?? '/root', '.npm');
  env.npm_config_update_notifier = 'false';
  env.npm_config_fund = 'false';
  env.npm_config_audit = 'false';
  if (o.node) env.PATH = `${path.dirname(o.node)}${path.delimiter}${env.PATH ?? ''}`;
  if (o.home) {
    env.HOME = o.home;
    delete env.XDG_DATA_HOME;
    delete env.XDG_CONFIG_HOME;
  }
  return { ...env, ...o.extra };
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `bash -c command` in `cwd`, to its end (at most `timeoutMs`). */
export function sh(command: string, cwd: string, env: Record<string, string>, timeoutMs = 300_000): Promise<Ran> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

export interface Served {
  url: string;
  /** What it printed so far. */
  out(): { stdout: string; stderr: string };
  /**
   * SIGTERM to the daemon (the pid its --json names), as a service manager sends it, then the command's end (npx
   * ends with the daemon's exit code). The teardown stops whatever is left, the whole process group.
   */
  stop(): Promise<Ran>;
}

/**
 * A command that starts a daemon with `--json` (`npx appreg serve --port 0 --json …`), until its JSON says where it
 * listens; stopped by `stop()`, or by the teardown `onTeardown` is given.
 */
export async function serveCommand(
  command: string,
  cwd: string,
  env: Record<string, string>,
  onTeardown: (fn: () => Promise<unknown>) => void,
): Promise<Served> {
  const started = Date.now();
  const child = spawn('bash', ['-c', `exec ${command}`], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  let ended = false;
  const done = new Promise<Ran>((resolve) =>
    child.on('close', (code) => {
      ended = true;
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    }),
  );
  onTeardown(async () => {
    if (!ended) killGroup(child.pid, 'SIGTERM');
    return done;
  });
  // --json prints one document, indented, once the daemon listens
  await until(() => ended || /"url":\s*"[^"]+"/.test(stdout), Boolean);
  const url = /"url":\s*"([^"]+)"/.exec(stdout)?.[1];
  const pid = Number(/"pid":\s*(\d+)/.exec(stdout)?.[1]);
  if (!url || !pid)
    throw new Error(`"${command}" printed no URL (${ended ? 'it ended' : 'still running'}): ${stderr.slice(-2000)}`);
  const stop = async () => {
    if (!ended) process.kill(pid, 'SIGTERM');
    return done;
  };
  return { url, out: () => ({ stdout, stderr }), stop };
}

/** A copy of examples/<name> in a new temporary directory (outside the repository), without a developer's .env. */
export function exampleCopy(name: string): string {
  const dir = path.join(tempDir('appreg-outside-'), name);
  fs.cpSync(path.join(ROOT, 'examples', name), dir, {
    recursive: true,
    filter: (src) => !/(^|\/)(\.env|tokens\.json)$/.test(src),
  });
  return dir;
}

/** Where tools/test-nodes.mjs puts the Node binary of each LTS line appreg supports (installed or not). */
export function testNodes(): Map<number, string> {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'tools/test-nodes.mjs'), '--print'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tools/test-nodes.mjs --print failed: ${r.stderr}`);
  const lines = new Map<number, string>();
  for (const l of r.stdout.trim().split('\n')) {
    const [major, where] = l.split(' ');
    lines.set(Number(major), must(where));
  }
  return lines;
}

/** A new project that depends on nothing yet, outside the repository. */
export function newProject(name: string): string {
  const dir = path.join(tempDir('appreg-project-'), name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }, null, 2));
  return dir;
}

/** A JUnit report's counts. */
export async function junitCounts(file: string): Promise<{ tests: number; failures: number }> {
  return (await parseJunit(fs.readFileSync(file, 'utf8'))) as { tests: number; failures: number };
}
