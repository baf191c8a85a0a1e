/**
 * Grant without a browser, the consent link, and the caller's authorizations (docs/protocol.md §2–§3), mounted at
 * MGMT_BASE.
 */
import { Router } from 'express';
import { invalidRequest } from '../../errors.js';
import type { IdentityService } from '../../services/identity.js';
import type { AuthorizationRequests } from '../../services/oauth/authorization-request.js';
import type { Grants } from '../../services/oauth/grants.js';
import type { Revocation } from '../../services/oauth/revocation.js';
import { jsonBody } from '../middleware.js';
import { actAsAllowed, authed, refusedActAs } from './auth.js';
import { CONSENT_PATH } from './oauth-consent.js';

export interface OAuthManagementDeps {
  identity: IdentityService;
  requests: AuthorizationRequests;
  grants: Grants;
  revocation: Revocation;
  /** Where the consent screen is reached ({app_url}). */
  appUrl: () => string;
  /** Whether a code was exchanged (code-exchange.ts). */
  codeState(code: unknown): Promise<string>;
  bodyLimitBytes: number;
}

export function oauthManagementRoutes(deps: OAuthManagementDeps): Router {
  const { identity, requests } = deps;
  const bodyLimitBytes = deps.bodyLimitBytes;
  const r = Router({ mergeParams: true });

  /** The same decision as Allow on the consent screen, for the calling user, with exactly its validation. */
  r.get(
    '/oauth2/grant',
    actAsAllowed,
    authed(async (req, res, p) => {
      const authReq = await requests.validate(req.query as Record<string, unknown>);
      // As another user (act-as, AS1): only an app of the one acting, and only in the token's workspace (membershipIn).
      if (p.actedBy && authReq.app.ownerId !== p.actedBy) throw refusedActAs();
      // The consent screen's workspace choice: any workspace the caller's account is a member of.
      const chosen = req.query.workspaceId;
      if (chosen !== undefined && typeof chosen !== 'string')
        throw invalidRequest('workspaceId must be a single workspace id.');
      const user = await identity.membershipIn(p, chosen || p.workspaceId);
      res.setHeader('cache-control', 'no-store');
      res.json(await requests.grant(authReq, user));
    }),
  );

  /** The consent link for these parameters, validated (used by `appreg authorize --print-url`). */
  r.get(
    '/oauth2/consent-url',
    authed(async (req, res) => {
      const authReq = await requests.validate(req.query as Record<string, unknown>);
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(authReq.params)) if (v !== undefined) q.set(k, v);
      res.json({ url: `${deps.appUrl()}${CONSENT_PATH}?${q}` });
    }),
  );

  /** {code} → {state: exchanged|waiting|unknown}: whether the app exchanged a code (`appreg authorize --follow`). */
  r.post(
    '/oauth2/code-state',
    actAsAllowed,
    jsonBody(bodyLimitBytes),
    authed(async (req, res) => {
      res.setHeader('cache-control', 'no-store');
      res.json({ state: await deps.codeState((req.body as Record<string, unknown> | undefined)?.code) });
    }),
  );

  r.get(
    '/apps/authorizations',
    actAsAllowed,
    authed(async (_req, res, p) => res.json(await deps.grants.authorizationsOf(p.workspaceUserId))),
  );

  r.delete(
    '/apps/:appId/installations/:installWorkspaceId',
    authed(async (req, res, p) => {
      await deps.revocation.uninstallAs(p, String(req.params.appId), String(req.params.installWorkspaceId));
      res.status(204).end();
    }),
  );
  return r;
}
