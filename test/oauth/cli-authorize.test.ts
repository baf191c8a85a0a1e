import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { createApp, me, secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('appreg authorize / authorizations list / apps uninstall', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  // a running app: receives the redirect and exchanges the code itself
  let app: Awaited<ReturnType<typeof createApp>>;
  const receiver = http.createServer(
    (req, res) =>
      void (async () => {
        const code = new URL(must(req.url), 'http://x').searchParams.get('code');
        const form = new FormData();
        form.append('client-id', app.id);
        form.append('client-secret', app.clientSecret);
        form.append('code', code ?? '');
        const x = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: form });
        res.statusCode = x.status === 200 ? 200 : 500;
        res.end(x.status === 200 ? 'installed' : 'exchange failed');
      })().catch((e: unknown) =>
        setImmediate(() => {
          throw e;
        }),
      ),
  );
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => receiver.close(() => r())));
  const port = (receiver.address() as AddressInfo).port;
  app = await createApp(d, { displayName: 'CLI App', redirectUrls: [`http://127.0.0.1:${port}/redirect`] });

  t.test('--print-url prints a validated consent link', async (t) => {
    const r = await runMain([...g, 'authorize', app.id, '--print-url', '--workspace', d.workspaceId]);
    t.equal(r.code, 0, r.stderr);
    const u = new URL(r.stdout.trim());
    t.equal(u.origin + u.pathname, `${d.url}/access-request`);
    t.equal(u.searchParams.get('clientId'), app.id);
    t.equal(u.searchParams.get('scopes'), 'messages:read,bot:messages:read,bot:messages:write');
    t.equal(u.searchParams.get('redirectUrl'), `http://127.0.0.1:${port}/redirect`);
    t.equal(u.searchParams.get('defaultWorkspaceId'), d.workspaceId);
    const bad = await runMain([
      ...g,
      'authorize',
      app.id,
      '--print-url',
      '--redirect-url',
      'https://evil.com/redirect',
    ]);
    t.equal(bad.code, 4);
    t.match(bad.stderr, /redirectUrl is not acceptable/);
  });

  t.test('--exchange --json prints working tokens', async (t) => {
    const r = await runMain([...g, 'authorize', app.id, '--exchange', '--json']);
    t.equal(r.code, 0, r.stderr);
    const tok = JSON.parse(r.stdout);
    t.match(tok, {
      accessToken: /^aut_/,
      botToken: /^abt_/,
      userId: d.workspaceUserId,
      workspaceId: d.workspaceId,
      botId: /^bot_/,
    });
    t.equal((await me(d, tok.accessToken, app.appKey)).status, 200);
    const re = JSON.parse((await runMain([...g, 'authorize', app.id, '--exchange', '--reinstall', '--json'])).stdout);
    t.not(re.botToken, tok.botToken);
    t.equal(
      (await me(d, tok.botToken, app.appKey)).status,
      401,
      'reinstall from the CLI invalidates the old bot token',
    );
  });

  t.test('--workspace: another workspace of the same login installs there; a foreign one is refused', async (t) => {
    const ws2 = (await (
      await d.api('/workspaces', { method: 'POST', json: { name: 'Second for authorize' } })
    ).json()) as { id: string; workspaceUserId: string };
    const r = await runMain([...g, 'authorize', app.id, '--workspace', ws2.id, '--exchange', '--json']);
    t.equal(r.code, 0, r.stderr);
    const tok = JSON.parse(r.stdout);
    t.match(
      tok,
      { workspaceId: ws2.id, userId: ws2.workspaceUserId },
      'installed in the chosen workspace, as the membership there',
    );
    t.equal((await me(d, tok.accessToken, app.appKey)).status, 200);
    const foreign = await runMain([...g, 'authorize', app.id, '--workspace', 'ws_notamember', '--exchange']);
    t.equal(foreign.code, 4);
    t.match(foreign.stderr, /not a member of that workspace/);
  });

  t.test('--follow sends the code to the running app and prints its answer', async (t) => {
    const r = await runMain([...g, 'authorize', app.id, '--follow', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout), { status: 200, body: 'installed' });
  });

  t.test('without a mode: the code and the redirect URL', async (t) => {
    const r = await runMain([...g, 'authorize', app.id, '--state', 'abc', '--json']);
    t.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    t.match(out.code, /^acd_/);
    t.equal(new URL(out.redirectUrl).searchParams.get('state'), 'abc');
  });

  t.test('usage errors', async (t) => {
    let r = await runMain([...g, 'authorize', app.id, '--follow', '--exchange']);
    t.equal(r.code, 2);
    // someone else's app: its defaults are not yours to read, so they must be given
    const other = await secondUser(d);
    const theirs = await createApp(d, { displayName: 'Not mine' }, other.token, other.mgmt);
    r = await runMain([...g, 'authorize', theirs.id]);
    t.equal(r.code, 2);
    t.match(r.stderr, /not one of your apps: give --scopes and --redirect-url/);
    // no app at all: says so (exit 4), rather than asking for options that cannot help
    r = await runMain([...g, 'authorize', 'app_not_mine']);
    t.equal(r.code, 4);
    t.match(r.stderr, /app app_not_mine not found/);
  });

  t.test('authorizations list, then apps uninstall', async (t) => {
    let r = await runMain([...g, 'authorizations', 'list', '--json']);
    t.equal(r.code, 0, r.stderr);
    const list = JSON.parse(r.stdout);
    t.ok(list.some((a: { app: { id: string } }) => a.app.id === app.id));
    r = await runMain([...g, 'authorizations', 'list']);
    t.match(r.stdout, /APP ID/);
    t.match(r.stdout, 'CLI App');
    const tok = JSON.parse((await runMain([...g, 'authorize', app.id, '--exchange', '--json'])).stdout);
    r = await runMain([...g, 'apps', 'uninstall', app.id, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.same(JSON.parse(r.stdout), { uninstalled: app.id, workspaceId: d.workspaceId });
    t.equal((await me(d, tok.botToken, app.appKey)).status, 401);
    t.equal((await me(d, tok.accessToken, app.appKey)).status, 401);
    r = await runMain([...g, 'apps', 'uninstall', app.id]);
    t.equal(r.code, 4, 'not installed any more');
    r = await runMain([...g, 'authorizations', 'list', '--json']);
    t.notOk(JSON.parse(r.stdout).some((a: { app: { id: string } }) => a.app.id === app.id));
  });

  t.test('--help has examples', async (t) => {
    for (const args of [
      ['authorize', '--help'],
      ['authorizations', 'list', '--help'],
      ['apps', 'uninstall', '--help'],
    ]) {
      const r = await runMain(args);
      t.equal(r.code, 0);
      t.match(r.stdout, /Example/);
    }
  });
});
