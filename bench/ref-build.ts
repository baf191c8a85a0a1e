/**
 * Another commit of this repository, checked out in a temporary git worktree and built there
 * (its own `npm run build`), for `npm run bench:compare`. Its node_modules are the working
 * tree's (a symlink) when its package-lock.json is byte for byte the working tree's, else
 * `npm ci` installs its own. The worktree is removed by remove(), and also when the process
 * exits any other way (an error, Ctrl-C, SIGTERM).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exitOnSignals } from './lib.js';

export interface RefBuild {
  /** The ref as given. */
  given: string;
  sha: string;
  subject: string;
  /** The worktree, built. */
  root: string;
  nodeModules: 'reused' | 'installed';
  remove(): void;
}

/** A ref that names no commit (a usage error). */
export class UnknownRef extends Error {}

function git(repo: string, args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
  return { ok: r.status === 0, out: (r.stdout + (r.status === 0 ? '' : r.stderr)).trim() };
}

/** Run a command in `cwd`, its output on our stderr; rejects unless it exits 0. */
function run(cmd: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 2, 2] });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed in ${cwd} (${code ?? signal})`)),
    );
  });
}

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Check out `ref` of the repository at `repo` in a temporary worktree and build it. */
export async function buildRef(repo: string, ref: string, log: (line: string) => void): Promise<RefBuild> {
  const resolved = git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  if (!resolved.ok || !resolved.out) throw new UnknownRef(`"${ref}" names no commit of ${repo}`);
  const sha = resolved.out;
  const subject = git(repo, ['log', '-1', '--format=%s', sha]).out;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `appreg-compare-${sha.slice(0, 7)}-`));
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.removeListener('exit', remove);
    git(repo, ['worktree', 'remove', '--force', root]);
    // whatever git left (a half-made worktree), and its record
    fs.rmSync(root, { recursive: true, force: true });
    git(repo, ['worktree', 'prune']);
  };
  exitOnSignals();
  process.on('exit', remove);
  try {
    const added = git(repo, ['worktree', 'add', '--detach', '--quiet', root, sha]);
    if (!added.ok) throw new Error(`git worktree add failed: ${added.out}`);
    const lock = (dir: string) =>
      fs.existsSync(path.join(dir, 'package-lock.json'))
        ? fs.readFileSync(path.join(dir, 'package-lock.json'))
        : undefined;
    const mine = lock(repo);
    const theirs = lock(root);
    let nodeModules: RefBuild['nodeModules'];
    if (mine && theirs && mine.equals(theirs) && fs.existsSync(path.join(repo, 'node_modules'))) {
      fs.symlinkSync(path.join(repo, 'node_modules'), path.join(root, 'node_modules'), 'dir');
      nodeModules = 'reused';
      log(`${ref} (${sha.slice(0, 7)}): same package-lock.json, the working tree's node_modules reused`);
    } else {
      log(`${ref} (${sha.slice(0, 7)}): package-lock.json differs, npm ci in ${root}`);
      await run(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], root);
      nodeModules = 'installed';
    }
    log(`${ref} (${sha.slice(0, 7)}): npm run build in ${root}`);
    await run(npm, ['run', '--silent', 'build'], root);
    if (!fs.existsSync(path.join(root, 'dist'))) throw new Error(`npm run build of ${ref} made no dist/`);
    return { given: ref, sha, subject, root, nodeModules, remove };
  } catch (e) {
    remove();
    throw e;
  }
}
