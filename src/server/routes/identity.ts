/** Login, logout, workspaces and users (docs/protocol.md §2). */
import { Router } from 'express';
import type { Clock } from '../../clock.js';
import { invalidRequest } from '../../errors.js';
import type { Config } from '../../config.js';
import type { IdentityService } from '../../services/identity.js';
import { jsonBody, loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import type { Logger } from '../../logger.js';
import { actAsAllowed, principalOf, requireAuth } from './auth.js';
import { fieldsOf, mount, mountAuthed, route, type NotAnObject } from './route-table.js';
import type { LoginBody } from '../../services/identity/password-login.js';
import type { Json } from '../../model/json.js';
import { schema } from '../../validation/http-input.js';
import type { Violation } from '../../validation/schema-errors.js';

export interface IdentityRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitLogin' | 'rateLimitConsent'>;
  clock: Clock;
  store: HitCounter;
  identity: IdentityService;
}

const none = 'none';
const wsPath = schema<{ workspaceId: string }>('management#workspacePath');

/** Login, logout, workspaces and users (docs/protocol.md §2), at the root. */
export const IDENTITY_ROUTES = {
  login: route({
    method: 'post',
    path: '/auth/login',
    summary: 'Sign in with email and password: a management token (Authtoken)',
    body: schema<LoginBody>('management#loginBody'),
    messages: { '': { text: 'Send {"email", "password"} as JSON.', details: false } },
    answers: { 200: 'The token and who it is' },
    auth: none,
  }),
  logout: route({
    method: 'post',
    path: '/auth/logout',
    summary: 'Revoke the Authtoken of the call',
    answers: { 204: 'Revoked' },
    auth: 'authtoken',
  }),
  whoami: route({
    method: 'get',
    path: '/auth/whoami',
    summary: 'Who the Authtoken is, and their workspaces',
    answers: { 200: 'The caller' },
    auth: 'authtoken',
  }),
  createWorkspace: route({
    method: 'post',
    path: '/workspaces',
    summary: 'Create a workspace owned by the caller',
    body: schema<{ name?: Json } | NotAnObject>('management#workspaceBody'),
    answers: { 201: 'The workspace' },
    auth: 'authtoken',
  }),
  workspaceInfo: route({
    method: 'get',
    path: '/workspaces/:workspaceId/info',
    summary: "A workspace's public facts (no Authtoken: the official CLI calls it without one)",
    params: wsPath,
    answers: { 200: 'The workspace' },
    auth: none,
  }),
  createUser: route({
    method: 'post',
    path: '/workspaces/:workspaceId/workspaceUsers',
    summary: 'Add a user to a workspace the caller belongs to',
    params: wsPath,
    body: schema<{ email: string; name: string; password?: string }>('management#userBody'),
    // the identity service's own words for a user that is not valid, every field at once
    refuse: (problems) => {
      const all = problems.some((v) => v.pointer === '');
      const said = { '/email': 'must be an email address', '/name': 'must be 1 to 80 characters' } as const;
      const details: Violation[] = (['/email', '/name'] as const)
        .filter((k) => all || problems.some((v) => v.pointer === k))
        .map((pointer) => ({ pointer, message: said[pointer] }));
      if (problems.some((v) => v.pointer === '/password'))
        details.push({ pointer: '/password', message: 'must be 8 to 200 characters' });
      return invalidRequest('The user is not valid.', details);
    },
    answers: { 201: 'The user (with a made password when none was given)' },
    auth: 'authtoken',
  }),
  userInfo: route({
    method: 'get',
    path: '/workspaces/:workspaceId/workspaceUsers/:workspaceUserId',
    summary: "A user's public facts (no Authtoken: the official CLI calls it without one)",
    params: schema<{ workspaceId: string; workspaceUserId: string }>('management#workspaceUserPath'),
    answers: { 200: 'The user' },
    auth: none,
  }),
};

