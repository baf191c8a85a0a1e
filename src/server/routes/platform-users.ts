/** The platform API's workspace, user, group, status and home-view calls (docs/protocol.md §9.4). */
import { Router } from 'express';
import { statusProblem, type HomeViewBody, type Profiles, type StatusBody } from '../../services/workspace/profile.js';
import type { WorkspaceUsers } from '../../services/workspace/users.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { mount, route } from './route-table.js';
import { ownWords, schema } from '../../validation/http-input.js';
import { must } from '../../must.js';

const userPath = schema<{ userId: string }>('platform#userPath');
const app = 'app-token';

/** The platform API's workspace, user, group, status and home-view calls (docs/protocol.md §9.4). */
export const USER_ROUTES = {
  list: route({
    method: 'get',
    path: '/v1/workspaceUsers',
    summary: 'The users of the workspace',
    scope: 'users:list',
    answers: { 200: 'The users' },
    auth: app,
  }),
  groups: route({
    method: 'get',
    path: '/v1/workspaceUsers/groups',
    summary: 'The user groups of the workspace',
    scope: 'users:list',
    answers: { 200: 'The groups' },
    auth: app,
  }),
  status: route({
    method: 'put',
    path: '/v1/workspaceUsers/customStatus',
    summary: "Set the token's user's custom status",
    body: schema<StatusBody>('platform#customStatusBody'),
    refuse: ownWords(statusProblem, (first) => `The status is not valid: ${first.pointer} ${first.message}.`),
    scope: 'status:write',
    answers: { 200: 'The status' },
    auth: app,
  }),
  get: route({
    method: 'get',
    path: '/v1/workspaceUsers/:userId',
    summary: 'One user of the workspace',
    params: userPath,
    scope: 'user:read',
    answers: { 200: 'The user' },
    auth: app,
  }),
  workspace: route({
    method: 'get',
    path: '/v1/workspace',
    summary: 'The workspace',
    scope: 'workspace:read',
    answers: { 200: 'The workspace' },
    auth: app,
  }),
  homeView: route({
    method: 'post',
    path: '/v1/app/homeView/workspaceUsers/:userId',
    summary: "Publish the app's home view for a user",
    params: userPath,
    body: schema<HomeViewBody>('platform#homeViewBody'),
    refuse: ownWords(
      (p) =>
        p.pointer === '' || p.message === 'is required' || p.pointer.startsWith('/blocks/')
          ? { pointer: '/blocks', message: 'must be an array of blocks' }
          : undefined,
      () => 'blocks must be an array of blocks.',
    ),
    scope: 'channels:write',
    answers: { 200: 'The view' },
    auth: app,
  }),
};

export function platformUserRoutes(deps: {
  platform: PlatformGate;
  users: WorkspaceUsers;
  profiles: Profiles;
  bodyLimitBytes: number;
}): Router {
  const { platform: p, users, profiles } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const homeViewLimit = p.limit('homeViews', (req) => String(req.params.userId));
  const r = Router();
  const R = USER_ROUTES;
  mount(r, R.list, [gate, need('users:list')], async (_req, res) => {
    res.json(await users.list(p.actor(res)));
  });
  mount(r, R.groups, [gate, need('users:list')], async (_req, res) => {
    res.json(await profiles.listGroups(p.actor(res)));
  });
  mount(r, R.status, [gate, need('status:write'), body], async (_req, res, { body: b }) => {
    res.json(await profiles.setStatus(p.actor(res), b));
  });
  mount(r, R.get, [gate, need('user:read')], async (_req, res, { params }) => {
    res.json(await users.get(p.actor(res), params.userId));
  });
  mount(r, R.workspace, [gate, need('workspace:read')], async (_req, res) => {
    res.json(await users.workspace(p.actor(res)));
  });
  mount(r, R.homeView, [gate, need('channels:write'), homeViewLimit, body], async (_req, res, { params, body: b }) => {
    const a = p.actor(res);
    res.json(await profiles.publishHomeView({ ...a, appId: must(a.appId) }, params.userId, b));
  });
  return r;
}
