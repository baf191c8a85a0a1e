/**
 * POST …/act-as: the workspace owner's short-lived token of another user (appreg say --as), which touches none of that
 * user's logins.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { createApp, secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';
import { createTestClock } from '../helpers/test-clock.js';

t.test('act-as: owner only, human users of the workspace only, ten minutes, revocable, no login touched', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const dev = await secondUser(d);
  const { tokens } = await installPlatformApp(d);
  const actAs = (user: unknown, token = d.token, mgmt = d.mgmt) =>
    d.api(`${mgmt}/act-as`, { method: 'POST', json: { user }, headers: { authtoken: token } });

  const res = await actAs(dev.email.toUpperCase());
  t.equal(res.status, 200);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const issued = (await res.json()) as { authToken: string; exp: number; workspaceId: string; workspaceUserId: string };
  t.match(issued, { workspaceId: d.workspaceId, workspaceUserId: dev.id });
  t.ok(issued.exp - Math.floor(clock.now() / 1000) <= 600, 'lives ten minutes at most');
  const whoami = await d.api('/auth/whoami', { headers: { authtoken: issued.authToken } });
  t.match(await whoami.json(), { workspaceUserId: dev.id }, "the token is dev's");
  t.notMatch(d.logs(), new RegExp(issued.authToken.slice(-20)), 'not logged');
  t.equal((await actAs(dev.id)).status, 200, 'by id too');

  const refused = await actAs(d.workspaceUserId, dev.token, dev.mgmt);
  t.equal(refused.status, 403, 'a user who does not own the workspace');
  t.match(await refused.json(), { code: 'forbidden', message: /owner/ });
  t.equal((await actAs(dev.id, dev.token, dev.mgmt)).status, 200, 'anyone may act as themselves');
  t.match(
    await (await actAs(tokens.botId)).json(),
    { code: 'invalid_request', details: [{ pointer: '/user' }] },
    "not as an app's bot user",
  );
  t.equal((await actAs('nobody@example.com')).status, 404);
  t.equal((await actAs(42)).status, 400);
  t.equal(
    d
      .logs()
      .split('\n')
      .filter((l) => /login code/.test(l)).length,
    0,
    'no login code was made',
  );

  clock.set(clock.now() + 601_000);
  t.equal(
    (await d.api('/auth/whoami', { headers: { authtoken: issued.authToken } })).status,
    401,
    'expired after ten minutes',
  );
});

/** The token of `owner` acting as `user` (POST …/act-as). */
async function actAsToken(d: Awaited<ReturnType<typeof startTestDaemon>>, user: string): Promise<string> {
  const res = await d.api(`${d.mgmt}/act-as`, { method: 'POST', json: { user } });
  if (res.status !== 200) throw new Error(`act-as: ${res.status}`);
  return ((await res.json()) as { authToken: string }).authToken;
}

