/** Actions make events for subscribed apps; rate limits; messages survive a restart and are bounded per channel. */
import fs from 'node:fs';
import t from 'tap';
import { eventsSent, startTestDaemon, tempDir } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const EVENTS = [
  'NEW_MESSAGE',
  'UPDATED_MESSAGE',
  'REACTION_ADDED',
  'CHANNEL_CREATED',
  'CHANNEL_ARCHIVED',
  'CHANNEL_DELETED',
];

t.test(
  'app A posts through the API; subscribed app B receives NEW_MESSAGE, signed, with the real body and the right users',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    rx.on('/events', { text: 'ok' });
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const other = await secondUser(d);
    const a = await installPlatformApp(d, { name: 'poster' });
    const b = await installPlatformApp(d, { name: 'listener', events: EVENTS, eventsUrl: `${rx.url}/events` });
    rx.secret = b.app.signingSecret;
    await installPlatformApp(d, { name: 'listener-2', as: other }); // another app, not subscribed: nothing for it
    const general = (await a.bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;

    const posted = await a.bot.postMessageToChannel(general, 'build #42 is green');
    const [ev] = await rx.waitFor(1);
    t.ok(must(ev).signatureValid, 'signed with B’s signing secret');
    t.match(must(ev).body, {
      messageType: 'PUMBLE_EVENT',
      eventType: 'NEW_MESSAGE',
      workspaceId: d.workspaceId,
      workspaceUserIds: [d.workspaceUserId],
    });
    t.type(must(ev).body.body, 'string', 'the body is a JSON string');
    const { rid, ...body } = JSON.parse(must(ev).body.body);
    t.match(rid, /^req_/, 'the request that made it');
    t.same(body, {
      mId: posted.body.id,
      wId: d.workspaceId,
      cId: general,
      aId: a.tokens.botId,
      tx: 'build #42 is green',
      bl: [],
      ty: 'NEW_MESSAGE',
      ts: posted.body.timestamp,
      tsm: posted.body.timestampMilli,
      f: [],
      att: [],
      md: [],
      mc: [],
      mu: [],
      e: false,
      eph: false,
    });

    await a.bot.editMessage(posted.body.id, general, 'build #42 is green (edited)');
    await a.user.addReaction(posted.body.id, ':rocket:');
    const reply = await a.user.reply(posted.body.id, general, 'nice');
    const evs = await rx.waitFor(4);
    const byType = (ty: string) => evs.filter((e) => e.body.eventType === ty).map((e) => JSON.parse(e.body.body));
    t.match(byType('UPDATED_MESSAGE')[0], {
      mId: posted.body.id,
      tx: 'build #42 is green (edited)',
      e: true,
      ty: 'UPDATED_MESSAGE',
    });
    t.match(byType('REACTION_ADDED')[0], {
      wId: d.workspaceId,
      cId: general,
      mId: posted.body.id,
      mat: a.tokens.botId,
      uId: d.workspaceUserId,
      rc: ':rocket:',
      ty: 'REACTION_ADDED',
    });
    t.match(byType('NEW_MESSAGE')[1], { mId: reply.body.id, trId: posted.body.id, aId: d.workspaceUserId });

    // a private channel only the other user is in: B's authorized user cannot see it, so B hears nothing
    const o = await installPlatformApp(d, { name: 'other-users-app', as: other });
    const priv = await o.user.createChannel('just-me', 'PRIVATE');
    await o.user.postMessageToChannel(priv.body.channel.id, 'private note');
    // a person posting (what the CLI will use) is an event too
    await d.parts.workspace.postAsUser(other.id, '#random', { text: 'said by a person' });
    const more = await rx.waitFor(5);
    await eventsSent(d);
    t.equal(rx.received.length, 5, 'nothing about the private channel');
    t.match(JSON.parse(must(more[4]).body.body), { aId: other.id, tx: 'said by a person', ty: 'NEW_MESSAGE' });
    t.ok(rx.received.every((r) => r.signatureValid));
    const log = (await (await d.api(`${d.mgmt}/deliveries?appId=${b.app.id}`)).json()) as Array<{
      kind: string;
      state: string;
    }>;
    t.equal(
      log.filter((x) => x.kind === 'event' && x.state === 'delivered').length,
      5,
      'through the one delivery engine and its log',
    );
  },
);

t.test('channel events, and an app without the scope or the subscription gets nothing', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  rx.on('/events', { text: 'ok' });
  rx.on('/no-scope', { text: 'ok' });
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const b = await installPlatformApp(d, { events: EVENTS, eventsUrl: `${rx.url}/events` });
  rx.secret = b.app.signingSecret;
  // subscribes to REACTION_ADDED and holds reaction:read in its manifest, but the user granted it without it and it has
  // no bot scopes for it
  await installPlatformApp(d, {
    userScopes: ['reaction:read', 'messages:read'],
    botScopes: ['messages:read'],
    events: ['NEW_MESSAGE'],
    eventsUrl: `${rx.url}/no-scope`,
  });
  const created = await b.user.createChannel('ops');
  const c = created.body.channel.id;
  await d.parts.workspace.archiveChannel(d.workspaceUserId, c);
  await d.parts.workspace.deleteChannel(d.workspaceUserId, c);
  const evs = await rx.waitFor(3);
  const bodies = evs.filter((e) => e.path === '/events').map((e) => JSON.parse(e.body.body));
  t.match(bodies[0], {
    wId: d.workspaceId,
    cId: c,
    cN: 'ops',
    cU: [d.workspaceUserId],
    cT: 'PUBLIC',
    ty: 'CHANNEL_CREATED',
  });
  t.match(bodies[1], { cId: c, v: true, uId: d.workspaceUserId, m: [d.workspaceUserId], ty: 'CHANNEL_ARCHIVED' });
  t.match(bodies[2], { wId: d.workspaceId, cId: c, ty: 'CHANNEL_DELETED' });
  t.equal((await b.user.getChannelDetails(c)).status, 404, 'a deleted channel is gone');
  t.equal(rx.received.filter((r) => r.path === '/no-scope').length, 0, 'not subscribed to channel events: nothing');
});

