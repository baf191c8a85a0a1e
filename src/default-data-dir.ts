/**
 * Where the data lives when nothing says: the one rule `appreg serve` and every CLI command share, so that
 * the CLI finds the daemon it started from whatever directory it runs in.
 *
 * 1. `--data-dir`, else `APPREG_DATA_DIR` (the callers check those first);
 * 2. appreg run from a source checkout (its TypeScript sources beside the compiled code, as in a clone):
 *    `data/` of that checkout, as the clone's quickstart has always used;
 * 3. an installed package (`npm install -g appreg`, or a project's node_modules): the user's data
 *    directory, `$XDG_DATA_HOME/appreg`, else `~/.local/share/appreg`.
 *
 * A system service names its own (`APPREG_DATA_DIR=/var/lib/appreg` in docs/operations.md's unit).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root: this module runs as <root>/dist/src/data-dir.js. */
const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Whether `root` is a source checkout of appreg (a clone), not an installed package, which ships no sources. */
export function isSourceCheckout(root: string = PACKAGE_ROOT): boolean {
  return fs.existsSync(path.join(root, 'src', 'cli', 'main.ts')) && fs.existsSync(path.join(root, 'tsconfig.json'));
}

/** The default data directory (rules 2 and 3 above), absolute. */
export function defaultDataDir(env: NodeJS.ProcessEnv, root: string = PACKAGE_ROOT): string {
  if (isSourceCheckout(root)) return path.join(root, 'data');
  const home = env.HOME || os.homedir();
  const base =
    env.XDG_DATA_HOME && path.isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : path.join(home, '.local', 'share');
  return path.join(base, 'appreg');
}

/** `--data-dir`, else APPREG_DATA_DIR, else the default; relative ones from `cwd`. */
export function resolveDataDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  const given = flag ?? (env.APPREG_DATA_DIR || undefined);
  return given === undefined ? defaultDataDir(env) : path.resolve(cwd, given);
}
