import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, onPostgres, storedText, type TestDaemon } from '../helpers/daemon.js';
import { encodeFirst } from '../fixtures/request-forms.js';
import { must } from '../../src/must.js';

const SECRET_KEYS = ['clientSecret', 'appKey', 'signingSecret'];

async function createApp(d: TestDaemon, overrides: Record<string, unknown> = {}) {
  const res = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest(overrides) });
  return { res, body: (await res.json()) as Record<string, any> };
}

async function secondUser(d: TestDaemon) {
  const email = `u${Math.random().toString(36).slice(2)}@example.com`;
  const res = await d.api(`/workspaces/${d.workspaceId}/workspaceUsers`, {
    method: 'POST',
    json: { email, name: 'Second', password: 'correct horse battery' },
  });
  const user = (await res.json()) as { id: string };
  const login = await d.api('/auth/login', {
    method: 'POST',
    noAuth: true,
    json: { email, password: 'correct horse battery' },
  });
  const tok = (await login.json()) as { authToken: string };
  return { id: user.id, token: tok.authToken, mgmt: `/workspaces/${d.workspaceId}/workspaceUsers/${user.id}` };
}

t.test('management endpoints 1–5', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());

  t.test('create answers 201 with the full app and prefixed 256-bit secrets', async (t) => {
    const { res, body } = await createApp(d);
    t.equal(res.status, 201);
    t.match(body.id, /^app_[A-Za-z0-9_-]{43}$/);
    t.match(body.clientSecret, /^acs_[A-Za-z0-9_-]{43}$/);
    t.match(body.appKey, /^apk_[A-Za-z0-9_-]{43}$/);
    t.match(body.signingSecret, /^ass_[A-Za-z0-9_-]{43}$/);
    t.equal(body.published, false);
    for (const k of ['redirectUrls', 'slashCommands', 'shortcuts', 'dynamicMenus'])
      t.ok(Array.isArray(body[k]), `${k} is an array`);
    t.same(body.scopes, manifest().scopes);
    t.same(body.eventSubscriptions, manifest().eventSubscriptions);
    t.notOk('helpUrl' in body, 'unset optional fields are left out, not null');
    t.notOk('blockInteraction' in body);
  });

  t.test('get returns secrets, list never does, update keeps secrets', async (t) => {
    const { body: created } = await createApp(d, { name: 'second-app' });
    const got = (await (await d.api(`${d.mgmt}/apps/mine/${created.id}`)).json()) as Record<string, any>;
    for (const k of SECRET_KEYS) t.equal(got[k], created[k], `get returns ${k}`);
    const listRes = await d.api(`${d.mgmt}/apps/mine`);
    t.equal(listRes.status, 200);
    const list = (await listRes.json()) as Record<string, any>[];
    t.ok(list.length >= 2);
    for (const app of list) for (const k of SECRET_KEYS) t.notOk(k in app, `list has no ${k}`);
    const upd = await d.api(`${d.mgmt}/apps/${created.id}`, {
      method: 'PUT',
      json: manifest({ name: 'second-app', displayName: 'Renamed' }),
    });
    t.equal(upd.status, 200);
    const updBody = (await upd.json()) as Record<string, any>;
    t.equal(updBody.displayName, 'Renamed');
    for (const k of SECRET_KEYS) t.notOk(k in updBody, `update response has no ${k}`);
    const after = (await (await d.api(`${d.mgmt}/apps/mine/${created.id}`)).json()) as Record<string, any>;
    for (const k of SECRET_KEYS) t.equal(after[k], created[k], `${k} unchanged by update`);
    t.equal(after.displayName, 'Renamed');
  });

  t.test('update without avatarUrl keeps the current avatar (docs/protocol.md §2); null clears it', async (t) => {
    const avatar = 'https://cdn.example.com/avatar.png';
    const { body: created } = await createApp(d, { name: 'avatar-app', avatarUrl: avatar });
    t.equal(created.avatarUrl, avatar);
    const upd = await d.api(`${d.mgmt}/apps/${created.id}`, {
      method: 'PUT',
      json: manifest({ name: 'avatar-app', displayName: 'No avatar field' }),
    });
    t.equal(upd.status, 200);
    t.equal(((await upd.json()) as Record<string, any>).avatarUrl, avatar, 'the update response keeps it');
    const got = (await (await d.api(`${d.mgmt}/apps/mine/${created.id}`)).json()) as Record<string, any>;
    t.equal(got.avatarUrl, avatar, 'and so does the stored app');
    const other = 'https://cdn.example.com/other.png';
    const changed = (await (
      await d.api(`${d.mgmt}/apps/${created.id}`, {
        method: 'PUT',
        json: manifest({ name: 'avatar-app', avatarUrl: other }),
      })
    ).json()) as Record<string, any>;
    t.equal(changed.avatarUrl, other, 'a given avatarUrl replaces it');
    const cleared = (await (
      await d.api(`${d.mgmt}/apps/${created.id}`, {
        method: 'PUT',
        json: manifest({ name: 'avatar-app', avatarUrl: null }),
      })
    ).json()) as Record<string, any>;
    t.notOk(cleared.avatarUrl, 'an explicit null removes it');
  });

  t.test('rotate issues new secrets and keeps the id', async (t) => {
    const { body: created } = await createApp(d);
    const res = await d.api(`${d.mgmt}/apps/${created.id}/secrets/rotate`, { method: 'PUT' });
    t.equal(res.status, 200);
    const s = (await res.json()) as Record<string, string>;
    for (const k of SECRET_KEYS) t.not(s[k], created[k], `${k} changed`);
    const after = (await (await d.api(`${d.mgmt}/apps/mine/${created.id}`)).json()) as Record<string, any>;
    t.equal(after.id, created.id);
    t.equal(after.appKey, s.appKey);
  });

  t.test('delete: 204 for unpublished, 409 app_published for published (update too), then 404', async (t) => {
    const { body: a } = await createApp(d);
    t.equal((await d.api(`${d.mgmt}/apps/${a.id}/publish`, { method: 'POST' })).status, 200);
    const upd = await d.api(`${d.mgmt}/apps/${a.id}`, { method: 'PUT', json: manifest({ displayName: 'Changed' }) });
    t.equal(upd.status, 409, 'a published app cannot be updated');
    t.equal(((await upd.json()) as any).code, 'app_published');
    t.equal(((await (await d.api(`${d.mgmt}/apps/mine/${a.id}`)).json()) as any).displayName, 'Test App', 'unchanged');
    const refused = await d.api(`${d.mgmt}/apps/${a.id}`, { method: 'DELETE' });
    t.equal(refused.status, 409);
    t.equal(((await refused.json()) as any).code, 'app_published');
    t.equal((await d.api(`${d.mgmt}/apps/mine/${a.id}`)).status, 200, 'still there');
    t.equal((await d.api(`${d.mgmt}/apps/${a.id}/unpublish`, { method: 'POST' })).status, 200);
    const del = await d.api(`${d.mgmt}/apps/${a.id}`, { method: 'DELETE' });
    t.equal(del.status, 204);
    t.equal((await d.api(`${d.mgmt}/apps/mine/${a.id}`)).status, 404);
    t.equal((await d.api(`${d.mgmt}/apps/${a.id}`, { method: 'DELETE' })).status, 404);
  });

  t.test("another user's app is 404; a path naming another user is 403", async (t) => {
    const { body: mine } = await createApp(d);
    const other = await secondUser(d);
    const h = { authtoken: other.token };
    t.equal((await d.api(`${other.mgmt}/apps/mine/${mine.id}`, { headers: h })).status, 404);
    t.equal(
      (await d.api(`${other.mgmt}/apps/${mine.id}`, { method: 'PUT', headers: h, json: manifest() })).status,
      404,
    );
    t.equal((await d.api(`${other.mgmt}/apps/${mine.id}`, { method: 'DELETE', headers: h })).status, 404);
    const list = (await (await d.api(`${other.mgmt}/apps/mine`, { headers: h })).json()) as unknown[];
    t.same(list, [], 'the other user sees none of my apps');
    const forb = await d.api(`${d.mgmt}/apps/mine`, { headers: h });
    t.equal(forb.status, 403);
    t.equal(((await forb.json()) as any).code, 'forbidden');
  });

  t.test('Authtoken: missing, malformed, forged and revoked tokens get 401', async (t) => {
    const noTok = await d.api(`${d.mgmt}/apps/mine`, { noAuth: true });
    t.equal(noTok.status, 401);
    t.match(await noTok.json(), { code: 'unauthenticated', message: String });
    t.equal((await d.api(`${d.mgmt}/apps/mine`, { headers: { authtoken: 'nope' } })).status, 401);
    const [h, c] = d.token.split('.');
    t.equal(
      (await d.api(`${d.mgmt}/apps/mine`, { headers: { authtoken: `${h}.${c}.AAAA` } })).status,
      401,
      'forged signature',
    );
    const other = await secondUser(d);
    t.equal((await d.api('/auth/logout', { method: 'POST', headers: { authtoken: other.token } })).status, 204);
    t.equal((await d.api(`${other.mgmt}/apps/mine`, { headers: { authtoken: other.token } })).status, 401, 'revoked');
  });

  t.test(
    'the app get served ahead of express answers as the express route does (its path with a percent-encoded id)',
    async (t) => {
      const { body: app } = await createApp(d);
      const { body: sock } = await createApp(d, { socketMode: true, name: 'sock-get' });
      const other = await secondUser(d);
      const [h, c] = d.token.split('.');
      const cases: Array<[string, string, { noAuth?: boolean; headers?: Record<string, string> }]> = [
        ['own app', `${d.mgmt}/apps/mine/${app.id}`, {}],
        ['own app, a query', `${d.mgmt}/apps/mine/${app.id}|?fields=all`, {}],
        ['socket-mode app with its figures', `${d.mgmt}/apps/mine/${sock.id}`, {}],
        ['unknown app', `${d.mgmt}/apps/mine/app_missing`, {}],
        ['a bad id (not an app id)', `${d.mgmt}/apps/mine/-`, {}],
        ['a bad id (too long)', `${d.mgmt}/apps/mine/${'a'.repeat(300)}`, {}],
        ['an empty Authtoken', `${d.mgmt}/apps/mine/${app.id}`, { headers: { authtoken: '' } }],
        ["another user's path", `${other.mgmt}/apps/mine/${app.id}`, {}],
        ["another user's app", `${other.mgmt}/apps/mine/${app.id}`, { headers: { authtoken: other.token } }],
        ['no Authtoken', `${d.mgmt}/apps/mine/${app.id}`, { noAuth: true }],
        ['forged Authtoken', `${d.mgmt}/apps/mine/${app.id}`, { headers: { authtoken: `${h}.${c}.AAAA` } }],
      ];
      const shown = (res: Response) => ({
        status: res.status,
        // every header but the ones that differ by request (date, id) or by connection
        headers: [...res.headers].filter(([k]) => !['date', 'x-request-id', 'connection', 'keep-alive'].includes(k)),
        requestId: /^[0-9a-f]{16}$/.test(res.headers.get('x-request-id') ?? ''),
      });
      for (const [name, p, init] of cases) {
        const [base, query = ''] = p.split('|');
        const fast = await d.api(base + query, init);
        // the fast path leaves an id with a percent-encoded character to the express route
        const viaExpress = await d.api(must(base).replace(/[^/]+$/, (id) => encodeFirst(id)) + query, init);
        t.same(shown(fast), shown(viaExpress), `${name}: status and headers`);
        t.same(await fast.json(), await viaExpress.json(), `${name}: body`);
      }
      const got = (await (await d.api(`${d.mgmt}/apps/mine/${sock.id}`)).json()) as Record<string, unknown>;
      t.match(
        got,
        { id: sock.id, connections: 0, queuedEvents: 0, signingSecret: String },
        'a socket-mode app with its live figures and its secrets',
      );
    },
  );

  t.test('the management token is JWT-shaped with a numeric exp', async (t) => {
    const claims = JSON.parse(Buffer.from(must(d.token.split('.')[1]), 'base64url').toString());
    t.type(claims.exp, 'number');
    t.ok(claims.exp > Date.now() / 1000);
  });

  t.test('bad input gets the §1 error body and changes nothing', async (t) => {
    const before = ((await (await d.api(`${d.mgmt}/apps/mine`)).json()) as unknown[]).length;
    const badJson = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name": ',
    });
    t.equal(badJson.status, 400);
    t.match(await badJson.json(), { code: 'invalid_json', message: String });
    const big = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...manifest(), welcomeMessage: 'x'.repeat(1024 * 1024 + 10) }),
    });
    t.equal(big.status, 413);
    t.equal(((await big.json()) as any).code, 'payload_too_large');
    const wrongType = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify(manifest()),
    });
    t.equal(wrongType.status, 415);
    t.equal(((await wrongType.json()) as any).code, 'unsupported_media_type');
    const invalid = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        name: undefined,
        shortcuts: [{ shortcutType: 'GLOBAL', url: 'http://127.0.0.1:9/s', name: 'x'.repeat(33), displayName: 'X' }],
      }),
    });
    t.equal(invalid.status, 400);
    const ib = (await invalid.json()) as {
      code: string;
      message: string;
      details: { pointer: string; message: string }[];
    };
    t.equal(ib.code, 'invalid_manifest');
    const pointers = ib.details.map((x) => x.pointer);
    t.ok(pointers.includes('/name'), 'missing name pointed at /name');
    t.ok(pointers.includes('/shortcuts/0/name'), 'long shortcut name pointed at');
    const upd = await d.api(`${d.mgmt}/apps/${'app_missing'}`, { method: 'PUT', json: manifest() });
    t.equal(upd.status, 404);
    const after = ((await (await d.api(`${d.mgmt}/apps/mine`)).json()) as unknown[]).length;
    t.equal(after, before, 'no app was created by any bad request');
    const badPath = await d.api('/workspaces/%ZZ/workspaceUsers/x/apps/mine', { noAuth: true });
    t.equal(badPath.status, 400, 'a path that is not valid percent-encoding is bad input, not a server error');
    t.match(await badPath.json(), { code: 'invalid_request', message: /percent-encoding/ });
    t.notMatch(d.logs(), /URIError/, 'and no stack trace reaches the log');
    const unknownRoute = await d.api('/no/such/route');
    t.equal(unknownRoute.status, 404);
    t.match(await unknownRoute.json(), { code: 'not_found' });
  });

  t.test('workspace and user info calls', async (t) => {
    const ws = (await (await d.api(`/workspaces/${d.workspaceId}/info`)).json()) as any;
    t.equal(ws.id, d.workspaceId);
    t.type(ws.name, 'string');
    const u = (await (await d.api(`/workspaces/${d.workspaceId}/workspaceUsers/${d.workspaceUserId}`)).json()) as any;
    t.same(Object.keys(u).sort(), ['email', 'id', 'name']);
  });

  t.test('no secret appears in any log line', async (t) => {
    const { body } = await createApp(d);
    await d.api(`${d.mgmt}/apps/mine/${body.id}`);
    const logs = d.logs();
    t.ok(logs.length > 0, 'the daemon logged requests');
    for (const k of SECRET_KEYS) t.notOk(logs.includes(body[k]), `${k} not logged`);
    t.notOk(logs.includes(d.token), 'management token not logged');
  });
});

