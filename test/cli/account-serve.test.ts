/**
 * Issue 10, the CLI's account and daemon-start items: whoami's names and email and what logout
 * falls back to (29), authorize of an unknown app (24), apps get's routing (27), serve's exit
 * codes for a held data dir and a taken port (24), and the daemon's log format (28).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain, serveInProcess } from '../helpers/cli.js';

t.test('against a running daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  t.test('whoami shows the name, email and workspace', async (t) => {
    const r = await runMain([...g, 'whoami']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /name\s+Owner/);
    t.match(r.stdout, /email\s+owner@appreg.test/);
    t.match(r.stdout, new RegExp(`workspace\\s+.+ \\(${d.workspaceId}\\)`));
    t.match(JSON.parse((await runMain([...g, 'whoami', '--json'])).stdout), {
      name: 'Owner',
      email: 'owner@appreg.test',
      workspaceUserId: d.workspaceUserId,
    });
  });

  t.test('logout says which credentials are used next', async (t) => {
    const cfg = tempDir('appreg-cfg-');
    const empty = tempDir('appreg-empty-');
    t.teardown(() => [cfg, empty].forEach((x) => fs.rmSync(x, { recursive: true, force: true })));
    const u = JSON.parse(
      (
        await runMain([
          ...g,
          'users',
          'create',
          '--workspace',
          d.workspaceId,
          '--email',
          'out@example.com',
          '--name',
          'Out',
          '--json',
        ])
      ).stdout,
    );
    // 1. the daemon of this data dir: the owner's credentials.json is what is left
    const local = { APPREG_CONFIG_DIR: cfg, APPREG_DATA_DIR: d.dataDir };
    t.equal((await runMain(['login', '--email', 'out@example.com', '--password', u.password], { env: local })).code, 0);
    t.match((await runMain(['whoami'], { env: local })).stdout, /email\s+out@example.com/);
    const out = await runMain(['logout'], { env: local });
    t.equal(out.code, 0, out.stderr);
    t.equal(
      out.stdout,
      `logged out of ${d.url}; now using the owner credentials of ${path.join(d.dataDir, 'credentials.json')} (owner@appreg.test, user ${d.workspaceUserId})\n`,
    );
    t.match((await runMain(['whoami'], { env: local })).stdout, /email\s+owner@appreg.test/, 'and that is true');
    // 2. another daemon's URL: nothing is left
    const remote = { APPREG_CONFIG_DIR: cfg, APPREG_DATA_DIR: empty };
    t.equal(
      (
        await runMain(['--url', d.url, 'login', '--email', 'out@example.com', '--password', u.password], {
          env: remote,
        })
      ).code,
      0,
    );
    const out2 = await runMain(['--url', d.url, 'logout', '--json'], { env: remote });
    t.same(JSON.parse(out2.stdout), { loggedOut: d.url, next: `no credentials left for ${d.url}` });
  });

  t.test('authorize of an unknown app: not found, exit 4', async (t) => {
    const r = await runMain([...g, 'authorize', 'app_nope']);
    t.equal(r.code, 4);
    t.equal(r.stderr, 'appreg: app app_nope not found\n');
    const j = await runMain([...g, 'authorize', 'app_nope', '--exchange', '--json']);
    t.match(JSON.parse(j.stdout), { error: { code: 'not_found', message: 'app app_nope not found' }, exitCode: 4 });
  });

  t.test('apps get shows URLs, slash commands, shortcuts, scopes and redirect URLs; --json unchanged', async (t) => {
    const res = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        blockInteraction: { url: 'http://127.0.0.1:9/blocks' },
        dynamicMenus: [{ url: 'http://127.0.0.1:9/menus', onAction: 'pick' }],
      }),
    });
    const app = (await res.json()) as { id: string };
    const r = await runMain([...g, 'apps', 'get', app.id]);
    t.equal(r.code, 0, r.stderr);
    for (const re of [
      /^id\s+app_/m,
      /^published\s+false/m,
      /^URLs\n\s+events\s+http:\/\/127\.0\.0\.1:9\/events\s+NEW_MESSAGE/m,
      /block interaction\s+http:\/\/127\.0\.0\.1:9\/blocks/,
      /menu pick\s+http:\/\/127\.0\.0\.1:9\/menus/,
      /^slash commands\n\s+\/test \[text\]\s+http:\/\/127\.0\.0\.1:9\/slash/m,
      /^shortcuts\n\s+do_it \(global\)\s+http:\/\/127\.0\.0\.1:9\/shortcut/m,
      /^scopes\n\s+bot:\s+messages:read, messages:write\n\s+user: messages:read/m,
      /^redirect URLs\n\s+http:\/\/localhost:9\/redirect/m,
    ])
      t.match(r.stdout, re);
    t.notMatch(r.stdout, /clientSecret|signingSecret/);
    const j = JSON.parse((await runMain([...g, 'apps', 'get', app.id, '--json'])).stdout);
    t.match(j, { id: app.id, slashCommands: [{ command: '/test' }] });
    t.notOk('clientSecret' in j);
  });

  t.test('an unreachable --from-url host: one line, exit 4, a warning without a stack in the log', async (t) => {
    const r = await runMain([...g, 'apps', 'create', '--from-url', 'http://127.0.0.1:9']);
    t.equal(r.code, 4, 'the app host failed, not the daemon');
    t.equal(r.stderr.trimEnd().split('\n').length, 1);
    t.match(r.stderr, /Could not fetch http:\/\/127\.0\.0\.1:9\/manifest: ECONNREFUSED.*manifest_unavailable/);
    const line = d
      .logs()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => /Could not fetch/.test(l.msg));
    t.match(line, { level: 'warn', code: 'manifest_unavailable' });
    t.notMatch(JSON.stringify(line), /\n\s+at /, 'no stack');
  });

  t.test('serve: a data dir another daemon holds → exit 8, one line; a taken port → exit 2', async (t) => {
    const locked = await runMain(['serve', '--port', '0', '--data-dir', d.dataDir, '--json']);
    t.equal(locked.code, 8);
    t.match(locked.stderr, /^appreg: another appreg daemon \(pid \d+\) is already running on .+\n$/);
    t.match(JSON.parse(locked.stdout), { error: { code: 'startup_locked' }, exitCode: 8 });
    const dir = tempDir();
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const port = new URL(d.url).port;
    const taken = await runMain(['serve', '--port', port, '--data-dir', dir]);
    t.equal(taken.code, 2);
    t.match(
      taken.stderr,
      new RegExp(`^appreg: port ${port} on 127\\.0\\.0\\.1 is already in use; pick another with --port.*\\n$`),
    );
    t.equal(
      (await runMain(['serve', '--log-format', 'xml', '--data-dir', dir])).code,
      2,
      'an unknown log format is a usage error',
    );
  });
});

t.test('serve --log-format: pretty lines on a terminal by default, JSON lines otherwise', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [args, tty, pretty] of [
    [[], false, false],
    [[], true, true],
    [['--log-format', 'json'], true, false],
    [['--log-format', 'pretty'], false, true],
  ] as const) {
    const s = await serveInProcess(['--data-dir', dir, '--log-level', 'debug', ...args], { tty });
    t.ok(s.url, 'listening');
    await fetch(`${s.url}/healthz`);
    await fetch(`${s.url}/nope`);
    t.equal(await s.stop(), 0);
    const lines = s.out.stderr.trim().split('\n');
    t.ok(lines.length >= 2, `the daemon logged (${args.join(' ') || 'default'}, tty ${tty})`);
    if (pretty)
      t.ok(
        lines.every((l) => /^\d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARN |ERROR) \S/.test(l)),
        `pretty: ${lines[0]}`,
      );
    else
      t.ok(
        lines.every((l) => typeof JSON.parse(l).level === 'string'),
        `json: ${lines[0]}`,
      );
  }
});
