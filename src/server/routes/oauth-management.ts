/** Grant without a browser and the caller's authorizations (wire-protocol.md §2), mounted at MGMT_BASE. */
import { Router } from 'express';
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import { requireAuth, requireSelf } from './management.js';
import type { ServerDeps } from '../deps.js';
import type { OAuthService } from '../../services/oauth.js';
import { T, type WorkspaceUserRecord } from '../../services/records.js';
import { CONSENT_PATH } from './oauth-consent.js';

export function oauthManagementRoutes(deps: ServerDeps, oauth: OAuthService): Router {
  const r = Router({ mergeParams: true });
  const auth = [requireAuth(deps), requireSelf()];
  const appUrl = () => (deps.ctx.config.appUrl ?? deps.baseUrl()).replace(/\/+$/, '');

  /** The same decision as Allow on the consent screen, for the calling user, with exactly its validation. */
  r.get('/oauth2/grant', ...auth, async (req, res) => {
    const authReq = oauth.validateRequest(req.query as Record<string, unknown>);
    const caller = deps.ctx.store.get<WorkspaceUserRecord>(T.workspaceUsers, req.principal!.workspaceUserId);
    if (!caller) throw notFound('Workspace user');
    // The consent screen's workspace choice: any workspace the caller's account is a member of.
    const chosen = req.query.workspaceId;
    if (chosen !== undefined && typeof chosen !== 'string') throw invalidRequest('workspaceId must be a single workspace id.');
    const user = !chosen || chosen === caller.workspaceId ? caller : deps.identity.membershipsOf(caller.accountId).find((m) => m.workspaceId === chosen);
    if (!user) throw forbidden('You are not a member of that workspace.');
    res.setHeader('cache-control', 'no-store');
    res.json(await oauth.grant(authReq, user));
  });

  /** The consent link for these parameters, validated (used by `appreg authorize --print-url`). */
  r.get('/oauth2/consent-url', ...auth, (req, res) => {
    const authReq = oauth.validateRequest(req.query as Record<string, unknown>);
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(authReq.params)) if (v !== undefined) q.set(k, v);
    res.json({ url: `${appUrl()}${CONSENT_PATH}?${q}` });
  });

  r.get('/apps/authorizations', ...auth, (req, res) => {
    res.json(oauth.authorizationsOf(req.principal!.workspaceUserId));
  });

  r.delete('/apps/:appId/installations/:installWorkspaceId', ...auth, async (req, res) => {
    await oauth.uninstallAs(req.principal!, String(req.params.appId), String(req.params.installWorkspaceId));
    res.status(204).end();
  });
  return r;
}
