/**
 * Messages through the platform API as the official SDK calls it: post, list, get, edit, delete, threads, ephemeral,
 * reactions, search.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

t.test('messages: post, list with a cursor, get, edit, delete', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot, tokens } = await installPlatformApp(d);
  const chans = await user.listChannels();
  t.equal(chans.status, 200);
  const general = chans.body.find((c: any) => c.channel.name === 'general');
  t.ok(general, 'general exists on first use');
  t.ok(
    chans.body.find((c: any) => c.channel.name === 'random'),
    'random too',
  );
  t.match(general.channel, {
    channelType: 'PUBLIC',
    workspaceId: d.workspaceId,
    isMember: true,
    isMain: true,
    isArchived: false,
  });
  t.ok(
    general.users.includes(d.workspaceUserId) && general.users.includes(tokens.botId),
    'every user and the bot are members of general',
  );
  const c = general.channel.id;

  const posted = await bot.postMessageToChannel(c, 'hello from the bot');
  t.equal(posted.status, 200);
  t.match(posted.body, {
    channelId: c,
    workspaceId: d.workspaceId,
    author: tokens.botId,
    text: 'hello from the bot',
    edited: false,
    reactions: [],
    files: [],
    blocks: [],
    attachments: [],
  });
  t.match(posted.body.id, /^msg_/);
  t.equal(new Date(posted.body.timestamp).getTime(), posted.body.timestampMilli, 'ISO timestamp and epoch ms agree');
  const second = await user.postMessageToChannel(c, 'second', { blocks: [{ type: 'rich_text', elements: [] }] });
  const third = await user.postMessageToChannel(c, 'third');

  const latest = await user.fetchMessages(c);
  t.equal(latest.status, 200);
  t.same(
    latest.body.messages.map((m: any) => m.text),
    ['third'],
    'the SDK default (limit 1, BEFORE, no cursor) is the latest message',
  );
  t.equal(latest.body.hasMoreBefore, true);
  const before = await user.fetchMessages(c, third.body.id, 10);
  t.same(
    before.body.messages.map((m: any) => m.text),
    ['hello from the bot', 'second'],
    'BEFORE the cursor, oldest first',
  );
  const after = await user.fetchMessages(c, posted.body.id, 10, 'AFTER');
  t.same(
    after.body.messages.map((m: any) => m.text),
    ['second', 'third'],
  );
  t.equal((await user.fetchMessages(c, 'msg_nope', 10)).status, 400, 'an unknown cursor is a bad request');

  const got = await user.fetchMessage(second.body.id, c);
  t.equal(got.status, 200);
  t.same(got.body.blocks, [{ type: 'rich_text', elements: [] }]);

  const edited = await user.editMessage(second.body.id, c, 'second, edited');
  t.equal(edited.status, 200);
  t.match(edited.body, { text: 'second, edited', edited: true });
  const notMine = await bot.editMessage(second.body.id, c, 'hijack');
  t.equal(notMine.status, 403, 'only the author edits');
  t.equal(notMine.body.code, 'forbidden');

  const atts = await bot.editAttachments(posted.body.id, c, [{ title: 'Report', text: 'all good', color: '#00ff00' }]);
  t.equal(atts.status, 200);
  t.same(atts.body.attachments, [{ title: 'Report', text: 'all good', color: '#00ff00' }]);

  t.equal((await user.deleteMessage(third.body.id, c)).status, 204);
  t.equal((await user.fetchMessage(third.body.id, c)).status, 404, 'a deleted message is gone');
  t.equal(
    (await user.fetchMessage(second.body.id, 'ch_other')).status,
    404,
    'a message is looked up in its own channel',
  );
  const empty = await user.postMessageToChannel(c, '   ');
  t.equal(empty.status, 400);
  t.equal(empty.body.code, 'invalid_request');
});

t.test('thread replies count on the root, and are listed by /replies, not in the channel', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot, tokens } = await installPlatformApp(d);
  const c = (await user.listChannels('PUBLIC')).body.find((x: any) => x.channel.name === 'random').channel.id;
  const root = await user.postMessageToChannel(c, 'question?');
  const r1 = await bot.reply(root.body.id, c, 'answer 1');
  t.equal(r1.status, 200);
  t.match(r1.body, { threadReplyInfo: { rootId: root.body.id, replySentToChannel: false } });
  await user.reply(root.body.id, c, 'answer 2', { alsoSendToChannel: true });
  const replies = await user.fetchThreadReplies(root.body.id, c);
  t.equal(replies.status, 200);
  t.same(
    replies.body.map((m: any) => m.text),
    ['answer 1', 'answer 2'],
  );
  const rootNow = await user.fetchMessage(root.body.id, c);
  t.match(rootNow.body.threadRootInfo, { repliesCount: 2, repliers: [tokens.botId, d.workspaceUserId] });
  const listed = await user.fetchMessages(c, undefined, 50);
  t.same(
    listed.body.messages.map((m: any) => m.text),
    ['question?', 'answer 2'],
    'only a reply also sent to the channel shows in it',
  );
  t.equal((await user.deleteMessage(root.body.id, c)).status, 204);
  t.equal((await user.fetchThreadReplies(root.body.id, c)).status, 404, 'deleting the root removes its thread');
});

t.test('thread replies page by cursor, limit and strategy as the SDK sends them (BEFORE, AFTER, AROUND)', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user } = await installPlatformApp(d);
  const c = (await user.listChannels('PUBLIC')).body.find((x: any) => x.channel.name === 'random').channel.id;
  const root = (await user.postMessageToChannel(c, 'root')).body.id;
  const r: string[] = [];
  for (let i = 1; i <= 5; i++) r.push((await user.reply(root, c, `reply ${i}`)).body.id);
  const texts = async (cursor?: string, limit?: number, strategy?: string) => {
    const res = await user.fetchThreadReplies(root, c, cursor, limit, strategy);
    t.equal(res.status, 200, `${strategy ?? 'no strategy'} ${cursor ?? 'no cursor'}`);
    return res.body.map((m: any) => m.text);
  };
  t.same(await texts(r[1], 10, 'BEFORE'), ['reply 1'], 'BEFORE reply 2: only what comes before it');
  t.same(await texts(r[3], 2, 'BEFORE'), ['reply 2', 'reply 3'], 'the limit nearest the cursor, oldest first');
  t.same(await texts(r[1], 10, 'AFTER'), ['reply 3', 'reply 4', 'reply 5']);
  t.same(await texts(r[1], 10), ['reply 3', 'reply 4', 'reply 5'], 'no strategy reads after the cursor');
  t.same(
    await texts(r[2], 3, 'AROUND'),
    ['reply 2', 'reply 3', 'reply 4'],
    'AROUND centres on the cursor, which it includes',
  );
  t.same(await texts(undefined, 2, 'BEFORE'), ['reply 4', 'reply 5'], 'BEFORE without a cursor: the latest');
  t.same(await texts(undefined, 2), ['reply 1', 'reply 2'], 'without either: the first');
  const bad = await user.fetchThreadReplies(root, c, r[0], 10, 'SIDEWAYS');
  t.equal(bad.status, 400);
  t.match(bad.body, { code: 'invalid_request', details: [{ pointer: '/strategy' }] });
});

t.test(
  'an ephemeral message is seen only by its recipients (and its author), and can be deleted for them',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const other = await secondUser(d);
    const { bot } = await installPlatformApp(d);
    const { user: otherClient } = await installPlatformApp(d, { as: other });
    const { user: ownerClient } = await installPlatformApp(d);
    const c = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const eph = await bot.postEphemeral(c, 'only you can see this', d.workspaceUserId);
    t.equal(eph.status, 200);
    t.equal((await ownerClient.fetchMessage(eph.body.id, c)).status, 200, 'the recipient sees it');
    t.equal((await otherClient.fetchMessage(eph.body.id, c)).status, 404, 'another user does not');
    t.same((await otherClient.fetchMessages(c, undefined, 50)).body.messages, [], 'nor in the channel listing');
    t.equal((await ownerClient.fetchMessages(c, undefined, 50)).body.messages.length, 1);
    t.equal(
      (await bot.postEphemeral(c, 'x', 'wu_nobody')).status,
      400,
      'recipients must be users who can see the channel',
    );
    t.equal((await bot.deleteEphemeralMessage(eph.body.id, c, [d.workspaceUserId])).status, 204);
    t.equal((await ownerClient.fetchMessage(eph.body.id, c)).status, 404, 'deleted for the recipient');
  },
);

t.test('reactions and search', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot } = await installPlatformApp(d);
  const c = (await user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const m = await user.postMessageToChannel(c, 'deploy finished');
  await bot.postMessageToChannel(c, 'lunch?');
  t.equal((await bot.addReaction(m.body.id, ':tada:')).status, 204);
  t.equal((await bot.addReaction(m.body.id, ':tada:')).status, 204, 'the same reaction twice is one reaction');
  t.equal((await bot.addReaction(m.body.id, 'tada')).status, 400, 'a code is :name:');
  t.same((await user.fetchMessage(m.body.id, c)).body.reactions, [
    { user: (await bot.call('GET', '/oauth2/me')).body.workspaceUserId, code: ':tada:' },
  ]);
  t.equal((await bot.removeReaction(m.body.id, ':tada:')).status, 204);
  t.same((await user.fetchMessage(m.body.id, c)).body.reactions, []);
  const found = await user.searchMessages({ text: 'DEPLOY' });
  t.equal(found.status, 200);
  t.match(found.body, { totalElements: 1, hasMore: false });
  t.equal(found.body.content[0].id, m.body.id);
  const all = await user.searchMessages({ in: [c], strategy: 'OLDEST', limit: 1 });
  t.match(all.body, { totalElements: 2, hasMore: true });
  t.equal(all.body.content[0].text, 'deploy finished');
  t.equal((await user.searchMessages({ limit: 50 })).status, 400, 'limit is at most 20');
  t.same(
    (await user.searchMessages({ fromHumanOnly: true })).body.content.map((m: any) => m.text),
    ['deploy finished'],
    'fromHumanOnly leaves bots out',
  );
  // a `from` or `in` that is not a list is refused with its pointer (it was a 500: the validator went on to iterate it)
  for (const body of [{ from: true }, { from: 1 }, { in: 0 }, { in: {} }, { from: 'wu_x' }]) {
    const r = await user.searchMessages(body);
    const key = Object.keys(body)[0];
    t.equal(r.status, 400, `${JSON.stringify(body)} is 400`);
    t.match(
      r.body,
      { code: 'invalid_request', details: [{ pointer: `/${key}` }] },
      `${JSON.stringify(body)} names /${key}`,
    );
  }
});

t.test(
  'a test trigger names the workspace’s general channel by default, so the app can answer there through the API',
  async (t) => {
    const { startReceiver } = await import('../helpers/receiver.js');
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const { app, bot } = await installPlatformApp(d, {
      manifest: { slashCommands: [{ command: '/standup', url: `${rx.url}/slash`, description: 'Stand-up' }] },
    });
    rx.on('/slash', { json: {} });
    const sent = await d.api(`${d.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command', command: '/standup', text: 'now' },
    });
    t.equal(sent.status, 201);
    const [trigger] = await rx.waitFor(1);
    const channelId = must(trigger).body.channelId;
    const said = await bot.postEphemeral(channelId, 'Stand-up starts now', must(trigger).body.userId);
    t.equal(said.status, 200, 'ctx.say() to the trigger’s channel works');
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    t.equal(channelId, general);
  },
);