t.test('data directory: files 0600, daemon.json, lock, bootstrap credentials', async (t) => {
  const d = await startTestDaemon({ keep: true });
  const created = (await (await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() })).json()) as Record<
    string,
    string
  >;
  const stored = await storedText(d);
  t.match(stored, created.id, 'the app is stored (on disk, or in the database) before the response');
  for (const k of ['clientSecret', 'appKey', 'signingSecret'])
    t.notOk(stored.includes(must(created[k])), `${k} is encrypted at rest`);
  const daemonJson = JSON.parse(fs.readFileSync(path.join(d.dataDir, 'daemon.json'), 'utf8'));
  t.equal(daemonJson.url, d.url);
  t.equal(daemonJson.pid, process.pid);
  t.type(daemonJson.startedAt, 'string');
  const creds = JSON.parse(fs.readFileSync(path.join(d.dataDir, 'credentials.json'), 'utf8'));
  t.same(Object.keys(creds).sort(), ['authToken', 'email', 'workspaceId', 'workspaceUserId']);
  for (const f of fs.readdirSync(d.dataDir)) {
    const st = fs.statSync(path.join(d.dataDir, f));
    if (st.isFile()) t.equal(st.mode & 0o777, 0o600, `${f} is 0600`);
  }
  await t.rejects(
    startTestDaemon({ dataDir: d.dataDir }),
    /already running/,
    'a second daemon on the same data dir refuses',
  );
  await d.stop();
  t.notOk(fs.existsSync(path.join(d.dataDir, 'daemon.json')), 'daemon.json removed on shutdown');
  for (const f of fs.readdirSync(d.dataDir)) {
    const st = fs.statSync(path.join(d.dataDir, f));
    if (st.isFile()) t.equal(st.mode & 0o777, 0o600, `${f} is 0600 after compaction`);
  }
  // a stale lock (its process is gone) is taken over
  fs.writeFileSync(path.join(d.dataDir, 'daemon.lock'), '999999');
  const again = await startTestDaemon({ dataDir: d.dataDir });
  t.equal(again.bootstrapped, null, 'no second bootstrap');
  const list = (await (await again.api(`${again.mgmt}/apps/mine`)).json()) as unknown[];
  t.equal(list.length, 1, 'the app survived the restart');
  await again.stop();
  fs.rmSync(d.dataDir, { recursive: true, force: true });
});

