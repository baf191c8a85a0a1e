/**
 * The console's channels-and-groups page over HTTP: archive and delete a channel, create and
 * change a user group, each a form with the console's CSRF field, each reaching the apps
 * subscribed to its event; a refused form is the page again with the reason and what was typed.
 */
import t from 'tap';
import { daemonWithListener } from '../helpers/listening-app.js';
import { signIn } from '../helpers/console.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('channels and groups in the console', async (t) => {
  const { rx, d, app } = await daemonWithListener(t, [
    'CHANNEL_ARCHIVED',
    'CHANNEL_DELETED',
    'WORKSPACE_USER_GROUP_CREATED',
    'WORKSPACE_USER_GROUP_UPDATED',
  ]);
  const other = await secondUser(d);
  const mine = (await app.user.createChannel('launch')).body.channel.id as string;
  const theirs = (await (await installPlatformApp(d, { as: other })).user.createChannel('theirs')).body.channel
    .id as string;
  const { cookie, csrf } = await signIn(d);
  const get = (path: string) => fetch(d.url + path, { headers: { cookie }, redirect: 'manual' });
  const post = (path: string, fields: Array<[string, string]>, token = csrf) =>
    fetch(d.url + path, {
      method: 'POST',
      headers: { cookie },
      body: new URLSearchParams([['csrf', token], ...fields]),
      redirect: 'manual',
    });
  const kinds = () => rx.received.map((r) => r.body.eventType);

  const ws = await (await get('/console/channels/' + encodeURIComponent(mine))).text();
  t.match(ws, /<a href="\/console\/manage">Channels and groups<\/a>/, 'linked from the workspace');
  let html = await (await get('/console/manage')).text();
  t.match(html, /<h1>Channels and groups<\/h1>/);
  t.match(
    html,
    new RegExp(
      `action="/console/manage/channels/${mine}/archive"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Archive #launch</button>`,
    ),
    'archive, a CSRF form',
  );
  t.match(
    html,
    new RegExp(`href="/console/manage/channels/${mine}/delete">Delete #launch…</a>`),
    'delete, for its creator',
  );
  t.notMatch(html, /Archive #general/, 'general cannot be archived');
  t.notMatch(html, /Delete #(general|random|theirs)/, "nor the initial channels or another person's deleted");
  t.notMatch(html, /Archive #theirs/, 'nor a channel the person is not a member of archived');
  t.match(html, /#theirs/, 'though it is listed');

  t.equal(
    (await post(`/console/manage/channels/${mine}/archive`, [], 'forged')).status,
    403,
    'without the CSRF token: refused',
  );
  t.equal(kinds().length, 0);
  const archived = await post(`/console/manage/channels/${mine}/archive`, []);
  t.equal(archived.status, 303);
  t.equal(archived.headers.get('location'), '/console/manage?done=archived');
  t.match(
    await (await get('/console/manage?done=archived')).text(),
    /<p class="ok" role="status">The channel is archived.<\/p>/,
  );
  const theirsRefused = await post(`/console/manage/channels/${theirs}/delete`, []);
  t.equal(theirsRefused.status, 403, 'a channel of another person: the page again, refused');
  t.match(
    await theirsRefused.text(),
    /<p class="error" role="alert">Only whoever created the channel can delete it.<\/p>/,
  );
  const confirm = await (await get(`/console/manage/channels/${mine}/delete`)).text();
  t.match(confirm, /Delete #launch\?/);
  t.match(confirm, new RegExp(`action="/console/manage/channels/${mine}/delete"`));
  t.equal((await post(`/console/manage/channels/${mine}/delete`, [])).status, 303);
  await rx.waitFor(2);
  t.same(kinds(), ['CHANNEL_ARCHIVED', 'CHANNEL_DELETED']);
  t.match(JSON.parse(must(rx.received[0]).body.body), { cId: mine, uId: d.workspaceUserId, ty: 'CHANNEL_ARCHIVED' });
  t.match(JSON.parse(must(rx.received[1]).body.body), {
    m: [d.workspaceUserId],
    wId: d.workspaceId,
    cId: mine,
    ty: 'CHANNEL_DELETED',
    rid: /^req_/,
  });

  html = await (await get('/console/manage')).text();
  t.match(html, /No groups yet/);
  t.match(
    html,
    new RegExp(`<input type="checkbox" name="members" value="${other.id}"> Second User`),
    "the workspace's users to choose from",
  );
  const created = await post('/console/manage/groups', [
    ['name', 'Design crew'],
    ['handle', ''],
    ['description', 'pixels'],
    ['members', d.workspaceUserId],
    ['members', other.id],
  ]);
  t.equal(created.status, 303);
  const [group] = (await app.bot.listUserGroups()).body;
  t.match(
    group,
    {
      name: 'Design crew',
      handle: 'design-crew',
      description: 'pixels',
      disabled: false,
      workspaceUserIds: [d.workspaceUserId, other.id],
    },
    'apps list it',
  );
  const saved = await post(`/console/manage/groups/${group.id}`, [
    ['name', 'Design crew'],
    ['handle', 'design'],
    ['description', 'pixels'],
    ['members', other.id],
    ['disabled', 'true'],
  ]);
  t.equal(saved.status, 303);
  t.match((await app.bot.listUserGroups()).body, [
    { id: group.id, handle: 'design', disabled: true, workspaceUserIds: [other.id] },
  ]);
  await rx.waitFor(4);
  t.same(kinds().slice(2), ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED']);
  t.match(JSON.parse(must(rx.received[3]).body.body), { id: group.id, h: 'design', di: true, uIds: [other.id] });

  const taken = await post('/console/manage/groups', [
    ['name', 'Copycats'],
    ['handle', 'design'],
  ]);
  t.equal(taken.status, 400, 'a taken handle');
  const again = await taken.text();
  t.match(again, /<p class="error" role="alert">A group with the handle design already exists.<\/p>/);
  t.match(again, /id="g-new-name" name="name" value="Copycats"/, 'what was typed is kept');
  t.equal((await app.bot.listUserGroups()).body.length, 1, 'nothing made');
  t.equal(rx.received.length, 4, 'and no event');
});
