/**
 * `--env-out`: Node 20 takes `--env-file` for itself when appreg is started through
 * it (`npx appreg … --env-file .env`), so the env file has a second name; both write the same file.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { ROOT, runMain } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { until } from '../helpers/until.js';
import { freePort } from '../../src/apptest/app-process.js';
import { must } from '../../src/must.js';

interface App {
  id: string;
  appKey: string;
  clientSecret: string;
  signingSecret: string;
}

const BEFORE = '# my app\nPORT=5000\nPUMBLE_APP_KEY=apk_old\n';
/**
 * The file an env option should leave from BEFORE: other lines kept, the four set, the daemon's URLs (what the app
 * calls), and where the app is (`host`: from its registration, else the SDK's default).
 */
const expected = (a: App, url: string, host: { origin: string; port: number }) =>
  `# my app\nPORT=5000\nPUMBLE_APP_KEY=${a.appKey}\nPUMBLE_APP_ID=${a.id}\nPUMBLE_APP_CLIENT_SECRET=${a.clientSecret}\nPUMBLE_APP_SIGNING_SECRET=${a.signingSecret}\nPUMBLE_API_URL=${url}\nPUMBLE_CONSENT_SCREEN_URL=${url}/access-request\nPUMBLE_FILEUPLOAD_URL=${url}\nPUMBLE_ADDON_PORT=${host.port}\nADDON_HOST=${host.origin}\nPUMBLE_ADDON_MANIFEST_PATH=manifest.json\n`;

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
      // created from the manifest: the app is where its redirect URL is; rotated: nothing known, the SDK's defaults
      const host =
        cmd === 'create' ? { origin: 'http://localhost:9', port: 9 } : { origin: 'http://localhost:5000', port: 5000 };
      t.equal(files[flag], expected(app, d.url, host), `${cmd} ${flag} wrote the secrets it printed`);
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

t.test('issue 33: the env file alone starts an app on the official SDK against the daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const work = tempDir('appreg-envout-sdk-');
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const fixture = path.join(ROOT, 'test/fixtures/sdk-like-app');
  for (const f of fs.readdirSync(fixture)) fs.copyFileSync(path.join(fixture, f), path.join(work, f));
  // the app's URLs on a port of this machine that is free: where it must listen
  const port = await freePort();
  const mf = path.join(work, 'appreg-manifest.json');
  fs.writeFileSync(mf, fs.readFileSync(mf, 'utf8').replaceAll('localhost:5000', `localhost:${port}`));
  const g = ['--url', d.url, '--token', d.token];
  const envFile = path.join(work, '.env');
  const r = await runMain([...g, 'apps', 'create', '--file', mf, '--env-out', envFile, '--json']);
  t.equal(r.code, 0, r.stderr);
  const app = JSON.parse(r.stdout) as App;
  const vars = Object.fromEntries(
    fs
      .readFileSync(envFile, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/=(.*)/).slice(0, 2)),
  ) as Record<string, string>;
  t.same(
    Object.keys(vars).sort(),
    [
      'ADDON_HOST',
      'PUMBLE_ADDON_MANIFEST_PATH',
      'PUMBLE_ADDON_PORT',
      'PUMBLE_API_URL',
      'PUMBLE_APP_CLIENT_SECRET',
      'PUMBLE_APP_ID',
      'PUMBLE_APP_KEY',
      'PUMBLE_APP_SIGNING_SECRET',
      'PUMBLE_CONSENT_SCREEN_URL',
      'PUMBLE_FILEUPLOAD_URL',
    ],
    'every variable the SDK reads',
  );
  t.match(vars, {
    ADDON_HOST: `http://localhost:${port}`,
    PUMBLE_ADDON_PORT: String(port),
    PUMBLE_ADDON_MANIFEST_PATH: 'appreg-manifest.json',
  });

  // the app with that environment only (no PORT): it listens where the daemon calls it, and answers signed calls
  const child = spawn(process.execPath, ['app.mjs'], {
    cwd: work,
    env: { PATH: process.env.PATH, ...vars },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  });
  t.match(
    await until(
      () => out,
      (s) => /listening at/.test(s) || child.exitCode !== null,
    ),
    `listening at ${port}`,
  );
  const served = (await (await fetch(`http://127.0.0.1:${port}/manifest`)).json()) as Record<string, unknown>;
  t.match(served, { name: 'sdk-like', redirectUrls: [`http://localhost:${port}/redirect`] }, 'its manifest, its host');
  const sent = await runMain([...g, 'deliver-test', app.id, '--kind', 'slash-command', '--json']);
  t.equal(sent.code, 0, sent.code === 0 ? 'its signed slash command acked' : `${sent.stdout}${sent.stderr}${out}`);
});

t.test("the app's port, host and manifest already in the file are kept; --from-url names the host", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const work = tempDir('appreg-envout-keep-');
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const mf = path.join(work, 'manifest.json');
  fs.writeFileSync(mf, JSON.stringify(manifest()));
  const g = ['--url', d.url, '--token', d.token];
  const kept = path.join(work, 'kept.env');
  const mine =
    'PUMBLE_ADDON_PORT=5500\nADDON_HOST=https://my-tunnel.example.com\nPUMBLE_ADDON_MANIFEST_PATH=sdk.json\n';
  fs.writeFileSync(kept, mine);
  const r = await runMain([...g, 'apps', 'create', '--file', mf, '--env-out', kept, '--json']);
  t.equal(r.code, 0, r.stderr);
  const text = fs.readFileSync(kept, 'utf8');
  t.ok(text.startsWith(mine), "the developer's choices stay as they were");
  t.equal(must(text.match(/^PUMBLE_ADDON_PORT=/gm)).length, 1, 'and are not written twice');
  t.match(text, new RegExp(`^PUMBLE_CONSENT_SCREEN_URL=${d.url}/access-request$`, 'm'));

  // a manifest outside the env file's folder: its absolute path
  const elsewhere = path.join(work, 'app');
  fs.mkdirSync(elsewhere);
  const abs = path.join(elsewhere, 'abs.env');
  t.equal((await runMain([...g, 'apps', 'create', '--file', mf, '--env-out', abs])).code, 0);
  t.match(fs.readFileSync(abs, 'utf8'), new RegExp(`^PUMBLE_ADDON_MANIFEST_PATH=${mf}$`, 'm'));

  // from the app's host: that host and its port, whatever URLs its manifest names
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  rx.on('/manifest', { json: manifest({ redirectUrls: ['https://my-tunnel.example.com/redirect'] }) });
  const host = rx.url;
  const fromUrl = path.join(work, 'from-url.env');
  const u = await runMain([...g, 'apps', 'create', '--from-url', host, '--env-out', fromUrl]);
  t.equal(u.code, 0, u.stderr);
  const port = new URL(host).port;
  t.match(fs.readFileSync(fromUrl, 'utf8'), new RegExp(`^PUMBLE_ADDON_PORT=${port}\nADDON_HOST=${host}\n`, 'm'));
});
