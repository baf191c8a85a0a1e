/** Channels, users and the workspace through the platform API; what each token may see; the scope each call needs. */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { secondUser, secondWorkspace } from '../fixtures/redirects-flow.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

t.test('channels: create, details, members, direct and self channels, types filter', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const other = await secondUser(d);
  const { user, tokens } = await installPlatformApp(d);
  const created = await user.createChannel('release-train', 'PUBLIC', 'Where releases are announced');
  t.equal(created.status, 200);
  t.match(created.body, {
    channel: {
      name: 'release-train',
      channelType: 'PUBLIC',
      description: 'Where releases are announced',
      isMember: true,
      addedById: d.workspaceUserId,
    },
    users: [d.workspaceUserId],
  });
  const c = created.body.channel.id;
  t.equal((await user.createChannel('Release-Train')).status, 400, 'names are unique, whatever their case');
  t.equal((await user.createChannel('bad/name')).status, 400);
  const added = await user.addUsersToChannel(c, [other.id, must(tokens.botId)]);
  t.same(added.body, { channelId: c, addedUserIds: [other.id, tokens.botId] });
  t.same((await user.addUsersToChannel(c, [other.id])).body.addedUserIds, [], 'adding a member again adds nobody');
  t.equal((await user.addUsersToChannel(c, ['wu_nobody'])).status, 400);
  const details = await user.getChannelDetails(c);
  t.same(details.body.users.sort(), [d.workspaceUserId, other.id, tokens.botId].sort());
  t.equal((await user.removeUserFromChannel(c, other.id)).status, 204);
  t.notOk((await user.getChannelDetails(c)).body.users.includes(other.id));
  const general = (await user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  t.equal((await user.removeUserFromChannel(general, other.id)).status, 400, 'everyone stays in general');

  const dm = await user.getDirectChannel(d.workspaceUserId, [other.id]);
  t.equal(dm.status, 200);
  t.match(dm.body.channel, { channelType: 'DIRECT', isMember: true });
  t.same(dm.body.users.sort(), [d.workspaceUserId, other.id].sort());
  const again = await user.createDirectChannel([other.id]);
  t.equal(again.body.channel.id, dm.body.channel.id, 'the same members are the same direct channel');
  const self = await user.getDirectChannel(d.workspaceUserId, []);
  t.equal(self.body.channel.channelType, 'SELF');
  t.equal(
    (await user.postMessageToChannel(dm.body.channel.id, 'hi')).status,
    200,
    'a DM can be written to (the SDK dmUser path)',
  );

  const direct = await user.listChannels('DIRECT,SELF');
  t.same(direct.body.map((x: any) => x.channel.channelType).sort(), ['DIRECT', 'SELF']);
  t.equal((await user.listChannels('GROUP')).status, 400);
});

t.test(
  'GET /v1/channels/direct/list: the direct channels the token’s user is in, as bot and as user; channels:list',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const other = await secondUser(d);
    const { user, bot, tokens } = await installPlatformApp(d);
    const { user: otherUser } = await installPlatformApp(d, { as: other });
    const botId = must(tokens.botId);
    t.same((await user.listAllDirectChannels()).body, [], 'none yet');

    const withOther = (await user.createDirectChannel([other.id])).body.channel.id;
    const withBot = (await user.createDirectChannel([botId])).body.channel.id;
    const botAndOther = (await bot.createDirectChannel([other.id])).body.channel.id;
    await user.getDirectChannel(d.workspaceUserId, []); // the user's SELF channel: not a direct one
    await user.createChannel('not-direct', 'PRIVATE');

    const mine = await user.listAllDirectChannels();
    t.equal(mine.status, 200);
    t.same(mine.body.map((x: any) => x.channel.id).sort(), [withOther, withBot].sort(), 'the user’s, no one else’s');
    t.ok(
      mine.body.every((x: any) => x.channel.channelType === 'DIRECT' && x.channel.isMember && x.users.length === 2),
      'V1.ChannelInfo of each, the caller a member',
    );
    t.same(mine.body, (await user.listChannels('DIRECT')).body, 'the same answer as listChannels(["DIRECT"])');
    t.same(
      (await bot.listAllDirectChannels()).body.map((x: any) => x.channel.id).sort(),
      [withBot, botAndOther].sort(),
      'as the bot: the bot user’s own',
    );
    t.same(
      (await otherUser.listAllDirectChannels()).body.map((x: any) => x.channel.id).sort(),
      [withOther, botAndOther].sort(),
    );

    const { user: noScope, bot: noScopeBot } = await installPlatformApp(d, {
      name: 'no list',
      userScopes: ['channels:read'],
      botScopes: ['channels:read'],
    });
    for (const [who, c] of [
      ['user', noScope],
      ['bot', noScopeBot],
    ] as const) {
      const refused = await c.listAllDirectChannels();
      t.equal(refused.status, 403, `${who} without channels:list`);
      t.match(refused.body, { code: 'missing_scope', message: /channels:list/ });
    }
    const noKey = await fetch(`${d.url}/v1/channels/direct/list`, {
      headers: { token: 'abt_nope', 'x-app-token': 'x' },
    });
    t.equal(noKey.status, 401);
  },
);

