/**
 * `--env-out`: Node 20 takes `--env-file` for itself when appreg is started through
 * it (`npx appreg … --env-file .env`), so the env file has a second name; both write the same file.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { must } from '../../src/must.js';

interface App {
  id: string;
  appKey: string;
  clientSecret: string;
  signingSecret: string;
}

const BEFORE = '# my app\nPORT=5000\nPUMBLE_APP_KEY=apk_old\n';
/**
 * The file an env option should leave from BEFORE: other lines kept, the four set, and the daemon's URL (what the app
 * calls).
 */
const expected = (a: App, url: string) =>
  `# my app\nPORT=5000\nPUMBLE_APP_KEY=${a.appKey}\nPUMBLE_APP_ID=${a.id}\nPUMBLE_APP_CLIENT_SECRET=${a.clientSecret}\nPUMBLE_APP_SIGNING_SECRET=${a.signingSecret}\nPUMBLE_API_URL=${url}\n`;

t.test('--env-out and --env-file write the same file', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const work = tempDir('appreg-envout-');
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const mf = path.join(work, 'manifest.json');
  fs.writeFileSync(mf, JSON.stringify(manifest()));
  const g = ['--url', d.url, '--token', d.token];

  for (const cmd of ['create', 'rotate-secrets'] as const) {
    const files: Record<string, string> = {};
    for (const flag of ['--env-out', '--env-file']) {
      const file = path.join(work, `${cmd}${flag}.env`);
      fs.writeFileSync(file, BEFORE, { mode: 0o644 });
      let args = ['apps', 'create', '--file', mf];
      if (cmd === 'rotate-secrets')
        args = ['apps', 'rotate-secrets', JSON.parse((await runMain([...g, ...args, '--json'])).stdout).id];
      const r = await runMain([...g, ...args, flag, file, '--json']);
      t.equal(r.code, 0, `${cmd} ${flag}: ${r.stderr}`);
      const app = JSON.parse(r.stdout) as App;
      t.match(app, { id: /^app_/, appKey: /^apk_/ });
      files[flag] = fs.readFileSync(file, 'utf8');
      t.equal(files[flag], expected(app, d.url), `${cmd} ${flag} wrote the secrets it printed`);
      t.equal(fs.statSync(file).mode & 0o777, 0o600, `${cmd} ${flag}: 0600`);
    }
    const shape = (s: string) => s.replace(/=(app|apk|acs|ass)_\S+/g, '=$1_…');
    t.equal(
      shape(must(files['--env-out'])),
      shape(must(files['--env-file'])),
      `${cmd}: the same content from either flag`,
    );
  }

  t.test('human output names the file; both flags naming different files is a usage error', async (t) => {
    const file = path.join(work, 'human.env');
    const r = await runMain([...g, 'apps', 'create', '--file', mf, '--env-out', file]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, `secrets written to ${file}`);
    const same = await runMain([...g, 'apps', 'create', '--file', mf, '--env-out', file, '--env-file', file, '--json']);
    t.equal(same.code, 0, 'the same file twice is fine');
    const both = await runMain([
      ...g,
      'apps',
      'create',
      '--file',
      mf,
      '--env-out',
      file,
      '--env-file',
      path.join(work, 'other.env'),
    ]);
    t.equal(both.code, 2);
    t.match(both.stderr, /--env-out and --env-file/);
  });
});

t.test('--help of both commands offers --env-out and says why', async (t) => {
  for (const cmd of ['create', 'rotate-secrets']) {
    const h = await runMain(['apps', cmd, '--help']);
    t.equal(h.code, 0);
    t.match(h.stdout, /--env-out <path>/, `apps ${cmd}`);
    t.match(
      h.stdout.replace(/\s+/g, ' '),
      '--env-file <path> the same as --env-out (with npx on Node 20, Node takes --env-file itself: use --env-out)',
    );
    t.match(h.stdout, /\$ .*appreg apps .* --env-out \.env/, 'the example uses --env-out');
  }
});
