/** The official CLI's login sequence (docs/protocol.md §2.7) and the login codes it needs. */
import { Router } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { badEmail, type LeadActivateBody, type LeadLogin } from '../../services/lead-login.js';
import { jsonBody, loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import { mount, mountAuthed, route } from './route-table.js';
import { schema, type Refusal } from '../../validation/http-input.js';
import { invalidRequest } from '../../errors.js';

export interface LeadRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitLogin' | 'rateLimitTokenEndpoint'>;
  clock: Clock;
  store: HitCounter;
  leads: LeadLogin;
}

const asObject = 'Send the fields as a JSON object.';
const wsPath = schema<{ workspaceId: string }>('management#workspacePath');

/** The login service's words for a field that is missing or not a text of 1 to 512 characters. */
const required =
  (name: string): Refusal =>
  (problems) =>
    problems[0]?.pointer === ''
      ? invalidRequest(asObject)
      : invalidRequest(`${name} is required.`, [{ pointer: `/${name}`, message: 'is required' }]);

/** The official CLI's login sequence (docs/protocol.md §2.7): no Authtoken. */
export const LEAD_ROUTES = {
  start: route({
    method: 'post',
    path: '/lead',
    summary: 'Start a login: a code is made for the email',
    body: schema<{ email: string }>('management#leadStartBody'),
    refuse: (problems) => (problems[0]?.pointer === '' ? invalidRequest(asObject) : badEmail()),
    answers: { 200: '{id}: the login request' },
    auth: 'none',
  }),
  activate: route({
    method: 'post',
    path: '/lead/activate',
    summary: 'Activate the login with its code',
    body: schema<LeadActivateBody>('management#leadActivateBody'),
    // the first field of another type, in the login service's words (it checks them one by one)
    refuse: (problems) => {
      const field = problems[0]?.pointer.split('/')[1];
      if (!field) return invalidRequest(asObject);
      return field === 'email' ? badEmail() : required(field)(problems);
    },
    answers: { 200: '{activated: true}' },
    auth: 'none',
  }),
  login: route({
    method: 'post',
    path: '/lead/login',
    summary: "The login's workspaces and their exchange tokens",
    body: schema<{ leadId: string }>('management#leadLoginBody'),
    refuse: required('leadId'),
    answers: { 200: '{items}' },
    auth: 'none',
  }),
  exchange: route({
    method: 'post',
    path: '/workspaces/:workspaceId/exchange',
    summary: 'An exchange token → tokens',
    params: wsPath,
    body: schema<{ exchangeToken: string }>('management#exchangeBody'),
    refuse: required('exchangeToken'),
    answers: { 200: 'The tokens' },
    auth: 'none',
  }),
  refresh: route({
    method: 'post',
    path: '/workspaces/:workspaceId/refresh',
    summary: 'A refresh token → new tokens',
    params: wsPath,
    body: schema<{ refreshToken: string }>('management#refreshBody'),
    refuse: required('refreshToken'),
    answers: { 200: 'The tokens' },
    auth: 'none',
  }),
};

/** GET …/login-codes (relative to MGMT_BASE). */
export const LOGIN_CODE_ROUTES = {
  pending: route({
    method: 'get',
    path: '/login-codes',
    summary: "The pending login code of one of the caller's emails (what the login would have mailed)",
    query: schema<{ email?: string }>('management#loginCodesQuery'),
    refuse: badEmail,
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
