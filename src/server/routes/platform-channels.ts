/** The platform API's channel calls (docs/protocol.md §9.3): HTTP ↔ the workspace's channels service. */
import { Router } from 'express';
import type { ChannelBody, Channels } from '../../services/workspace/channels.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { fieldsOf, mount, route, type NotAnObject } from './route-table.js';
import { schema } from '../../validation/http-input.js';

export interface PlatformChannelsDeps {
  platform: PlatformGate;
  channels: Channels;
  bodyLimitBytes: number;
}

const channelPath = schema<{ channelId: string }>('platform#channelPath');
const app = 'app-token';

/** The platform API's channel calls (docs/protocol.md §9.3). */
export const CHANNEL_ROUTES = {
  list: route({
    method: 'get',
    path: '/v1/channels',
    summary: 'The channels the token can see, by type',
    query: schema<{ types?: string }>('platform#channelsQuery'),
    scope: 'channels:list',
    answers: { 200: 'The channels' },
    auth: app,
  }),
  create: route({
    method: 'post',
    path: '/v1/channels',
    summary: 'Create a channel',
    body: schema<ChannelBody | NotAnObject>('platform#channelBody'),
    scope: 'channels:write',
    answers: { 200: 'The channel' },
    auth: app,
  }),
  direct: route({
    method: 'get',
    path: '/v1/channels/direct',
    summary: 'The direct channel of the token and the participants, made when new',
    query: schema<{ participantIds?: string }>('platform#directQuery'),
    scope: 'channels:read',
    answers: { 200: 'The channel' },
    auth: app,
  }),
  directList: route({
    method: 'get',
    path: '/v1/channels/direct/list',
    summary: "The token's direct channels (as GET /v1/channels?types=DIRECT)",
    scope: 'channels:list',
    answers: { 200: 'The channels' },
    auth: app,
  }),
  openDirect: route({
    method: 'post',
    path: '/v1/channels/direct',
    summary: 'The direct channel of the token and the participants, made when new',
    body: schema<{ participantIds?: string[] } | NotAnObject>('platform#directBody'),
    scope: 'channels:write',
    answers: { 200: 'The channel' },
    auth: app,
  }),
  get: route({
    method: 'get',
    path: '/v1/channels/:channelId',
    summary: 'One channel',
    params: channelPath,
    scope: 'channels:read',
    answers: { 200: 'The channel' },
    auth: app,
  }),
  addUsers: route({
    method: 'post',
    path: '/v1/channels/:channelId/users',
    summary: 'Add users to a channel',
    params: channelPath,
    body: schema<{ userIds?: string[] } | NotAnObject>('platform#channelUsersBody'),
    scope: 'channels:write',
    answers: { 200: 'The channel' },
    auth: app,
  }),
  removeUser: route({
    method: 'delete',
    path: '/v1/channels/:channelId/users/:userId',
    summary: 'Remove a user from a channel',
    params: schema<{ channelId: string; userId: string }>('platform#channelUserPath'),
    scope: 'channels:write',
    answers: { 204: 'Removed' },
    auth: app,
  }),
};

export function platformChannelRoutes(deps: PlatformChannelsDeps): Router {
  const { platform: p, channels } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const createLimit = p.limit('channels');
  const r = Router();
  const R = CHANNEL_ROUTES;

  mount(r, R.list, [gate, need('channels:list')], async (_req, res, { query }) => {
    res.json(await channels.list(p.actor(res), query.types));
  });
  mount(r, R.create, [gate, need('channels:write'), createLimit, body], async (_req, res, { body: b }) => {
    res.json(await channels.create(p.actor(res), fieldsOf(b)));
  });
  mount(r, R.direct, [gate, need('channels:read')], async (_req, res, { query }) => {
    res.json(await channels.direct(p.actor(res), query.participantIds ?? ''));
  });
  // the official SDK's listAllDirectChannels (in some of its versions): the caller's direct channels, as
  // GET /v1/channels?types=DIRECT answers them
  mount(r, R.directList, [gate, need('channels:list')], async (_req, res) => {
    res.json(await channels.list(p.actor(res), 'DIRECT'));
  });
  mount(r, R.openDirect, [gate, need('channels:write'), body], async (_req, res, { body: b }) => {
    res.json(await channels.direct(p.actor(res), fieldsOf(b).participantIds ?? []));
  });
  mount(r, R.get, [gate, need('channels:read')], async (_req, res, { params }) => {
    const a = p.actor(res);
    res.json(await channels.view(await channels.visible(a, params.channelId), a));
  });
  mount(r, R.addUsers, [gate, need('channels:write'), body], async (_req, res, { params, body: b }) => {
    res.json(await channels.addUsers(p.actor(res), params.channelId, fieldsOf(b)));
  });
  mount(r, R.removeUser, [gate, need('channels:write')], async (_req, res, { params }) => {
    await channels.removeUser(p.actor(res), params.channelId, params.userId);
    res.status(204).end();
  });
  return r;
}