t.test('an existing, group-readable data directory is tightened to 0700', async (t) => {
  const dir = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'appreg-perm-'));
  fs.chmodSync(dir, 0o755);
  const d = await startTestDaemon({ dataDir: dir });
  t.equal(fs.statSync(dir).mode & 0o777, 0o700);
  await d.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

// About the embedded store's own file: not part of the PostgreSQL pass of the store matrix.
if (!onPostgres())
  t.test('a truncated data file stops start-up and is left byte-for-byte unchanged', async (t) => {
    const d = await startTestDaemon({ keep: true });
    await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() });
    await d.stop();
    const file = path.join(d.dataDir, 'appreg.json');
    const full = fs.readFileSync(file);
    fs.writeFileSync(file, full.subarray(0, Math.floor(full.length / 2)));
    const before = fs.readFileSync(file);
    await t.rejects(startTestDaemon({ dataDir: d.dataDir }), /appreg\.json/);
    t.same(fs.readFileSync(file), before, 'unchanged');
    fs.rmSync(d.dataDir, { recursive: true, force: true });
  });

t.test('management writes over the per-user rate limit get 429 with Retry-After and change nothing', async (t) => {
  const d = await startTestDaemon({ config: { rateLimitManagementWrites: 3 } });
  t.teardown(() => d.stop());
  for (let i = 0; i < 3; i++)
    t.equal((await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() })).status, 201);
  const over = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() });
  t.equal(over.status, 429);
  t.match(await over.json(), { code: 'rate_limited', message: String });
  t.ok(Number(over.headers.get('retry-after')) >= 1, 'Retry-After in seconds');
  t.equal(((await (await d.api(`${d.mgmt}/apps/mine`)).json()) as unknown[]).length, 3, 'nothing created');
  t.equal((await d.api(`${d.mgmt}/apps/mine`)).status, 200, 'reads are not limited');
});