t.test('AS1: an act-as token reaches its listed calls in its own workspace, and nothing else', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const b = await secondUser(d);
  // B's own workspace W3, which the owner of A is not in, and an app of B's
  const w3 = (await (
    await d.api('/workspaces', { method: 'POST', json: { name: 'W3' }, headers: { authtoken: b.token } })
  ).json()) as { id: string; workspaceUserId: string };
  const ownersApp = await createApp(d);
  const bsApp = await createApp(d, {}, b.token, b.mgmt);
  const T = await actAsToken(d, b.id);
  const as = (path: string, init: Parameters<typeof d.api>[1] = {}) =>
    d.api(path, { ...init, headers: { authtoken: T, ...(init.headers as Record<string, string>) } });
  const refused = async (what: string, res: Response) => {
    t.equal(res.status, 403, `${what}: 403`);
    t.match(await res.json(), { code: 'forbidden', message: /act-as token/ }, `${what}: says why`);
  };
  const workspacesBefore = await d.parts.store.count('workspaces');
  const usersBefore = await d.parts.store.count('workspaceUsers');

  await refused('a sign-in link', await as(`${b.mgmt}/web/sign-in-links`, { method: 'POST', json: {} }));
  await refused('a new workspace', await as('/workspaces', { method: 'POST', json: { name: 'Mine now' } }));
  await refused(
    'a user in A',
    await as(`/workspaces/${d.workspaceId}/workspaceUsers`, {
      method: 'POST',
      json: { email: 'new@example.com', name: 'New' },
    }),
  );
  await refused(
    'a user in W3',
    await as(`/workspaces/${w3.id}/workspaceUsers`, { method: 'POST', json: { email: 'n3@example.com', name: 'N' } }),
  );
  t.equal(await d.parts.store.count('workspaces'), workspacesBefore, 'no workspace was made');
  t.equal(await d.parts.store.count('workspaceUsers'), usersBefore, 'no user was made');
  await refused("B's login codes", await as(`${b.mgmt}/login-codes`));
  await refused('another act-as', await as(`${b.mgmt}/act-as`, { method: 'POST', json: { user: b.id } }));
  await refused("B's apps", await as(`${b.mgmt}/apps/mine`));
  await refused("B's app, served ahead of express", await as(`${b.mgmt}/apps/mine/${bsApp.id}`));
  await refused('a new app', await as(`${b.mgmt}/apps`, { method: 'POST', json: {} }));
  await refused('a channel made', await as(`${b.mgmt}/channels`, { method: 'POST', json: { name: 'x' } }));
  await refused('a trigger', await as(`${b.mgmt}/deliveries`, { method: 'POST', json: {} }));
  const grantQ = (app: string, extra: Record<string, string> = {}) =>
    new URLSearchParams({
      clientId: app,
      scopes: 'messages:read',
      redirectUrl: 'http://localhost:9/redirect',
      ...extra,
    });
  await refused("authorizing B's own app", await as(`${b.mgmt}/oauth2/grant?${grantQ(bsApp.id)}`));
  t.equal(
    (await as(`${b.mgmt}/oauth2/grant?${grantQ(ownersApp.id, { workspaceId: w3.id })}`)).status,
    403,
    "not in B's other workspace",
  );
  t.equal(
    (await as(`/workspaces/${w3.id}/workspaceUsers/${w3.workspaceUserId}/channels`)).status,
    403,
    "W3's paths are not the token's",
  );
  const whoami = (await (await as('/auth/whoami')).json()) as { workspaces: Array<{ id: string }> };
  t.same(
    whoami.workspaces.map((w) => w.id),
    [d.workspaceId],
    'whoami lists the token’s workspace only, not W3',
  );

  // what it is for: post, react, a command, read what B sees, authorize the owner's app as B
  const posted = await as(`${b.mgmt}/channels/general/messages`, { method: 'POST', json: { text: 'hi' } });
  t.equal(posted.status, 201, 'posts as B');
  const msg = ((await posted.json()) as { message: { id: string; author: string } }).message;
  t.equal(msg.author, b.id);
  t.equal(
    (await as(`${b.mgmt}/messages/${msg.id}/reactions`, { method: 'POST', json: { code: ':+1:' } })).status,
    204,
    'reacts as B',
  );
  t.equal((await as(`${b.mgmt}/channels/general/messages`)).status, 200, 'reads the channel');
  t.equal((await as(`${b.mgmt}/users`)).status, 200, 'reads the users');
  const granted = await as(`${b.mgmt}/oauth2/grant?${grantQ(ownersApp.id)}`);
  t.equal(granted.status, 200, "authorizes the owner's app as B, in A");

  t.equal((await as('/auth/logout', { method: 'POST' })).status, 204, 'revokes itself');
  t.equal((await as('/auth/whoami')).status, 401, 'then nothing');
});

t.test(
  'AS2: a console session or an act-as token made from a token ends when that token is revoked or expires',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock, config: { managementTokenTtlSeconds: 3600 } });
    t.teardown(() => d.stop());
    const b = await secondUser(d);
    const sessionOf = async (token: string) => {
      const res = await d.api(`${b.mgmt}/web/sign-in-links`, {
        method: 'POST',
        json: {},
        headers: { authtoken: token },
      });
      t.equal(res.status, 201);
      const landed = await fetch(((await res.json()) as { url: string }).url, { redirect: 'manual' });
      const cookie = must(landed.headers.getSetCookie().find((c) => c.startsWith('appreg_session='))).split(';')[0];
      return must(cookie);
    };
    const home = (cookie: string) => fetch(`${d.url}/`, { headers: { cookie }, redirect: 'manual' });

    const revoked = await sessionOf(b.token);
    t.equal((await home(revoked)).status, 200, 'signed in');
    t.equal((await d.api('/auth/logout', { method: 'POST', headers: { authtoken: b.token } })).status, 204);
    t.equal((await home(revoked)).status, 401, 'signed out once the token that made it is revoked');

    const login = await d.api('/auth/login', {
      method: 'POST',
      noAuth: true,
      json: { email: b.email, password: b.password },
    });
    const fresh = ((await login.json()) as { authToken: string }).authToken;
    const expiring = await sessionOf(fresh);
    clock.set(clock.now() + 3599_000);
    t.equal((await home(expiring)).status, 200, 'while the token lives');
    clock.set(clock.now() + 2_000);
    t.equal((await home(expiring)).status, 401, 'not past the token’s expiry, though a session lasts 8 hours');

    // an act-as token is made from a token too: it ends with it
    const owner = must(await d.parts.identity.userRecord(d.workspaceUserId));
    const parent = (await d.parts.identity.issueToken(owner)).authToken;
    const made = await d.api(`${d.mgmt}/act-as`, {
      method: 'POST',
      json: { user: b.id },
      headers: { authtoken: parent },
    });
    const child = ((await made.json()) as { authToken: string }).authToken;
    const whoami = (token: string) => d.api('/auth/whoami', { headers: { authtoken: token } });
    t.equal((await whoami(child)).status, 200, 'the act-as token works');
    t.equal((await d.api('/auth/logout', { method: 'POST', headers: { authtoken: parent } })).status, 204);
    const ended = await whoami(child);
    t.equal(ended.status, 401, 'and ends when the token that asked for it is revoked');
    t.match(await ended.json(), { code: 'unauthenticated', message: /token that asked for it/ });
  },
);
