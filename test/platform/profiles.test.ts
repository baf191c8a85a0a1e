/** User groups, custom statuses and home views through the platform API, with their events. */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

t.test('user groups made by a person are listed to apps, with WORKSPACE_USER_GROUP_CREATED / _UPDATED', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  rx.on('/events', { text: 'ok' });
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const b = await installPlatformApp(d, {
    events: ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED'],
    eventsUrl: `${rx.url}/events`,
  });
  rx.secret = b.app.signingSecret;
  const ws = d.parts.workspace;
  const me = await ws.person(d.workspaceUserId);
  const g = await ws.profiles.createGroup(me, { name: 'Backend team', workspaceUserIds: [d.workspaceUserId] });
  t.match(g, {
    name: 'Backend team',
    handle: 'backend-team',
    disabled: false,
    createdBy: d.workspaceUserId,
    workspaceUserIds: [d.workspaceUserId],
  });
  await t.rejects(
    ws.profiles.createGroup(me, { name: 'Other', handle: 'backend-team' }),
    { code: 'invalid_request' },
    'handles are unique',
  );
  await ws.profiles.updateGroup(me, g.id, { workspaceUserIds: [d.workspaceUserId, must(b.tokens.botId)] });
  const list = await b.bot.listUserGroups();
  t.equal(list.status, 200);
  t.same(list.body, [{ ...g, workspaceUserIds: [d.workspaceUserId, b.tokens.botId] }]);
  const evs = await rx.waitFor(2);
  t.ok(evs.every((e) => e.signatureValid));
  t.match(JSON.parse(must(evs[0]).body.body), {
    wId: d.workspaceId,
    cbId: d.workspaceUserId,
    id: g.id,
    n: 'Backend team',
    h: 'backend-team',
    di: false,
    uIds: [d.workspaceUserId],
    ty: 'WORKSPACE_USER_GROUP_CREATED',
  });
  t.match(JSON.parse(must(evs[1]).body.body), {
    id: g.id,
    uIds: [d.workspaceUserId, b.tokens.botId],
    ty: 'WORKSPACE_USER_GROUP_UPDATED',
  });
});

t.test(
  'custom status: the token user sets their own, it shows on the user, WORKSPACE_USER_UPDATED; it expires',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    rx.on('/events', { text: 'ok' });
    const clock = createTestClock();
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const b = await installPlatformApp(d, { events: ['WORKSPACE_USER_UPDATED'], eventsUrl: `${rx.url}/events` });
    rx.secret = b.app.signingSecret;
    const set = await b.user.updateCustomStatus({
      code: ':palm_tree:',
      status: 'On holiday',
      expiration: 'custom',
      expiresAt: clock.now() + 3_600_000,
      pausedNotifications: true,
    });
    t.equal(set.status, 200);
    t.match(set.body, {
      id: d.workspaceUserId,
      customStatus: {
        code: ':palm_tree:',
        status: 'On holiday',
        expiration: 'custom',
        expiresAt: clock.now() + 3_600_000,
        showUntil: true,
      },
    });
    t.match((await b.bot.userInfo(d.workspaceUserId)).body.customStatus, { code: ':palm_tree:' }, 'others see it');
    t.equal((await b.user.updateCustomStatus({ code: 'x' })).status, 400);
    const [ev] = await rx.waitFor(1);
    t.match(JSON.parse(must(ev).body.body), {
      uId: d.workspaceUserId,
      ty: 'WORKSPACE_USER_UPDATED',
      cs: { st: 'On holiday', co: ':palm_tree:' },
      puE: 'owner@appreg.test',
    });
    clock.set(clock.now() + 3_601_000);
    t.notOk((await b.bot.userInfo(d.workspaceUserId)).body.customStatus, 'gone once expired');
    const noScope = await installPlatformApp(d, { userScopes: ['user:read'], botScopes: ['user:read'] });
    const refused = await noScope.user.updateCustomStatus({ code: ':x:' });
    t.equal(refused.status, 403);
    t.match(refused.body, { code: 'missing_scope', message: /status:write/ });
  },
);

t.test('home view: kept per app and user; 20 a minute per app and user', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const b = await installPlatformApp(d);
  const view = { blocks: [{ type: 'rich_text', elements: [] }], title: { type: 'plain_text', text: 'Home' } };
  const res = await b.bot.publishHomeView(d.workspaceUserId, view);
  t.equal(res.status, 200);
  t.match(res.body, { type: 'HOME', blocks: view.blocks, title: view.title });
  t.same(
    await d.parts.workspace.profiles.homeView(b.app.id, d.workspaceUserId),
    res.body,
    'kept for the workspace view',
  );
  t.equal((await b.bot.publishHomeView('wu_nobody', view)).status, 404);
  t.equal((await b.bot.publishHomeView(d.workspaceUserId, { blocks: 'no' })).status, 400);
  const statuses = [];
  for (let i = 0; i < 18; i++) statuses.push((await b.bot.publishHomeView(d.workspaceUserId, view)).status);
  t.ok(statuses.every((s) => s === 200));
  const over = await b.bot.publishHomeView(d.workspaceUserId, view);
  t.equal(over.status, 429, 'the 21st in a minute');
  t.ok(over.headers.get('retry-after'));
});