t.test('visibility: a private channel is not found by a non-member user token nor by a bot not in it', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const other = await secondUser(d);
  const { user: owner, bot, tokens } = await installPlatformApp(d);
  const { user: outsider } = await installPlatformApp(d, { as: other });
  const priv = await owner.createChannel('secret-plans', 'PRIVATE');
  const c = priv.body.channel.id;
  const m = await owner.postMessageToChannel(c, 'the plan');
  for (const [who, client] of [
    ['another user', outsider],
    ['the bot', bot],
  ] as const) {
    const list = await client.listChannels();
    t.notOk(
      list.body.some((x: any) => x.channel.id === c),
      `${who} does not list it`,
    );
    for (const res of [
      await client.getChannelDetails(c),
      await client.fetchMessages(c),
      await client.fetchMessage(m.body.id, c),
      await client.postMessageToChannel(c, 'hi'),
      await client.addReaction(m.body.id, ':eyes:'),
    ]) {
      t.equal(res.status, 404, `${who}: 404, not 403`);
      t.equal(res.body.code, 'not_found');
    }
    t.equal((await client.searchMessages({ text: 'plan' })).body.totalElements, 0, `${who} does not find it by search`);
  }
  await owner.addUsersToChannel(c, [must(tokens.botId)]);
  t.equal((await bot.fetchMessages(c)).status, 200, 'once added, the bot reads it');
  t.equal((await bot.postMessageToChannel(c, 'bot here')).status, 200, 'and writes in it');
  t.equal((await outsider.getChannelDetails(c)).status, 404, 'still hidden from the other user');
});

t.test('users and the workspace', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const other = await secondUser(d);
  const { user, tokens } = await installPlatformApp(d);
  const list = await user.listWorkspaceUsers();
  t.equal(list.status, 200);
  t.same(list.body.map((u: any) => u.id).sort(), [d.workspaceUserId, other.id, tokens.botId].sort());
  const bot = list.body.find((u: any) => u.id === tokens.botId);
  t.match(bot, { isAddonBot: true, workspaceId: d.workspaceId, status: 'ACTIVE' });
  const one = await user.userInfo(other.id);
  t.match(one.body, {
    id: other.id,
    email: other.email,
    name: 'Second User',
    workspaceId: d.workspaceId,
    role: 'USER',
    avatar: { fullPath: '', scaledPath: '' },
    isAddonBot: false,
  });
  t.equal((await user.userInfo('wu_nobody')).status, 404);
  const ws = await user.getWorkspaceInfo();
  t.match(ws.body, {
    id: d.workspaceId,
    name: 'Local workspace',
    uniqueIdentifier: 'local-workspace',
    customStatusDefinitions: [],
  });
});

t.test('scopes: a call without its scope is 403 missing_scope naming it; bad credentials are 401', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot } = await installPlatformApp(d, {
    userScopes: ['messages:read'],
    botScopes: ['messages:write', 'channels:list'],
  });
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const cases: Array<[string, Promise<any>]> = [
    ['messages:write', user.postMessageToChannel(general, 'x')],
    ['channels:list', user.listChannels()],
    ['channels:read', bot.fetchMessages(general)],
    ['messages:edit', bot.editMessage('msg_x', general, 'y')],
    ['messages:delete', bot.deleteMessage('msg_x', general)],
    ['attachments:write', bot.editAttachments('msg_x', general, [])],
    ['reaction:write', bot.addReaction('msg_x', ':x:')],
    ['channels:write', bot.createChannel('nope')],
    ['users:list', bot.listWorkspaceUsers()],
    ['user:read', bot.userInfo('wu_x')],
    ['workspace:read', bot.getWorkspaceInfo()],
    ['messages:read', bot.searchMessages({})],
  ];
  for (const [scope, p] of cases) {
    const res = await p;
    t.equal(res.status, 403, scope);
    t.equal(res.body.code, 'missing_scope');
    t.match(res.body.message, scope, `the message names ${scope}`);
  }
  const posted = await bot.postMessageToChannel(general, 'with the scope it works');
  t.equal(posted.status, 200);
  t.equal((await user.fetchMessage(posted.body.id, general)).status, 200, 'messages:read is enough to get one message');
  const noKey = await fetch(`${d.url}/v1/channels`, { headers: { token: 'abt_nope', 'x-app-token': 'apk_nope' } });
  t.equal(noKey.status, 401);
  t.equal(((await noKey.json()) as any).code, 'unauthenticated');
});

t.test(
  'a token acts in its own workspace only: another workspace’s channels, messages and users are not found',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const ws2 = await secondWorkspace(d);
    const here = await installPlatformApp(d);
    const there = await installPlatformApp(d, {
      as: ws2.as,
    });
    const general1 = (await here.user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const general2 = (await there.user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    t.not(general1, general2, 'each workspace has its own general');
    const m = await here.user.postMessageToChannel(general1, 'workspace one only');
    t.equal((await there.user.getChannelDetails(general1)).status, 404);
    t.equal((await there.bot.fetchMessage(m.body.id, general1)).status, 404);
    t.equal((await there.bot.addReaction(m.body.id, ':eyes:')).status, 404);
    t.equal((await there.user.userInfo(d.workspaceUserId)).status, 404);
    t.equal((await there.user.searchMessages({ text: 'workspace one' })).body.totalElements, 0);
    t.same(
      (await there.user.listWorkspaceUsers()).body.map((u: any) => u.workspaceId).filter((w: string) => w !== ws2.id),
      [],
      'only its own users',
    );
  },
);