/** POST …/act-as (docs/protocol.md §2.6), relative to MGMT_BASE. */
export const ACT_AS_ROUTES = {
  actAs: route({
    method: 'post',
    path: '/act-as',
    summary: "The workspace owner's short-lived token of another user of the workspace",
    body: schema<{ user?: Json } | NotAnObject>('management#actAsBody'),
    answers: { 200: 'The token' },
    auth: 'authtoken',
  }),
};

export function identityRoutes(deps: IdentityRoutesDeps): Router {
  const { identity, config } = deps;
  const r = Router();
  const body = jsonBody(config.bodyLimitBytes);
  const auth = requireAuth(identity);
  const loginLimit = loginLimits({
    name: 'api-login',
    perMinute: config.rateLimitLogin,
    clock: deps.clock,
    store: deps.store,
    emailOf: (req) => req.body?.email,
  });
  const infoLimit = rateLimit({
    perMinute: config.rateLimitConsent,
    clock: deps.clock,
    store: deps.store,
    key: (req) => `info|${req.ip}`,
  });
  const R = IDENTITY_ROUTES;

  mount(r, R.login, [body, ...loginLimit], async (_req, res, { body: b }) => {
    res.setHeader('cache-control', 'no-store');
    res.json(await identity.login(b));
  });
  mountAuthed(r, R.logout, [auth, actAsAllowed], async (_req, res, p) => {
    await identity.revoke(p);
    res.status(204).end();
  });
  mountAuthed(r, R.whoami, [auth, actAsAllowed], async (_req, res, p) => {
    const me = await identity.userInfo(p.workspaceId, p.workspaceUserId);
    res.json({
      workspaceId: p.workspaceId,
      workspaceUserId: p.workspaceUserId,
      name: me.name,
      email: me.email,
      workspaces: await identity.listWorkspaces(p),
    });
  });
  mountAuthed(r, R.createWorkspace, [auth, body], async (_req, res, p, { body: b }) =>
    res.status(201).json(await identity.createWorkspaceFor(p, fieldsOf(b).name)),
  );
  // Without an Authtoken: the official CLI calls these two without one (docs/security.md §4, "Info calls").
  mount(r, R.workspaceInfo, [infoLimit], async (_req, res, { params }) => {
    res.json(await identity.workspaceInfo(params.workspaceId));
  });
  mountAuthed(r, R.createUser, [auth, body], async (_req, res, p, { params, body: b }) => {
    const ws = (await identity.membershipIn(p, params.workspaceId)).workspaceId;
    const { user, password, existingAccount } = await identity.createUser({
      workspaceId: ws,
      email: b.email,
      name: b.name,
      password: b.password,
    });
    res.setHeader('cache-control', 'no-store');
    res.status(201).json({
      id: user.id,
      workspaceId: user.workspaceId,
      email: user.email,
      name: user.name,
      ...(password ? { password } : {}),
      ...(existingAccount ? { existingAccount: true } : {}),
    });
  });
  mount(r, R.userInfo, [infoLimit], async (_req, res, { params }) => {
    res.json(await identity.userInfo(params.workspaceId, params.workspaceUserId));
  });
  return r;
}

/**
 * Mounted under the management base path: POST …/act-as {user}, the workspace owner's short-lived
 * token of another user of the workspace (appreg say --as; docs/protocol.md §2.6).
 */
export function actAsRoutes(deps: {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites'>;
  clock: Clock;
  store: HitCounter;
  identity: IdentityService;
  logger: Logger;
}): Router {
  const r = Router({ mergeParams: true });
  const writes = rateLimit({
    perMinute: deps.config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `act-as|${principalOf(res).workspaceUserId}`,
  });
  mountAuthed(
    r,
    ACT_AS_ROUTES.actAs,
    [writes, jsonBody(deps.config.bodyLimitBytes)],
    async (_req, res, p, { body }) => {
      const issued = await deps.identity.actAs(p, fieldsOf(body).user);
      deps.logger.info('acting as another user of the workspace', {
        workspaceId: p.workspaceId,
        by: p.workspaceUserId,
        as: issued.workspaceUserId,
      });
      res.setHeader('cache-control', 'no-store');
      res.json(issued);
    },
  );
  return r;
}
