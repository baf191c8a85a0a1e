/** Login, logout, workspaces and users (docs/protocol.md §2). */
import { Router } from 'express';
import { invalidRequest } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { IdentityService } from '../../services/identity.js';
import { jsonBody, loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import type { Logger } from '../../logger.js';
import { actAsAllowed, authed, principalOf, requireAuth } from './auth.js';

export interface IdentityRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitLogin' | 'rateLimitConsent'>;
  clock: Clock;
  store: HitCounter;
  identity: IdentityService;
}

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
  const workspace = (ws: unknown) => String(ws);
  const infoLimit = rateLimit({
    perMinute: config.rateLimitConsent,
    clock: deps.clock,
    store: deps.store,
    key: (req) => `info|${req.ip}`,
  });

  r.post('/auth/login', body, ...loginLimit, async (req, res) => {
    if (!req.body || typeof req.body !== 'object') throw invalidRequest('Send {"email", "password"} as JSON.');
    res.setHeader('cache-control', 'no-store');
    res.json(await identity.login(req.body));
  });
  r.post(
    '/auth/logout',
    auth,
    actAsAllowed,
    authed(async (_req, res, p) => {
      await identity.revoke(p);
      res.status(204).end();
    }),
  );
  r.get(
    '/auth/whoami',
    auth,
    actAsAllowed,
    authed(async (_req, res, p) => {
      const me = await identity.userInfo(p.workspaceId, p.workspaceUserId);
      res.json({
        workspaceId: p.workspaceId,
        workspaceUserId: p.workspaceUserId,
        name: me.name,
        email: me.email,
        workspaces: await identity.listWorkspaces(p),
      });
    }),
  );
  r.post(
    '/workspaces',
    auth,
    body,
    authed(async (req, res, p) => res.status(201).json(await identity.createWorkspaceFor(p, req.body?.name))),
  );
  // Without an Authtoken: the official CLI calls these two without one (docs/security.md §4, "Info calls").
  r.get('/workspaces/:workspaceId/info', infoLimit, async (req, res) => {
    res.json(await identity.workspaceInfo(workspace(req.params.workspaceId)));
  });
  r.post(
    '/workspaces/:workspaceId/workspaceUsers',
    auth,
    body,
    authed(async (req, res, p) => {
      const ws = (await identity.membershipIn(p, workspace(req.params.workspaceId))).workspaceId;
      const b = req.body ?? {};
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
    }),
  );
  r.get('/workspaces/:workspaceId/workspaceUsers/:workspaceUserId', infoLimit, async (req, res) => {
    res.json(await identity.userInfo(workspace(req.params.workspaceId), String(req.params.workspaceUserId)));
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
  r.post(
    '/act-as',
    writes,
    jsonBody(deps.config.bodyLimitBytes),
    authed(async (req, res, p) => {
      const issued = await deps.identity.actAs(p, (req.body as { user?: unknown } | undefined)?.user);
      deps.logger.info('acting as another user of the workspace', {
        workspaceId: p.workspaceId,
        by: p.workspaceUserId,
        as: issued.workspaceUserId,
      });
      res.setHeader('cache-control', 'no-store');
      res.json(issued);
    }),
  );
  return r;
}