t.test(
  'rate limits: 80 messages a minute per app and workspace, 60 channels; 429 with Retry-After, then the window passes',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const { bot, user } = await installPlatformApp(d);
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const statuses = await Promise.all(
      Array.from({ length: 80 }, (_, i) => bot.postMessageToChannel(general, `m${i}`).then((r) => r.status)),
    );
    t.ok(
      statuses.every((s) => s === 200),
      '80 pass',
    );
    const over = await user.postMessageToChannel(general, 'one too many');
    t.equal(over.status, 429, 'the 81st message of the app (whatever its token) is refused');
    t.equal(over.body.code, 'rate_limited');
    t.ok(
      Number(over.headers.get('retry-after')) >= 1 && Number(over.headers.get('retry-after')) <= 60,
      'Retry-After in seconds',
    );
    // Retry-After counts down to the end of the window, whichever token and however often asked
    const left = Number(over.headers.get('retry-after'));
    clock.set(clock.now() + 20_000);
    const later = await bot.postMessageToChannel(general, 'still too many');
    t.equal(later.status, 429);
    t.equal(Number(later.headers.get('retry-after')), left - 20, '20 s later, 20 s less');
    clock.set(clock.now() + (left - 20 - 1) * 1000); // one second before the window ends
    t.equal(
      (await user.postMessageToChannel(general, 'almost')).headers.get('retry-after'),
      '1',
      'a second before the end: 1',
    );
    t.equal((await bot.fetchMessages(general)).status, 200, 'reading is not limited by the message limit');
    clock.set(clock.now() + 1_000);
    t.equal((await bot.postMessageToChannel(general, 'next minute')).status, 200, 'a new window');
    const made = await Promise.all(
      Array.from({ length: 60 }, (_, i) => bot.createChannel(`c-${i}`).then((r) => r.status)),
    );
    t.ok(made.every((s) => s === 200));
    const tooMany = await bot.createChannel('c-60');
    t.equal(tooMany.status, 429);
    t.ok(tooMany.headers.get('retry-after'));
  },
);

t.test('platformRateLimits=false switches the platform limits off (load tests, benchmarks)', async (t) => {
  const d = await startTestDaemon({ config: { platformRateLimits: false } });
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d);
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const statuses = await Promise.all(
    Array.from({ length: 100 }, (_, i) => bot.postMessageToChannel(general, `m${i}`).then((r) => r.status)),
  );
  t.ok(
    statuses.every((s) => s === 200),
    '100 messages in a minute, none refused',
  );
});

t.test('messages survive a restart; a channel keeps at most workspaceMessagesPerChannel', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  let d = await startTestDaemon({ dataDir, config: { workspaceMessagesPerChannel: 3 } });
  const { bot, app, tokens } = await installPlatformApp(d);
  const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
  const ids: string[] = [];
  for (let i = 1; i <= 4; i++) ids.push((await bot.postMessageToChannel(general, `m${i}`)).body.id);
  const root = must(ids[3]);
  await bot.reply(root, general, 'r1');
  const kept = await bot.fetchMessages(general, undefined, 10);
  t.same(
    kept.body.messages.map((m: any) => m.text),
    ['m3', 'm4'],
    'the oldest go first (the reply counts in the bound)',
  );
  t.equal((await bot.fetchMessage(must(ids[0]), general)).status, 404);
  await d.stop();

  d = await startTestDaemon({ dataDir, config: { workspaceMessagesPerChannel: 3 } });
  t.teardown(() => d.stop());
  const { platformClient } = await import('../helpers/platform-client.js');
  const again = platformClient(d.url, must(tokens.botToken), app.appKey);
  const after = await again.fetchMessages(general, undefined, 10);
  t.same(
    after.body.messages.map((m: any) => m.text),
    ['m3', 'm4'],
    'the same messages after a restart',
  );
  t.match(after.body.messages[1].threadRootInfo, { repliesCount: 1 });
  t.same(
    (await again.fetchThreadReplies(root, general)).body.map((m: any) => m.text),
    ['r1'],
  );
  const next = await again.postMessageToChannel(general, 'm5');
  t.equal(next.status, 200);
  const last = await again.fetchMessages(general, undefined, 10);
  t.same(
    last.body.messages.map((m: any) => m.text),
    ['m4', 'm5'],
    'posting order continues after the restart',
  );
});

t.test('a user joining the workspace: WORKSPACE_USER_JOINED to apps subscribed with user:read', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  rx.on('/events', { text: 'ok' });
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const b = await installPlatformApp(d, { events: ['WORKSPACE_USER_JOINED'], eventsUrl: `${rx.url}/events` });
  rx.secret = b.app.signingSecret;
  const other = await secondUser(d);
  const [ev] = await rx.waitFor(1);
  t.ok(must(ev).signatureValid);
  t.match(must(ev).body, {
    eventType: 'WORKSPACE_USER_JOINED',
    workspaceId: d.workspaceId,
    workspaceUserIds: [d.workspaceUserId],
  });
  t.match(JSON.parse(must(ev).body.body), {
    uId: other.id,
    uE: other.email,
    uN: 'Second User',
    wId: d.workspaceId,
    ty: 'WORKSPACE_USER_JOINED',
  });
});
