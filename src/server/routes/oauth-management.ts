/**
 * Grant without a browser, the consent link, and the caller's authorizations (docs/protocol.md §2–§3), mounted at
 * MGMT_BASE.
 */
import { stringOr } from '../../unknown-values.js';
import { Router } from 'express';
import type { IdentityService } from '../../services/identity.js';
import type { AuthorizationRequests, AuthRequestParams } from '../../services/oauth/authorization-request.js';
import type { Grants } from '../../services/oauth/grants.js';
import type { Revocation } from '../../services/oauth/revocation.js';
import { jsonBody } from '../middleware.js';
import { actAsAllowed, refusedActAs } from './auth.js';
import { mountAuthed, route } from './route-table.js';
import { schema } from '../../validation/http-input.js';
import { CONSENT_PATH } from './oauth-consent.js';

export interface OAuthManagementDeps {
  identity: IdentityService;
  requests: AuthorizationRequests;
  grants: Grants;
  revocation: Revocation;
  /** Where the consent screen is reached ({app_url}). */
  appUrl: () => string;
  /** Whether a code was exchanged (code-exchange.ts). */
  codeState(code: string | undefined): Promise<string>;
  bodyLimitBytes: number;
}

const auth = 'authtoken';
/** The consent screen's parameters, checked by the authorization requests as the screen checks them. */
type ConsentQuery = AuthRequestParams & { workspaceId?: string };

/** Grant without a browser, the consent link, the caller's authorizations, relative to MGMT_BASE. */
export const OAUTH_MANAGEMENT_ROUTES = {
  grant: route({
    method: 'get',
    path: '/oauth2/grant',
    summary: "Allow an app as the consent screen's Allow does: the redirect with its code",
    query: schema<ConsentQuery>('management#grantQuery'),
    messages: { '/workspaceId': { text: 'workspaceId must be a single workspace id.', details: false } },
    answers: { 200: 'The redirect URL with the code' },
    auth,
  }),
  consentUrl: route({
    method: 'get',
    path: '/oauth2/consent-url',
    summary: 'The consent link for these parameters, checked',
    query: schema<AuthRequestParams>('management#consentQuery'),
    answers: { 200: '{url}' },
    auth,
  }),
  codeState: route({
    method: 'post',
    path: '/oauth2/code-state',
    summary: 'Whether the app exchanged a code: exchanged, waiting or unknown',
    body: schema<{ code?: unknown } | undefined>('management#codeStateBody'),
    answers: { 200: '{state}' },
    auth,
  }),
  authorizations: route({
    method: 'get',
    path: '/apps/authorizations',
    summary: "The caller's authorizations of apps",
    answers: { 200: 'The authorizations' },
    auth,
  }),
  uninstall: route({
    method: 'delete',
    path: '/apps/:appId/installations/:installWorkspaceId',
    summary: 'Uninstall an app of the caller from a workspace',
    params: schema<{ appId: string; installWorkspaceId: string }>('management#installationPath'),
    answers: { 204: 'Uninstalled' },
    auth,
  }),
};

export function oauthManagementRoutes(deps: OAuthManagementDeps): Router {
  const { identity, requests } = deps;
  const bodyLimitBytes = deps.bodyLimitBytes;
  const r = Router({ mergeParams: true });

  const R = OAUTH_MANAGEMENT_ROUTES;

  /** The same decision as Allow on the consent screen, for the calling user, with exactly its validation. */
  mountAuthed(r, R.grant, [actAsAllowed], async (_req, res, p, { query }) => {
    const authReq = await requests.validate(query);
    // As another user (act-as, AS1): only an app of the one acting, and only in the token's workspace (membershipIn).
    if (p.actedBy && authReq.app.ownerId !== p.actedBy) throw refusedActAs();
    // The consent screen's workspace choice: any workspace the caller's account is a member of.
    const user = await identity.membershipIn(p, query.workspaceId || p.workspaceId);
    res.setHeader('cache-control', 'no-store');
    res.json(await requests.grant(authReq, user));
  });

  /** The consent link for these parameters, validated (used by `appreg authorize --print-url`). */
  mountAuthed(r, R.consentUrl, [], async (_req, res, _p, { query }) => {
    const authReq = await requests.validate(query);
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(authReq.params)) if (v !== undefined) q.set(k, v);
    res.json({ url: `${deps.appUrl()}${CONSENT_PATH}?${q}` });
  });

  /** {code} → {state: exchanged|waiting|unknown}: whether the app exchanged a code (`appreg authorize --follow`). */
  mountAuthed(r, R.codeState, [actAsAllowed, jsonBody(bodyLimitBytes)], async (_req, res, _p, { body }) => {
    res.setHeader('cache-control', 'no-store');
    res.json({ state: await deps.codeState(stringOr(body?.code)) });
  });

  mountAuthed(r, R.authorizations, [actAsAllowed], async (_req, res, p) =>
    res.json(await deps.grants.authorizationsOf(p.workspaceUserId)),
  );

  mountAuthed(r, R.uninstall, [], async (_req, res, p, { params }) => {
    await deps.revocation.uninstallAs(p, params.appId, params.installWorkspaceId);
    res.status(204).end();
  });
  return r;
}
