/**
 * Every event the daemon can send, made to happen for real and made up by deliver-test, matches
 * its schema under schemas/events/ (the shapes of the official SDK's event types), and carries
 * what the platform fills in: a message's mentions (md, mc, mu), a reply's root text (trMt), the
 * request id (rid), a deleted channel's members (m), who changed a group (uId).
 */
import t from 'tap';
import { manifest, type TestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { PLATFORM_SCOPES } from '../helpers/platform-client.js';
import { daemonWithListener } from '../helpers/listening-app.js';
import { secondUser, type CreatedApp } from '../fixtures/redirects-flow.js';
import { bodyProblems, EVENT_TYPES, eventProblems } from '../helpers/event-schemas.js';
import { EVENT_SCOPES } from '../../src/validation/manifest.js';
import { must } from '../../src/must.js';

const person = (d: TestDaemon) => async (method: string, path: string, json?: unknown) => {
  const res = await d.api(`${d.mgmt}${path}`, { method, json });
  return { status: res.status, body: res.status === 204 ? undefined : ((await res.json()) as any) };
};

t.test('every event type the daemon knows has a schema', async (t) => {
  t.same(EVENT_TYPES, Object.keys(EVENT_SCOPES).sort());
});

t.test('the schemas refuse what the daemon sent before: no mentions, no rid, no m, no uId', async (t) => {
  const old = {
    mId: 'msg_1',
    wId: 'ws_1',
    cId: 'ch_1',
    aId: 'wu_1',
    tx: 'hi',
    bl: [],
    ty: 'NEW_MESSAGE',
    ts: '2026-01-01T00:00:00.000Z',
    tsm: 1767225600000,
    f: [],
    att: [],
    e: false,
    eph: false,
  };
  t.match(bodyProblems('NEW_MESSAGE', old).join('\n'), /rid[\s\S]*md[\s\S]*mc[\s\S]*mu/);
  const mentioned = { ...old, rid: 'req_1', md: [], mc: [], mu: [] };
  t.same(bodyProblems('NEW_MESSAGE', mentioned), []);
  t.match(bodyProblems('NEW_MESSAGE', { ...mentioned, trId: 'msg_0', stc: false }).join(), /trMt/, 'a reply has trMt');
  t.match(bodyProblems('NEW_MESSAGE', { ...mentioned, ty: 'UPDATED_MESSAGE' }).join(), /constant/);
  t.match(bodyProblems('NEW_MESSAGE', { ...mentioned, extra: 1 }).join(), /extra/, 'nothing the SDK does not declare');
  t.match(bodyProblems('CHANNEL_DELETED', { wId: 'ws_1', cId: 'ch_1', ty: 'CHANNEL_DELETED', rid: 'r' }).join(), /'m'/);
  const group = { wId: 'w', cbId: 'u', id: 'g', n: 'n', h: 'h', d: '', di: false, uIds: [], cIds: [], rid: 'r' };
  t.same(bodyProblems('WORKSPACE_USER_GROUP_CREATED', { ...group, ty: 'WORKSPACE_USER_GROUP_CREATED' }), []);
  t.match(bodyProblems('WORKSPACE_USER_GROUP_UPDATED', { ...group, ty: 'WORKSPACE_USER_GROUP_UPDATED' }).join(), /uId/);
});

t.test('a test app fails the test when an event it receives does not match its schema', async (t) => {
  const rx = await startReceiver();
  const body = JSON.stringify({ wId: 'ws_1', cId: 'ch_1', ty: 'CHANNEL_DELETED' });
  const sent = {
    messageType: 'PUMBLE_EVENT',
    eventType: 'CHANNEL_DELETED',
    workspaceId: 'ws_1',
    workspaceUserIds: [],
    body,
  };
  await fetch(`${rx.url}/events`, { method: 'POST', body: JSON.stringify(sent) });
  t.same(eventProblems(sent).length > 0, true);
  await t.rejects(rx.waitFor(1), /CHANNEL_DELETED body \/ must have required property 'm'/);
  await t.rejects(rx.close(), /do not match schemas\/events/, 'and at its close');
});

t.test(
  'events made to happen and events made up: each matches its schema, with what the platform fills in',
  async (t) => {
    const { rx, d, app: listener } = await daemonWithListener(t, [...EVENT_TYPES]);
    rx.on('/made-up', { text: 'ok' });
    const me = person(d);
    const real = (type: string) =>
      rx.received.filter((r) => r.path === '/events' && r.body.eventType === type).map((r) => JSON.parse(r.body.body));

    // people join; a group is made and changed; a status is set
    const other = await secondUser(d);
    const third = await secondUser(d);
    const group = await me('POST', '/groups', { name: 'On call', workspaceUserIds: [d.workspaceUserId, other.id] });
    t.equal(group.status, 201);
    t.equal((await me('PATCH', `/groups/${group.body.id}`, { description: 'pages at night' })).status, 200);
    const status = { code: ':tea:', status: 'Break', expiration: 'custom', expiresAt: Date.now() + 60_000 };
    t.equal((await listener.user.updateCustomStatus({ ...status, pausedNotifications: false })).status, 200);

    // a channel, a post mentioning people three ways, a reply, its edit, a reaction; the channel archived
    const ch = (await listener.user.createChannel('launch')).body.channel.id as string;
    t.equal((await listener.user.addUsersToChannel(ch, [other.id, third.id])).status, 200);
    const text = `hi <<@${third.id}>>, <<&${group.body.id}>> and <<@channel>> (not <<@wu_nobody>>)`;
    const blocks = [
      { type: 'rich_text', elements: [{ type: 'rich_text_section', elements: [{ type: 'user', user_id: other.id }] }] },
    ];
    const root = (await listener.user.postMessageToChannel(ch, text, { blocks })).body;
    const reply = (await listener.user.reply(root.id, ch, 'on it')).body;
    t.equal((await listener.user.editMessage(reply.id, ch, 'on it now')).status, 200);
    t.equal((await listener.user.addReaction(root.id, ':tada:')).status, 204);
    t.equal((await me('POST', `/channels/${ch}/archive`)).status, 200);
    // another channel, deleted
    const gone = (await listener.user.createChannel('short-lived')).body.channel.id as string;
    t.equal((await me('DELETE', `/channels/${gone}`)).status, 204);
    const workspaceEvents = 13; // two joined, two channels made, two posts, and one of each other change
    await rx.waitFor(workspaceEvents);

    // then the app is unauthorized and uninstalled (after: an unauthorized app hears no workspace events)
    const unauthorized = await fetch(`${d.url}/v1/app/authorization`, {
      method: 'DELETE',
      headers: { token: listener.tokens.accessToken, 'x-app-token': listener.app.appKey },
    });
    t.equal(unauthorized.status, 204);
    await rx.waitFor(workspaceEvents + 1);
    const uninstalled = await fetch(`${d.url}/v1/app/installation`, {
      method: 'DELETE',
      headers: { token: must(listener.tokens.botToken), 'x-app-token': listener.app.appKey },
    });
    t.equal(uninstalled.status, 204);
    await rx.waitFor(workspaceEvents + 2);

    // every event type happened for real, each body matching its schema
    for (const type of EVENT_TYPES) t.ok(real(type).length > 0, `${type} was sent`);
    for (const r of rx.received) t.same(eventProblems(r.body), [], `${r.body.eventType} matches its schema`);

    const posted = real('NEW_MESSAGE').find((b) => b.mId === root.id);
    const replied = real('NEW_MESSAGE').find((b) => b.mId === reply.id);
    t.match(posted, { mId: root.id, tx: text, md: [third.id, other.id], mu: [other.id] }, 'md: text, then blocks');
    t.same([...must(posted).mc].sort(), [other.id, third.id].sort(), '@channel reaches the members but the author');
    t.notOk('trId' in must(posted), 'a message in the channel has no thread fields');
    t.match(replied, { mId: reply.id, trId: root.id, stc: false, trMt: text, md: [], mc: [], mu: [] });
    t.match(real('UPDATED_MESSAGE')[0], { mId: reply.id, tx: 'on it now', trId: root.id, trMt: text, e: true });
    t.match(real('CHANNEL_DELETED')[0], { m: [d.workspaceUserId], cId: gone });
    t.match(real('WORKSPACE_USER_GROUP_UPDATED')[0], { uId: d.workspaceUserId, d: 'pages at night' });
    t.notOk('uId' in must(real('WORKSPACE_USER_GROUP_CREATED')[0]), 'a new group names its creator as cbId only');
    t.match(real('WORKSPACE_USER_JOINED')[0], { uId: other.id, st: 'ACTIVATED' });
    const rids = rx.received
      .filter((r) => r.body.messageType === 'PUMBLE_EVENT')
      .map((r) => JSON.parse(r.body.body).rid as string);
    t.equal(new Set(rids).size, rids.length, 'each change its own rid');

    // and every event made up by deliver-test, for an app of the caller's that subscribes to them all
    const res = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        name: 'made-up',
        scopes: { botScopes: PLATFORM_SCOPES, userScopes: [] },
        eventSubscriptions: { url: `${rx.url}/made-up`, events: [...EVENT_TYPES] },
      }),
    });
    const madeUp = (await res.json()) as CreatedApp;
    for (const event of EVENT_TYPES) {
      const sent = await d.api(`${d.mgmt}/deliveries`, {
        method: 'POST',
        json: { appId: madeUp.id, kind: 'event', event },
      });
      t.equal(sent.status, 201, `${event} made up`);
    }
    const all = await rx.waitFor(workspaceEvents + 2 + EVENT_TYPES.length);
    const made = all.filter((r) => r.path === '/made-up');
    t.same(made.map((r) => r.body.eventType).sort(), [...EVENT_TYPES]);
    for (const r of made) t.same(eventProblems(r.body), [], `a made-up ${r.body.eventType} matches its schema`);
  },
);
