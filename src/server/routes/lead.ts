/** The official CLI's login sequence (docs/protocol.md §2.7) and the login codes it needs. */
import { Router } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { LeadLogin } from '../../services/lead-login.js';
import { jsonBody, loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import { mount, mountAuthed, route, type RouteSpec } from './route-table.js';
import { schema } from '../../validation/http-input.js';

export interface LeadRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitLogin' | 'rateLimitTokenEndpoint'>;
  clock: Clock;
  store: HitCounter;
  leads: LeadLogin;
}

type Fields = Record<string, unknown>;
const asObject = { '': { text: 'Send the fields as a JSON object.', details: false as const } };
const wsPath = schema<{ workspaceId: string }>('management#workspacePath');
const lead = (
  method: 'post',
  path: string,
  summary: string,
  body: string,
  params?: typeof wsPath,
): RouteSpec<{ workspaceId: string }, Record<string, never>, Fields> => ({
  method,
  path,
  summary,
  params,
  body: schema<Fields>(`management#${body}`),
  messages: asObject,
  answers: { 200: 'The answer of this step' },
  auth: 'none',
});

/** The official CLI's login sequence (docs/protocol.md §2.7): no Authtoken. */
export const LEAD_ROUTES = {
  start: lead('post', '/lead', 'Start a login: a code is made for the email', 'leadStartBody'),
  activate: lead('post', '/lead/activate', 'Activate the login with its code', 'leadActivateBody'),
  login: lead('post', '/lead/login', "The login's workspaces and their exchange tokens", 'leadLoginBody'),
  exchange: lead('post', '/workspaces/:workspaceId/exchange', 'An exchange token → tokens', 'exchangeBody', wsPath),
  refresh: lead('post', '/workspaces/:workspaceId/refresh', 'A refresh token → new tokens', 'refreshBody', wsPath),
};

/** GET …/login-codes (relative to MGMT_BASE). */
export const LOGIN_CODE_ROUTES = {
  pending: route({
    method: 'get',
    path: '/login-codes',
    summary: "The pending login code of one of the caller's emails (what the login would have mailed)",
    query: schema<{ email?: unknown }>('management#loginCodesQuery'),
    answers: { 200: 'The code' },
    auth: 'authtoken',
  }),
};

/** Unauthenticated: POST /lead, /lead/activate, /lead/login, /workspaces/{ws}/exchange and /refresh. */
export function leadRoutes(deps: LeadRoutesDeps): Router {
  const { config, leads } = deps;
  const r = Router();
  const body = jsonBody(config.bodyLimitBytes);
  // codes are guessable (six digits): per email and per address, like a password sign-in
  const startLimit = loginLimits({
    name: 'lead-start',
    perMinute: config.rateLimitLogin,
    clock: deps.clock,
    store: deps.store,
    emailOf: (req) => req.body?.email,
  });
  const activateLimit = loginLimits({
    name: 'lead-activate',
    perMinute: config.rateLimitLogin,
    clock: deps.clock,
    store: deps.store,
    emailOf: (req) => req.body?.email,
  });
  // lead ids, exchange and refresh tokens carry 256 random bits: per address, like the token endpoint
  const tokenLimit = rateLimit({
    perMinute: config.rateLimitTokenEndpoint,
    clock: deps.clock,
    store: deps.store,
    key: (req) => `lead-token|${req.ip}`,
  });
  const L = LEAD_ROUTES;

  mount(r, L.start, [body, ...startLimit], async (_req, res, { body: b }) => {
    res.json(await leads.start(b.email));
  });
  mount(r, L.activate, [body, ...activateLimit], async (_req, res, { body: b }) => {
    await leads.activate(b);
    res.json({ activated: true });
  });
  mount(r, L.login, [body, tokenLimit], async (_req, res, { body: b }) => {
    res.json(await leads.login(b.leadId));
  });
  mount(r, L.exchange, [body, tokenLimit], async (_req, res, { params, body: b }) => {
    res.json(await leads.exchange(params.workspaceId, b.exchangeToken));
  });
  mount(r, L.refresh, [body, tokenLimit], async (_req, res, { params, body: b }) => {
    res.json(await leads.refresh(params.workspaceId, b.refreshToken));
  });
  return r;
}

/** Mounted under the management base path (requireAuth + requireSelf): GET …/login-codes?email=. */
export function loginCodeRoutes(deps: { leads: LeadLogin }): Router {
  const r = Router({ mergeParams: true });
  mountAuthed(r, LOGIN_CODE_ROUTES.pending, [], async (_req, res, p, { query }) => {
    res.json(await deps.leads.pendingCode(p, query.email));
  });
  return r;
}
