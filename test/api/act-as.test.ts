/**
 * POST …/act-as: the workspace owner's short-lived token of another user (appreg say --as), which touches none of that
 * user's logins.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { secondUser } from '../fixtures/redirects-flow.js';
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
