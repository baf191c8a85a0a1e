/**
 * An operator's install (docs/install.md): `npm install -g` of the package into a prefix of the test's, `appreg` on
 * that PATH, `appreg serve` with no --data-dir keeping its data in the user's data directory (not the directory it was
 * started from), and the CLI run from another directory finding that daemon.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/daemon.js';
import { packWorkingTree, serveCommand, sh, userEnv } from '../helpers/packed.js';

t.setTimeout(600_000);
const packed = await packWorkingTree();

t.test("appreg on the PATH, data in the user's data directory, found from any directory", async (t) => {
  const prefix = tempDir('appreg-global-');
  const home = tempDir('appreg-home-');
  const env0 = userEnv({ home });
  const install = await sh(`npm install -g --prefix ${prefix} ${JSON.stringify(packed.tarball)}`, home, env0);
  t.equal(install.code, 0, `npm install -g: ${install.stderr.slice(-500)}`);
  t.comment(`npm install -g <tarball> took ${install.ms} ms`);
  const env = { ...env0, PATH: `${path.join(prefix, 'bin')}${path.delimiter}${env0.PATH ?? ''}` };
  const which = await sh('command -v appreg', home, env);
  t.equal(which.stdout.trim(), path.join(prefix, 'bin', 'appreg'), 'appreg is on the PATH');
  t.equal((await sh('appreg --version', home, env)).stdout.trim(), packed.manifest.version, 'appreg --version');

  const somewhere = tempDir('appreg-cwd-');
  const served = await serveCommand('appreg serve --port 0 --json', somewhere, env, (f) => t.teardown(f));
  const dataDir = path.join(home, '.local', 'share', 'appreg');
  t.ok(fs.existsSync(path.join(dataDir, 'daemon.json')), `with no --data-dir its data is in ${dataDir}`);
  t.same(fs.readdirSync(somewhere), [], 'and nothing in the directory it was started from');
  const elsewhere = tempDir('appreg-cwd-');
  const list = await sh('appreg apps list --json', elsewhere, env);
  t.equal(list.code, 0, `the CLI run from another directory finds the daemon: ${list.stderr}`);
  t.same(JSON.parse(list.stdout), [], 'and lists its apps (none yet)');
  const xdg = await sh('appreg apps list --json', elsewhere, { ...env, XDG_DATA_HOME: path.join(home, 'other') });
  t.equal(xdg.code, 3, 'XDG_DATA_HOME moves the default: there is no daemon there');
  t.match(xdg.stderr, new RegExp(`${path.join(home, 'other', 'appreg')}`), 'and the message says where it looked');
  const stopped = await served.stop();
  t.equal(stopped.code, 0, 'stopped by SIGTERM, exit 0');
});
