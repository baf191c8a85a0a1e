/**
 * A person archives and deletes channels and makes and changes user groups through the
 * management API (what appreg channels archive|delete and groups call); the apps subscribed to
 * CHANNEL_ARCHIVED, CHANNEL_DELETED and WORKSPACE_USER_GROUP_CREATED / _UPDATED hear of it with
 * the bodies the SDK reads, and apps list the groups.
 */
import t from 'tap';
import type { TestDaemon } from '../helpers/daemon.js';
import { daemonWithListener } from '../helpers/listening-app.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

const person =
  (d: TestDaemon, token = d.token, mgmt = d.mgmt) =>
  async (method: string, path: string, json?: unknown) => {
    const res = await d.api(`${mgmt}${path}`, { method, json, headers: { authtoken: token } });
    return { status: res.status, body: res.status === 204 ? undefined : ((await res.json()) as any) };
  };

/** An event body without its request id (a fresh one per change), which must be there. */
function withoutRid(body: Record<string, unknown>): Record<string, unknown> {
  const { rid, ...rest } = body;
  if (typeof rid !== 'string' || !rid) throw new Error(`no rid in ${JSON.stringify(body)}`);
  return rest;
}

t.test('channels archived and deleted by a person reach the subscribed apps', async (t) => {
  const { rx, d, app } = await daemonWithListener(t, ['CHANNEL_ARCHIVED', 'CHANNEL_DELETED']);
  const me = person(d);
  const made = await me('POST', '/channels', { name: 'old-project' });
  const id = made.body.channel.id as string;
  const archived = await me('POST', '/channels/%23old-project/archive');
  t.equal(archived.status, 200, JSON.stringify(archived.body));
  t.match(
    archived.body,
    { channel: { id, name: 'old-project', isArchived: true } },
    'the channel, archived (by #name)',
  );
  const [a] = await rx.waitFor(1);
  t.ok(must(a).signatureValid);
  t.match(must(a).body, {
    messageType: 'PUMBLE_EVENT',
    eventType: 'CHANNEL_ARCHIVED',
    workspaceId: d.workspaceId,
    workspaceUserIds: [d.workspaceUserId],
  });
  t.same(withoutRid(JSON.parse(must(a).body.body)), {
    m: [d.workspaceUserId],
    wId: d.workspaceId,
    cId: id,
    v: true,
    ty: 'CHANNEL_ARCHIVED',
    uId: d.workspaceUserId,
  });
  t.equal((await app.bot.postMessageToChannel(id, 'too late')).status, 400, 'nothing is posted in an archived channel');
  t.equal((await me('POST', `/channels/${id}/archive`)).status, 200, 'archiving again changes nothing');

  const other = await secondUser(d);
  const them = person(d, other.token, other.mgmt);
  t.equal((await them('DELETE', `/channels/${id}`)).status, 403, 'only its creator deletes it');
  t.equal((await me('POST', '/channels/general/archive')).status, 400, 'general cannot be archived');
  t.equal((await me('DELETE', '/channels/random')).status, 400, 'nor an initial channel deleted');
  t.equal((await me('DELETE', '/channels/nowhere')).status, 404);
  t.equal((await me('DELETE', `/channels/${id}`)).status, 204);
  const evs = await rx.waitFor(2);
  t.same(withoutRid(JSON.parse(must(evs[1]).body.body)), {
    m: [d.workspaceUserId],
    wId: d.workspaceId,
    cId: id,
    ty: 'CHANNEL_DELETED',
  });
  t.equal(must(evs[1]).body.eventType, 'CHANNEL_DELETED');
  t.equal((await app.user.getChannelDetails(id)).status, 404, 'gone for apps too');
  t.equal(rx.received.length, 2, 'one event each');
});

t.test('user groups made and changed by a person are listed to apps, with their events', async (t) => {
  const { rx, d, app } = await daemonWithListener(t, ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED']);
  const other = await secondUser(d);
  const me = person(d);
  t.same((await app.bot.listUserGroups()).body, [], 'none yet');
  const made = await me('POST', '/groups', {
    name: 'On call',
    description: 'pages at night',
    workspaceUserIds: [d.workspaceUserId],
  });
  t.equal(made.status, 201, JSON.stringify(made.body));
  t.match(made.body, {
    id: /^grp_/,
    workspaceId: d.workspaceId,
    createdBy: d.workspaceUserId,
    name: 'On call',
    handle: 'on-call',
    description: 'pages at night',
    disabled: false,
    workspaceUserIds: [d.workspaceUserId],
  });
  const changed = await me('PATCH', `/groups/${made.body.id}`, {
    workspaceUserIds: [d.workspaceUserId, other.id],
    disabled: true,
  });
  t.equal(changed.status, 200);
  t.match(
    changed.body,
    { name: 'On call', handle: 'on-call', disabled: true, workspaceUserIds: [d.workspaceUserId, other.id] },
    'what is not sent stays',
  );
  t.same((await me('GET', '/groups')).body, [changed.body]);
  t.same((await app.bot.listUserGroups()).body, [changed.body], 'GET /v1/workspaceUsers/groups lists it');
  const evs = await rx.waitFor(2);
  t.same(
    evs.map((e) => e.body.eventType),
    ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED'],
  );
  t.same(withoutRid(JSON.parse(must(evs[0]).body.body)), {
    wId: d.workspaceId,
    cbId: d.workspaceUserId,
    id: made.body.id,
    n: 'On call',
    h: 'on-call',
    d: 'pages at night',
    di: false,
    uIds: [d.workspaceUserId],
    cIds: [],
    ty: 'WORKSPACE_USER_GROUP_CREATED',
  });
  t.match(JSON.parse(must(evs[1]).body.body), {
    uId: d.workspaceUserId,
    id: made.body.id,
    di: true,
    uIds: [d.workspaceUserId, other.id],
    ty: 'WORKSPACE_USER_GROUP_UPDATED',
  });

  t.match(
    await me('POST', '/groups', { name: 'Other', handle: 'on-call' }),
    { status: 400, body: { code: 'invalid_request', details: [{ pointer: '/handle' }] } },
    'a handle is unique',
  );
  t.match(await me('POST', '/groups', { name: '' }), { status: 400, body: { details: [{ pointer: '/name' }] } });
  t.match(await me('POST', '/groups', { name: 'x', workspaceUserIds: ['wu_nobody'] }), {
    status: 400,
    body: { details: [{ pointer: '/workspaceUserIds' }] },
  });
  t.match(await me('PATCH', `/groups/${made.body.id}`, { disabled: 'yes' }), {
    status: 400,
    body: { details: [{ pointer: '/disabled' }] },
  });
  t.equal((await me('PATCH', '/groups/grp_nope', { name: 'x' })).status, 404);
  t.equal(rx.received.length, 2, 'refused changes make no event');
});
