/** interface.md endpoints 1–5 and the extra management calls of wire-protocol.md §2. */
import { Router, type Request, type RequestHandler } from 'express';
import { forbidden, unauthenticated } from '../../errors.js';
import { jsonBody, rateLimit } from '../middleware.js';
import type { ServerDeps } from '../deps.js';

export const MGMT_BASE = '/workspaces/:workspaceId/workspaceUsers/:workspaceUserId';

/** Authtoken → principal; 401 when missing/invalid/revoked. */
export function requireAuth(deps: ServerDeps): RequestHandler {
  return (req, _res, next) => {
    const header = req.headers['authtoken'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) return next(unauthenticated());
    req.principal = deps.identity.authenticate(token);
    next();
  };
}

/** The path's workspace and user must be the token's own, else 403. */
export function requireSelf(): RequestHandler {
  return (req, _res, next) => {
    const p = req.principal!;
    if (req.params.workspaceId !== p.workspaceId || req.params.workspaceUserId !== p.workspaceUserId) return next(forbidden());
    next();
  };
}

const param = (req: Request, name: string) => String(req.params[name]);

export function managementRoutes(deps: ServerDeps): Router {
  const { apps, ctx } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(ctx.config.bodyLimitBytes);
  const writes = rateLimit({ perMinute: ctx.config.rateLimitManagementWrites, clock: ctx.clock, key: (req) => req.principal!.workspaceUserId });
  r.use(requireAuth(deps), requireSelf());

  r.post('/apps', writes, body, async (req, res) => {
    const { app, warnings } = await apps.create(req.principal!, req.body);
    if (warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(warnings));
    res.status(201).json(app);
  });
  r.get('/apps/mine', (req, res) => {
    res.json(apps.list(req.principal!));
  });
  r.get('/apps/mine/:appId', (req, res) => {
    res.setHeader('cache-control', 'no-store');
    res.json(apps.get(req.principal!, param(req, 'appId')));
  });
  r.put('/apps/:appId/secrets/rotate', writes, body, async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    res.json(await apps.rotateSecrets(req.principal!, param(req, 'appId')));
  });
  r.post('/apps/:appId/publish', writes, body, async (req, res) => {
    res.json(await apps.setPublished(req.principal!, param(req, 'appId'), true));
  });
  r.post('/apps/:appId/unpublish', writes, body, async (req, res) => {
    res.json(await apps.setPublished(req.principal!, param(req, 'appId'), false));
  });
  r.put('/apps/:appId', writes, body, async (req, res) => {
    const { app, warnings } = await apps.update(req.principal!, param(req, 'appId'), req.body);
    if (warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(warnings));
    res.json(app);
  });
  r.delete('/apps/:appId', writes, async (req, res) => {
    await apps.remove(req.principal!, param(req, 'appId'));
    res.status(204).end();
  });
  return r;
}
