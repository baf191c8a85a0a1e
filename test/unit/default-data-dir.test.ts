/**
 * Where the data lives when nothing says (src/default-data-dir.ts, docs/install.md): data/ of a clone whatever the
 * current directory, the user's data directory for an installed package, --data-dir and APPREG_DATA_DIR first.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/daemon.js';
import { ROOT } from '../helpers/cli.js';
import { defaultDataDir, isSourceCheckout, resolveDataDir } from '../../src/default-data-dir.js';
import { loadConfig } from '../../src/config.js';

/** A package root as npm installs it (no sources), or as a clone has it. */
function packageRoot(clone: boolean): string {
  const root = tempDir('appreg-root-');
  fs.mkdirSync(path.join(root, 'dist', 'src'), { recursive: true });
  if (clone) {
    fs.mkdirSync(path.join(root, 'src', 'cli'), { recursive: true });
    fs.writeFileSync(path.join(root, 'src', 'cli', 'main.ts'), '');
    fs.writeFileSync(path.join(root, 'tsconfig.json'), '{}');
  }
  return root;
}

t.test('a clone keeps its data in its own data/, an installed package in the user’s data directory', async (t) => {
  const clone = packageRoot(true);
  const installed = packageRoot(false);
  t.ok(isSourceCheckout(clone), 'a clone is told by its sources');
  t.notOk(isSourceCheckout(installed), 'an installed package ships none');
  t.ok(isSourceCheckout(ROOT), 'this repository is a clone');
  const env = { HOME: '/home/ada' };
  t.equal(defaultDataDir(env, clone), path.join(clone, 'data'));
  t.equal(defaultDataDir(env, installed), '/home/ada/.local/share/appreg');
  t.equal(defaultDataDir({ ...env, XDG_DATA_HOME: '/srv/xdg' }, installed), '/srv/xdg/appreg', 'XDG_DATA_HOME');
  t.equal(
    defaultDataDir({ ...env, XDG_DATA_HOME: 'relative/xdg' }, installed),
    '/home/ada/.local/share/appreg',
    'a relative XDG_DATA_HOME is ignored, as the XDG rules say',
  );
});

t.test('--data-dir, then APPREG_DATA_DIR, then the default; relative ones from the current directory', async (t) => {
  const cwd = '/work/somewhere';
  t.equal(resolveDataDir('d', { APPREG_DATA_DIR: '/env' }, cwd), '/work/somewhere/d', 'the flag wins');
  t.equal(resolveDataDir(undefined, { APPREG_DATA_DIR: 'e' }, cwd), '/work/somewhere/e', 'then the variable');
  t.equal(resolveDataDir(undefined, { APPREG_DATA_DIR: '' }, cwd), path.join(ROOT, 'data'), 'an empty one is unset');
  t.equal(resolveDataDir(undefined, {}, cwd), path.join(ROOT, 'data'), 'else the default: this clone’s data/');
  t.equal(loadConfig({}, {}).dataDir, path.join(ROOT, 'data'), 'serve’s configuration uses the same rule');
  t.equal(loadConfig({}, { APPREG_DATA_DIR: '/srv/appreg' }).dataDir, '/srv/appreg');
});
