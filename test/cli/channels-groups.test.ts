/**
 * appreg channels archive|delete and groups list|create|update: what the person does reaches the
 * apps subscribed to CHANNEL_ARCHIVED, CHANNEL_DELETED and WORKSPACE_USER_GROUP_CREATED / _UPDATED,
 * and apps list the groups; bad input exits with a clear line and changes nothing.
 */
import t from 'tap';
import { runMain } from '../helpers/cli.js';
import { daemonWithListener } from '../helpers/listening-app.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('channels archive and delete', async (t) => {
  const { rx, d } = await daemonWithListener(t, ['CHANNEL_ARCHIVED', 'CHANNEL_DELETED']);
  const g = ['--url', d.url, '--token', d.token];
  const id = JSON.parse((await runMain([...g, 'channels', 'create', 'old-project', '--json'])).stdout).channel
    .id as string;

  const archived = await runMain([...g, 'channels', 'archive', '#old-project']);
  t.equal(archived.code, 0, archived.stderr);
  t.equal(archived.stdout, `archived #old-project (${id})\n`);
  const [a] = await rx.waitFor(1);
  t.match(JSON.parse(must(a).body.body), { cId: id, v: true, ty: 'CHANNEL_ARCHIVED', uId: d.workspaceUserId });
  t.match(
    JSON.parse((await runMain([...g, 'channels', 'list', '--json'])).stdout).find((c: any) => c.channel.id === id),
    { channel: { isArchived: true } },
  );

  const unconfirmed = await runMain([...g, 'channels', 'delete', 'old-project']);
  t.equal(unconfirmed.code, 2, 'without --yes');
  t.match(unconfirmed.stderr, /add --yes to confirm/);
  t.equal((await runMain([...g, 'channels', 'archive', 'general'])).code, 4, 'general cannot be archived');
  t.equal((await runMain([...g, 'channels', 'delete', 'nowhere', '--yes'])).code, 4);
  const deleted = await runMain([...g, 'channels', 'delete', 'old-project', '--yes', '--json']);
  t.equal(deleted.code, 0, deleted.stderr);
  t.same(JSON.parse(deleted.stdout), { deleted: 'old-project' });
  const evs = await rx.waitFor(2);
  t.match(JSON.parse(must(evs[1]).body.body), {
    wId: d.workspaceId,
    cId: id,
    ty: 'CHANNEL_DELETED',
    m: Array,
    rid: /^req_/,
  });
  t.notOk(
    JSON.parse((await runMain([...g, 'channels', 'list', '--json'])).stdout).some((c: any) => c.channel.id === id),
    'gone',
  );
});

t.test('groups create, update and list', async (t) => {
  const { rx, d, app } = await daemonWithListener(t, ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED']);
  const other = await secondUser(d);
  const g = ['--url', d.url, '--token', d.token];

  const made = await runMain([
    ...g,
    'groups',
    'create',
    'On call',
    '--members',
    `${d.workspaceUserId}`,
    '--description',
    'nights',
  ]);
  t.equal(made.code, 0, made.stderr);
  t.match(made.stdout, /^created On call @on-call \(grp_\S+\): 1 member\n$/);
  const added = await runMain([...g, 'groups', 'update', '@on-call', '--add', other.id, '--json']);
  t.equal(added.code, 0, added.stderr);
  const group = JSON.parse(added.stdout);
  t.match(group, {
    name: 'On call',
    handle: 'on-call',
    description: 'nights',
    workspaceUserIds: [d.workspaceUserId, other.id],
    disabled: false,
  });
  const disabled = await runMain([...g, 'groups', 'update', group.id, '--remove', d.workspaceUserId, '--disable']);
  t.equal(disabled.code, 0, disabled.stderr);
  t.match(disabled.stdout, /updated On call @on-call \(grp_\S+\): 1 member, disabled/);
  const list = await runMain([...g, 'groups', 'list']);
  t.match(
    list.stdout,
    /ID\s+HANDLE\s+NAME\s+MEMBERS\s+STATE\s+DESCRIPTION\ngrp_\S+\s+@on-call\s+On call\s+1\s+disabled\s+nights/,
  );
  const listed = (await app.bot.listUserGroups()).body;
  t.match(listed, [{ id: group.id, workspaceUserIds: [other.id], disabled: true }], 'apps list it');
  const evs = await rx.waitFor(3);
  t.same(
    evs.map((e) => JSON.parse(e.body.body).ty),
    ['WORKSPACE_USER_GROUP_CREATED', 'WORKSPACE_USER_GROUP_UPDATED', 'WORKSPACE_USER_GROUP_UPDATED'],
  );
  t.match(JSON.parse(must(evs[2]).body.body), { id: group.id, uIds: [other.id], di: true });

  const taken = await runMain([...g, 'groups', 'create', 'Other', '--handle', 'on-call']);
  t.equal(taken.code, 4);
  t.match(taken.stderr, /on-call already exists/);
  t.equal((await runMain([...g, 'groups', 'create', 'x', '--members', 'wu_nobody'])).code, 4);
  t.equal((await runMain([...g, 'groups', 'update', '@nobody', '--name', 'x'])).code, 4, 'no such group');
  t.equal((await runMain([...g, 'groups', 'update', '@on-call'])).code, 2, 'nothing to change');
  t.equal((await runMain([...g, 'groups', 'update', '@on-call', '--enable', '--disable'])).code, 2);
  t.equal((await runMain([...g, 'groups', 'update', '@on-call', '--members', 'a', '--add', 'b'])).code, 2);
  t.equal(rx.received.length, 3, 'refused changes make no event');
});
