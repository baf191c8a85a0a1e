import t from 'tap';
import { logLines } from '../helpers/log-lines.js';
import { startTestDaemon } from '../helpers/daemon.js';
import { createApp, grant, authorize, me, secondUser } from '../fixtures/redirects-flow.js';
import { EVENTS_OUTBOX, type AppOutboxEvent as OutboxEventRecord } from '../../src/model/events.js';
import { must } from '../../src/must.js';

t.test('unauthorize, uninstall and the grant API', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const store = d.parts.store;
  const oauth = d.parts.oauth.grants;
  // the delivery worker consumes the outbox as it goes, so the events are collected as they
  // are written; the same-commit test below checks the write itself
  const recorded: OutboxEventRecord[] = [];
  const write = store.commit.bind(store);
  store.commit = (changes, expect) => {
    for (const c of changes) if (c.table === EVENTS_OUTBOX && c.value) recorded.push(c.value as OutboxEventRecord);
    return write(changes, expect);
  };
  t.teardown(() => {
    store.commit = write;
  });
  const outbox = () => recorded;
  const user = await secondUser(d);

  t.test(
    "unauthorize: the user's tokens fail at once, the bot and other users keep working, APP_UNAUTHORIZED is stored",
    async (t) => {
      const app = await createApp(d);
      const owner = await authorize(d, app);
      const owner2 = await authorize(d, app); // a second token of the same user
      const other = await authorize(d, app, { token: user.token, mgmt: user.mgmt });
      t.same((await oauth.authorizedUsers(app.id, d.workspaceId)).sort(), [d.workspaceUserId, user.id].sort());
      const before = outbox().length;
      const del = (tok: string, key = app.appKey) =>
        fetch(`${d.url}/v1/app/authorization`, { method: 'DELETE', headers: { token: tok, 'x-app-token': key } });
      t.equal((await del(must(owner.botToken))).status, 400, 'needs a user token');
      t.equal((await del(owner.accessToken, 'apk_wrong')).status, 401);
      const res = await del(owner.accessToken);
      t.equal(res.status, 204);
      t.equal((await me(d, owner.accessToken, app.appKey)).status, 401);
      t.equal((await me(d, owner2.accessToken, app.appKey)).status, 401, 'every token of that user');
      t.equal((await me(d, other.accessToken, app.appKey)).status, 200, 'other users unaffected');
      t.equal((await me(d, must(owner.botToken), app.appKey)).status, 200, 'the bot stays installed');
      t.same(await oauth.authorizedUsers(app.id, d.workspaceId), [user.id]);
      const evs = outbox().slice(before);
      t.equal(evs.length, 1);
      const ev = must(evs[0]);
      t.match(ev.id, /^evt_/);
      t.equal(ev.eventType, 'APP_UNAUTHORIZED');
      t.equal(ev.appId, app.id);
      t.equal(ev.workspaceId, d.workspaceId);
      t.same(ev.workspaceUserIds, [d.workspaceUserId]);
      t.equal(typeof ev.body, 'object', 'body is an object; delivery stringifies it');
      t.same(Object.keys(ev.body).sort(), [
        'accessGranted',
        'app',
        'appInstallation',
        'grantedScopes',
        'id',
        'workspace',
        'workspaceUser',
      ]);
      t.match(ev.body, {
        app: app.id,
        workspaceUser: d.workspaceUserId,
        workspace: d.workspaceId,
        grantedScopes: [],
        accessGranted: false,
      });
      t.match(ev.body.appInstallation, /^ins_/);
      t.equal((await del(owner.accessToken)).status, 401, 'a revoked token cannot unauthorize again');
    },
  );

  t.test(
    'uninstall with a bot token: every token of the app in the workspace fails at once, APP_UNINSTALLED names the authorized users',
    async (t) => {
      const app = await createApp(d);
      const a = await authorize(d, app);
      const b = await authorize(d, app, { token: user.token, mgmt: user.mgmt });
      const before = outbox().length;
      const res = await fetch(`${d.url}/v1/app/installation`, {
        method: 'DELETE',
        headers: { token: must(a.botToken), 'x-app-token': app.appKey },
      });
      t.equal(res.status, 204);
      for (const tok of [a.accessToken, must(a.botToken), b.accessToken])
        t.equal((await me(d, tok, app.appKey)).status, 401);
      t.same(await oauth.authorizedUsers(app.id, d.workspaceId), []);
      const ev = must(outbox().slice(before)[0]);
      t.equal(ev.eventType, 'APP_UNINSTALLED');
      t.same(ev.workspaceUserIds.sort(), [d.workspaceUserId, user.id].sort());
      t.same(Object.keys(ev.body).sort(), ['app', 'botUser', 'id', 'installedBy', 'uninstalledAt', 'workspace']);
      t.match(ev.body, { app: app.id, workspace: d.workspaceId, installedBy: d.workspaceUserId, botUser: a.botId });
      t.equal(await store.get('workspaceUsers', must(a.botId)), undefined, 'the bot user is gone');
      // installing again gives a new bot
      const again = await authorize(d, app);
      t.not(again.botId, a.botId);
      t.equal((await me(d, must(again.botToken), app.appKey)).status, 200);
    },
  );

  t.test('uninstall with a user token works too', async (t) => {
    const app = await createApp(d);
    const a = await authorize(d, app);
    const res = await fetch(`${d.url}/v1/app/installation`, {
      method: 'DELETE',
      headers: { token: a.accessToken, 'x-app-token': app.appKey },
    });
    t.equal(res.status, 204);
    t.equal((await me(d, must(a.botToken), app.appKey)).status, 401);
  });

  t.test('the outbox event is in the same commit as the revocation (one durable write)', async (t) => {
    const app = await createApp(d);
    const a = await authorize(d, app);
    const commits: Array<ReadonlyArray<{ table: string }>> = [];
    const orig = store.commit.bind(store);
    store.commit = (changes, expect) => {
      commits.push(changes);
      return orig(changes, expect);
    };
    t.teardown(() => {
      store.commit = orig;
    });
    await fetch(`${d.url}/v1/app/authorization`, {
      method: 'DELETE',
      headers: { token: a.accessToken, 'x-app-token': app.appKey },
    });
    // The delivery engine may drain the outbox in a commit of its own right after, so look for
    // the commit that revoked the tokens: it must carry the outbox event too.
    const revoking = commits.filter((changes) => changes.some((c) => c.table === 'oauthTokens'));
    t.equal(revoking.length, 1, 'the revocation is one commit');
    const tables = must(revoking[0]).map((c) => c.table);
    t.ok(tables.includes(EVENTS_OUTBOX), 'the outbox event rides in the revoking commit');
    const ev = must(revoking[0]).find((c) => c.table === EVENTS_OUTBOX) as unknown as { value: OutboxEventRecord };
    t.match(ev.value, { eventType: 'APP_UNAUTHORIZED', appId: app.id, workspaceUserIds: [d.workspaceUserId] });
  });

  t.test("GET …/oauth2/grant has exactly the consent screen's validation", async (t) => {
    const app = await createApp(d);
    let g = await grant(d, app, { redirectUrl: 'http://localhost:9/redirectevil' });
    t.equal(g.res.status, 400);
    t.equal((g.body as unknown as { code: string }).code, 'invalid_redirect_url');
    g = await grant(d, app, { scopes: 'bot:files:write' });
    t.equal(g.res.status, 400);
    t.equal((g.body as unknown as { code: string }).code, 'invalid_scope');
    g = await grant(d, { id: 'app_missing' });
    t.equal((g.body as unknown as { code: string }).code, 'unknown_client');
    const res = await d.api(`${user.mgmt}/oauth2/grant?clientId=${app.id}&scopes=&redirectUrl=/redirect`);
    t.equal(res.status, 403, "another user's path");
    const noAuth = await d.api(`${d.mgmt}/oauth2/grant?clientId=${app.id}`, { noAuth: true });
    t.equal(noAuth.status, 401);
  });

  t.test('GET …/apps/authorizations lists the apps the caller authorized', async (t) => {
    const app = await createApp(d, { displayName: 'Listed' });
    await authorize(d, app, { token: user.token, mgmt: user.mgmt });
    const res = await d.api(`${user.mgmt}/apps/authorizations`, { headers: { authtoken: user.token } });
    t.equal(res.status, 200);
    const list = (await res.json()) as Array<{ app: { id: string; displayName: string }; userScopes: string[] }>;
    const item = must(list.find((x) => x.app.id === app.id));
    t.ok(item);
    t.equal(item.app.displayName, 'Listed');
    t.same(item.userScopes, ['messages:read']);
    t.notOk(JSON.stringify(list).match(/acs_|apk_|ass_|aut_|abt_/), 'no secrets');
  });

  t.test('DELETE …/apps/{id}/installations/{ws}: by whoever authorized it; others get 403', async (t) => {
    const app = await createApp(d);
    const a = await authorize(d, app);
    const outsider = await secondUser(d);
    let res = await d.api(`${outsider.mgmt}/apps/${app.id}/installations/${d.workspaceId}`, {
      method: 'DELETE',
      headers: { authtoken: outsider.token },
    });
    t.equal(res.status, 403);
    res = await d.api(`${d.mgmt}/apps/${app.id}/installations/ws_other`, { method: 'DELETE' });
    t.equal(res.status, 403, 'not a member');
    res = await d.api(`${d.mgmt}/apps/${app.id}/installations/${d.workspaceId}`, { method: 'DELETE' });
    t.equal(res.status, 204);
    t.equal((await me(d, must(a.botToken), app.appKey)).status, 401);
    res = await d.api(`${d.mgmt}/apps/${app.id}/installations/${d.workspaceId}`, { method: 'DELETE' });
    t.equal(res.status, 404);
  });

  t.test('POST /v1/interactions/complete', async (t) => {
    const app = await createApp(d);
    const a = await authorize(d, app);
    const body = { channelId: 'ch1', sourceId: 'm1', sourceType: 'MESSAGE', triggerId: 'tr1' };
    let res = await fetch(`${d.url}/v1/interactions/complete`, {
      method: 'POST',
      headers: { token: must(a.botToken), 'x-app-token': app.appKey, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    t.equal(res.status, 200);
    t.ok(
      logLines(d).some((l) => l.msg === 'interaction complete' && l.appId === app.id && l.triggerId === 'tr1'),
      'acknowledged and logged',
    );
    res = await fetch(`${d.url}/v1/interactions/complete`, {
      method: 'POST',
      headers: { token: must(a.botToken), 'x-app-token': app.appKey, 'content-type': 'application/json' },
      body: '{}',
    });
    t.equal(res.status, 400);
    res = await fetch(`${d.url}/v1/interactions/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    t.equal(res.status, 401);
  });

  t.test('indexes survive a restart: tokens and authorized users are rebuilt from the store', async (t) => {
    const dir = (await import('../helpers/daemon.js')).tempDir();
    const d1 = await startTestDaemon({ dataDir: dir });
    const app = await createApp(d1);
    const a = await authorize(d1, app);
    await d1.stop();
    const d2 = await startTestDaemon({ dataDir: dir });
    t.teardown(async () => {
      await d2.stop();
      (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
    });
    t.equal((await me(d2, a.accessToken, app.appKey)).status, 200);
    t.equal((await me(d2, must(a.botToken), app.appKey)).status, 200);
    t.same(await d2.parts.oauth.grants.authorizedUsers(app.id, d2.workspaceId), [d2.workspaceUserId]);
    const again = await authorize(d2, app);
    t.equal(again.botToken, a.botToken, 'the sealed bot token is recovered after restart');
  });
});
