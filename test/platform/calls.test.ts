/**
 * Permanent calls: POST /v1/calls/permanent as the SDK's createPermanentCall sends it, and the link of the daemon's
 * own.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp } from '../helpers/platform-client.js';

t.test('each user has one permanent call, the same every time, whose link opens a page of the daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot, tokens } = await installPlatformApp(d);
  const first = await user.createPermanentCall();
  t.equal(first.status, 200, JSON.stringify(first.body));
  t.same(
    Object.keys(first.body).sort(),
    ['code', 'id', 'permanentLink', 'workspaceId', 'workspaceUserId'],
    'V1.PermanentCall',
  );
  t.match(first.body, { id: /^call_/, code: /^pcl_/, workspaceId: d.workspaceId, workspaceUserId: d.workspaceUserId });
  t.equal(first.body.permanentLink, `${d.url}/calls/${first.body.code}`, 'a link of the daemon');
  t.same((await user.createPermanentCall()).body, first.body, 'permanent: the same call again');
  const botCall = await bot.createPermanentCall();
  t.equal(botCall.body.workspaceUserId, tokens.botId, "a bot token: the bot user's own");
  t.not(botCall.body.code, first.body.code);
  const other = await secondUser(d);
  const others = await (await installPlatformApp(d, { as: other })).user.createPermanentCall();
  t.equal(others.body.workspaceUserId, other.id);
  t.not(others.body.code, first.body.code, "another user's call is another");

  const page = await fetch(first.body.permanentLink);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.match(await page.text(), /Permanent call of Owner/);
  const none = await fetch(`${d.url}/calls/pcl_nothing`);
  t.equal(none.status, 404);
  t.match(await none.text(), /No such call/);

  const noScope = await installPlatformApp(d, { userScopes: ['messages:read'], botScopes: ['messages:read'] });
  const refused = await noScope.user.createPermanentCall();
  t.equal(refused.status, 403);
  t.match(refused.body, { code: 'missing_scope', message: /calls:write/ });
});
