import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { must } from '../../src/must.js';

t.test('appreg CLI against a running daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const work = tempDir('appreg-cli-');
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const file = path.join(work, 'manifest.json');
  fs.writeFileSync(file, JSON.stringify(manifest()));
  const g = ['--url', d.url, '--token', d.token];

  let appId = '';
  t.test('apps create prints id and secrets and writes a 0600 env file', async (t) => {
    const env = path.join(work, '.env');
    const r = await runMain([...g, 'apps', 'create', '--file', file, '--env-file', env, '--json']);
    t.equal(r.code, 0, r.stderr);
    const app = JSON.parse(r.stdout);
    appId = app.id;
    t.match(app, { id: /^app_/, clientSecret: /^acs_/, appKey: /^apk_/, signingSecret: /^ass_/ });
    const text = fs.readFileSync(env, 'utf8');
    t.match(text, new RegExp(`^PUMBLE_APP_ID=${app.id}$`, 'm'));
    t.match(text, new RegExp(`^PUMBLE_APP_KEY=${app.appKey}$`, 'm'));
    t.match(text, new RegExp(`^PUMBLE_APP_CLIENT_SECRET=${app.clientSecret}$`, 'm'));
    t.match(text, new RegExp(`^PUMBLE_APP_SIGNING_SECRET=${app.signingSecret}$`, 'm'));
    t.equal(fs.statSync(env).mode & 0o777, 0o600);
  });

  t.test('--env-file keeps the other lines of an existing .env and replaces only the PUMBLE_APP_* ones', async (t) => {
    const env = path.join(work, 'merge.env');
    fs.writeFileSync(
      env,
      '# my app\nPORT=5000\nPUMBLE_APP_ID=app_old\nexport PUMBLE_APP_KEY=apk_old\nDATABASE_URL=postgres://localhost/x\n',
      { mode: 0o644 },
    );
    const r = await runMain([...g, 'apps', 'create', '--file', file, '--env-file', env, '--json']);
    t.equal(r.code, 0, r.stderr);
    const app = JSON.parse(r.stdout);
    const lines = fs.readFileSync(env, 'utf8').trimEnd().split('\n');
    t.same(
      lines,
      [
        '# my app',
        'PORT=5000',
        `PUMBLE_APP_ID=${app.id}`,
        `PUMBLE_APP_KEY=${app.appKey}`,
        'DATABASE_URL=postgres://localhost/x',
        `PUMBLE_APP_CLIENT_SECRET=${app.clientSecret}`,
        `PUMBLE_APP_SIGNING_SECRET=${app.signingSecret}`,
        `PUMBLE_API_URL=${d.url}`,
        `PUMBLE_CONSENT_SCREEN_URL=${d.url}/access-request`,
        `PUMBLE_FILEUPLOAD_URL=${d.url}`,
        'PUMBLE_ADDON_PORT=9',
        'ADDON_HOST=http://localhost:9',
        'PUMBLE_ADDON_MANIFEST_PATH=manifest.json',
      ],
      "other lines and their order kept, the four and the daemon's URLs set once each, where the app is added",
    );
    t.equal(fs.statSync(env).mode & 0o777, 0o600, 'tightened to 0600');
    const rot = await runMain([...g, 'apps', 'rotate-secrets', app.id, '--env-file', env, '--json']);
    t.equal(rot.code, 0, rot.stderr);
    const s = JSON.parse(rot.stdout);
    const after = fs.readFileSync(env, 'utf8');
    t.match(after, new RegExp(`^PUMBLE_APP_SIGNING_SECRET=${s.signingSecret}$`, 'm'));
    t.equal(must(after.match(/PUMBLE_APP_SIGNING_SECRET=/g)).length, 1);
    t.match(after, /^PORT=5000$/m);
  });

  t.test('an env file that cannot be written: the new secrets are still printed, exit 2', async (t) => {
    const r = await runMain([
      ...g,
      'apps',
      'create',
      '--file',
      file,
      '--env-file',
      path.join(work, 'no-such-dir', '.env'),
      '--json',
    ]);
    t.equal(r.code, 2);
    const app = JSON.parse(r.stdout);
    t.match(app, { id: /^app_/, clientSecret: /^acs_/ }, 'the secrets are not lost');
    t.match(r.stderr, /was created \(secrets above\), but cannot write/);
  });

  t.test('human output has no colour when not on a terminal', async (t) => {
    const r = await runMain([...g, 'apps', 'list']);
    t.equal(r.code, 0);
    t.match(r.stdout, appId);
    t.notMatch(r.stdout, /\u001b\[/, 'no ANSI escapes');
  });

  t.test('apps get hides secrets unless --show-secrets', async (t) => {
    const plain = JSON.parse((await runMain([...g, 'apps', 'get', appId, '--json'])).stdout);
    t.notOk('appKey' in plain);
    const shown = JSON.parse((await runMain([...g, 'apps', 'get', appId, '--show-secrets', '--json'])).stdout);
    t.match(shown.appKey, /^apk_/);
  });

  t.test('apps update, rotate-secrets, delete', async (t) => {
    fs.writeFileSync(file, JSON.stringify(manifest({ displayName: 'Updated' })));
    const u = await runMain([...g, 'apps', 'update', appId, '--file', file, '--json']);
    t.equal(u.code, 0, u.stderr);
    t.equal(JSON.parse(u.stdout).displayName, 'Updated');
    const before = JSON.parse((await runMain([...g, 'apps', 'get', appId, '--show-secrets', '--json'])).stdout);
    const r = await runMain([...g, 'apps', 'rotate-secrets', appId, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.not(JSON.parse(r.stdout).appKey, before.appKey);
    const del = await runMain([...g, 'apps', 'delete', appId]);
    t.equal(del.code, 0, del.stderr);
    const gone = await runMain([...g, 'apps', 'get', appId]);
    t.equal(gone.code, 4, 'rejected by the daemon → exit 4');
    t.match(gone.stderr, new RegExp(`^appreg: App ${appId} not found\\. \\(not_found\\)\n$`));
  });

  t.test('a broad redirect URL (path /) is accepted with a warning on stderr', async (t) => {
    const broad = path.join(work, 'broad.json');
    fs.writeFileSync(broad, JSON.stringify(manifest({ redirectUrls: ['https://app.example.com/'] })));
    const r = await runMain([...g, 'apps', 'create', '--file', broad, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /warning: \/redirectUrls\/0: .*every page/);
    t.equal(JSON.parse(r.stdout).redirectUrls[0], 'https://app.example.com/', 'stdout stays pure JSON');
    const u = await runMain([...g, 'apps', 'update', JSON.parse(r.stdout).id, '--file', broad]);
    t.match(u.stderr, /warning: \/redirectUrls\/0/);
  });

  t.test('an invalid manifest is rejected with every pointer, exit 4 (7 offline)', async (t) => {
    const bad = path.join(work, 'bad.json');
    fs.writeFileSync(
      bad,
      JSON.stringify(manifest({ slashCommands: [{ command: 'nope', url: 'http://127.0.0.1:9/x' }], nmae: 'typo' })),
    );
    const r = await runMain([...g, 'apps', 'create', '--file', bad]);
    t.equal(r.code, 4);
    t.match(r.stderr, /\/slashCommands\/0\/command/);
    t.match(r.stderr, /\/nmae/);
    const v = await runMain(['apps', 'validate', '--file', bad]);
    t.equal(v.code, 7, "offline validate: exit 7, invalid input (4 is for the daemon's refusals)");
    t.match(v.stderr, /\/slashCommands\/0\/command/);
    const ok = await runMain(['apps', 'validate', '--file', file]);
    t.equal(ok.code, 0, ok.stderr);
  });

  t.test('usage errors exit 2, unreachable daemon exits 3, unreadable file exits 2', async (t) => {
    t.equal((await runMain(['apps', 'frobnicate'])).code, 2);
    t.equal((await runMain([...g, 'apps', 'create', '--file', path.join(work, 'missing.json')])).code, 2);
    const r = await runMain(['--url', 'http://127.0.0.1:9', '--token', d.token, 'apps', 'list']);
    t.equal(r.code, 3);
    t.match(r.stderr, /cannot reach the daemon/);
    const none = await runMain(['--data-dir', work, 'apps', 'list']);
    t.equal(none.code, 3);
    t.match(none.stderr, /appreg serve/);
  });

  t.test('--json failures are a JSON object on stdout too: {error: {code, message, details?}, exitCode}', async (t) => {
    const rejected = await runMain([...g, 'apps', 'get', 'app_missing', '--json']);
    t.equal(rejected.code, 4);
    t.match(
      JSON.parse(rejected.stdout),
      { error: { code: 'not_found', message: String }, exitCode: 4 },
      "the daemon's own code",
    );
    t.match(rejected.stderr, /^appreg: /, 'and the one line on stderr as before');
    const bad = path.join(work, 'bad-manifest.json');
    fs.writeFileSync(bad, JSON.stringify(manifest({ name: undefined })));
    const invalid = await runMain([...g, 'apps', 'create', '--file', bad, '--json']);
    t.equal(invalid.code, 4);
    t.match(JSON.parse(invalid.stdout), {
      error: { code: 'invalid_manifest', details: [{ pointer: '/name' }] },
      exitCode: 4,
    });
    const unreachable = await runMain(['--url', 'http://127.0.0.1:9', '--token', d.token, 'apps', 'list', '--json']);
    t.match(JSON.parse(unreachable.stdout), { error: { code: 'daemon_unreachable' }, exitCode: 3 });
    const usage = await runMain(['apps', 'frobnicate', '--json']);
    t.match(JSON.parse(usage.stdout), { error: { code: 'usage_error', message: /unknown command/ }, exitCode: 2 });
    const human = await runMain([...g, 'apps', 'get', 'app_missing']);
    t.equal(human.stdout, '', 'without --json stdout stays empty on failure');
  });

  t.test('--help shows examples', async (t) => {
    for (const args of [['--help'], ['apps', 'create', '--help'], ['serve', '--help'], ['login', '--help']]) {
      const r = await runMain(args);
      t.equal(r.code, 0);
      t.match(r.stdout, /Example/, `${args.join(' ')} has examples`);
    }
  });

  t.test('users create, login, whoami, logout', async (t) => {
    const cfg = tempDir('appreg-cfg-');
    t.teardown(() => fs.rmSync(cfg, { recursive: true, force: true }));
    const env = { APPREG_CONFIG_DIR: cfg };
    const u = await runMain([
      ...g,
      'users',
      'create',
      '--workspace',
      d.workspaceId,
      '--email',
      'cli@example.com',
      '--name',
      'Cli',
      '--json',
    ]);
    t.equal(u.code, 0, u.stderr);
    const user = JSON.parse(u.stdout);
    t.match(user.password, /^[A-Za-z0-9_-]{20}$/, 'generated password shown once');
    const bad = await runMain(['--url', d.url, 'login', '--email', 'cli@example.com', '--password', 'wrong-password'], {
      env,
    });
    t.equal(bad.code, 4);
    const li = await runMain(['--url', d.url, 'login', '--email', 'cli@example.com', '--password-stdin'], {
      env,
      input: user.password + '\n',
    });
    t.equal(li.code, 0, li.stderr);
    const credFile = path.join(cfg, 'credentials.json');
    t.equal(fs.statSync(credFile).mode & 0o777, 0o600, 'stored token file is 0600');
    const who = await runMain(['--url', d.url, 'whoami', '--json'], { env });
    t.equal(JSON.parse(who.stdout).workspaceUserId, user.id);
    const out = await runMain(['--url', d.url, 'logout'], { env });
    t.equal(out.code, 0, out.stderr);
    const after = await runMain(['--url', d.url, 'whoami'], { env: { ...env, APPREG_DATA_DIR: work } });
    t.not(after.code, 0, 'no longer logged in');
  });

  t.test('workspaces create and list', async (t) => {
    const c = await runMain([...g, 'workspaces', 'create', 'Second WS', '--json']);
    t.equal(c.code, 0, c.stderr);
    const ws = JSON.parse(c.stdout);
    const l = await runMain([...g, 'workspaces', 'list', '--json']);
    t.ok(JSON.parse(l.stdout).some((w: { id: string }) => w.id === ws.id));
    // the same person added to a second workspace keeps their login: a given password is not used, and the CLI says so
    const first = JSON.parse(
      (
        await runMain([
          ...g,
          'users',
          'create',
          '--workspace',
          d.workspaceId,
          '--email',
          'two@example.com',
          '--name',
          'Two',
          '--json',
        ])
      ).stdout,
    );
    t.notOk(first.existingAccount);
    const again = await runMain([
      ...g,
      'users',
      'create',
      '--workspace',
      ws.id,
      '--email',
      'two@example.com',
      '--name',
      'Two',
      '--password',
      'another-password',
    ]);
    t.equal(again.code, 0, again.stderr);
    t.match(again.stdout, /existing login kept \(the --password given was not used\)/);
    const login = await d.api('/auth/login', {
      method: 'POST',
      noAuth: true,
      json: { email: 'two@example.com', password: first.password, workspaceId: d.workspaceId },
    });
    t.equal(login.status, 200, 'the original password still logs in');
  });
});
