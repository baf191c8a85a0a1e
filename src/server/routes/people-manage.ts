/**
 * What a person does to the workspace itself (docs/protocol.md §2.8), mounted at the management
 * base path like the person-side routes: archive or delete a channel, list, create and change
 * user groups. The platform API has no call for these; apps hear of them through their events
 * (CHANNEL_ARCHIVED, CHANNEL_DELETED, WORKSPACE_USER_GROUP_CREATED / _UPDATED).
 */
import { Router } from 'express';
import { jsonBody, rateLimit } from '../middleware.js';
import { principalOf } from './auth.js';
import { mountAuthed, route } from './route-table.js';
import { schema } from '../../validation/http-input.js';
import { channelIdOf, type PeopleRoutesDeps } from './people.js';
import type { GroupBody } from '../../services/workspace/profile.js';

/** What the person-side routes get, but the deliveries. */
type PeopleManageDeps = Omit<PeopleRoutesDeps, 'deliveries'>;

const auth = 'authtoken';
const channelPath = schema<{ channel: string }>('management#channelPath');
const groupBody = schema<GroupBody>('management#groupBody');
const asObject = { '': { text: 'Send the fields as a JSON object.', details: false as const } };

/** What a person does to the workspace itself, relative to MGMT_BASE (docs/protocol.md §2.8). */
export const PEOPLE_MANAGE_ROUTES = {
  archive: route({
    method: 'post',
    path: '/channels/:channel/archive',
    summary: 'Archive a channel',
    params: channelPath,
    answers: { 200: 'The channel' },
    auth,
  }),
  deleteChannel: route({
    method: 'delete',
    path: '/channels/:channel',
    summary: 'Delete a channel',
    params: channelPath,
    answers: { 204: 'Deleted' },
    auth,
  }),
  groups: route({ method: 'get', path: '/groups', summary: 'The user groups', answers: { 200: 'The groups' }, auth }),
  createGroup: route({
    method: 'post',
    path: '/groups',
    summary: 'Create a user group',
    body: groupBody,
    messages: asObject,
    answers: { 201: 'The group' },
    auth,
  }),
  updateGroup: route({
    method: 'patch',
    path: '/groups/:groupId',
    summary: 'Change a user group',
    params: schema<{ groupId: string }>('management#groupPath'),
    body: groupBody,
    messages: asObject,
    answers: { 200: 'The group' },
    auth,
  }),
};

export function peopleManageRoutes(deps: PeopleManageDeps): Router {
  const { workspace: ws } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(deps.config.bodyLimitBytes);
  // the person-side writes share one budget per user
  const writes = rateLimit({
    perMinute: deps.config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `people-writes|${principalOf(res).workspaceUserId}`,
  });

  const R = PEOPLE_MANAGE_ROUTES;

  mountAuthed(r, R.archive, [writes], async (_req, res, p, { params }) => {
    const me = await ws.person(p.workspaceUserId);
    const id = await channelIdOf(ws, p.workspaceId, params.channel);
    await ws.channels.archive(me, id);
    res.json(await ws.channels.view(await ws.channels.visible(me, id), me));
  });
  mountAuthed(r, R.deleteChannel, [writes], async (_req, res, p, { params }) => {
    await ws.deleteChannel(p.workspaceUserId, await channelIdOf(ws, p.workspaceId, params.channel));
    res.status(204).end();
  });
  mountAuthed(r, R.groups, [], async (_req, res, p) =>
    res.json(await ws.profiles.listGroups(await ws.person(p.workspaceUserId))),
  );
  mountAuthed(r, R.createGroup, [writes, body], async (_req, res, p, { body: b }) =>
    res.status(201).json(await ws.profiles.createGroup(await ws.person(p.workspaceUserId), b)),
  );
  mountAuthed(r, R.updateGroup, [writes, body], async (_req, res, p, { params, body: b }) =>
    res.json(await ws.profiles.updateGroup(await ws.person(p.workspaceUserId), params.groupId, b)),
  );
  return r;
}
