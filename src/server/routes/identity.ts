/** Login, logout, workspaces and users (wire-protocol.md §2 info calls). */
import { Router } from 'express';
import { forbidden, invalidRequest } from '../../errors.js';
import { jsonBody, rateLimit } from '../middleware.js';
import { requireAuth } from './management.js';
import type { ServerDeps } from '../deps.js';

export function identityRoutes(deps: ServerDeps): Router {
  const { identity, ctx } = deps;
  const r = Router();
  const body = jsonBody(ctx.config.bodyLimitBytes);
  const auth = requireAuth(deps);
  const loginLimit = rateLimit({ perMinute: ctx.config.rateLimitLogin, clock: ctx.clock, key: (req) => `${req.ip}|${String(req.body?.email ?? '').toLowerCase()}` });

  r.post('/auth/login', body, loginLimit, async (req, res) => {
    if (!req.body || typeof req.body !== 'object') throw invalidRequest('Send {"email", "password"} as JSON.');
    res.setHeader('cache-control', 'no-store');
    res.json(await identity.login(req.body));
  });
  r.post('/auth/logout', auth, async (req, res) => {
    await identity.revoke(req.principal!);
    res.status(204).end();
  });
  r.get('/auth/whoami', auth, (req, res) => {
    const p = req.principal!;
    res.json({ workspaceId: p.workspaceId, workspaceUserId: p.workspaceUserId, workspaces: identity.listWorkspaces(p) });
  });
  r.post('/workspaces', auth, body, async (req, res) => {
    const ws = await identity.createWorkspace(req.body?.name);
    // The creator becomes the first member of the new workspace, with the same login.
    const me = identity.userInfo(req.principal!.workspaceId, req.principal!.workspaceUserId);
    const { user } = await identity.createUser({ workspaceId: ws.id, email: me.email, name: me.name });
    res.status(201).json({ ...ws, workspaceUserId: user.id });
  });
  r.get('/workspaces/:workspaceId/info', auth, (req, res) => {
    const ws = String(req.params.workspaceId);
    if (!identity.listWorkspaces(req.principal!).some((w) => w.id === ws)) throw forbidden('You are not a member of this workspace.');
    res.json(identity.workspaceInfo(ws));
  });
  r.post('/workspaces/:workspaceId/workspaceUsers', auth, body, async (req, res) => {
    const ws = String(req.params.workspaceId);
    if (!identity.listWorkspaces(req.principal!).some((w) => w.id === ws)) throw forbidden('You are not a member of this workspace.');
    const b = req.body ?? {};
    const { user, password, existingAccount } = await identity.createUser({ workspaceId: ws, email: b.email, name: b.name, password: b.password });
    res.setHeader('cache-control', 'no-store');
    res.status(201).json({ id: user.id, workspaceId: user.workspaceId, email: user.email, name: user.name, ...(password ? { password } : {}), ...(existingAccount ? { existingAccount: true } : {}) });
  });
  r.get('/workspaces/:workspaceId/workspaceUsers/:workspaceUserId', auth, (req, res) => {
    const ws = String(req.params.workspaceId);
    if (!identity.listWorkspaces(req.principal!).some((w) => w.id === ws)) throw forbidden('You are not a member of this workspace.');
    res.json(identity.userInfo(ws, String(req.params.workspaceUserId)));
  });
  return r;
}
