/** The official CLI's login sequence (docs/protocol.md §2.7) and the login codes it needs. */
import { Router, type Request } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { invalidRequest } from '../../errors.js';
import type { LeadLogin } from '../../services/lead-login.js';
import { jsonBody, loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import { authed } from './auth.js';

export interface LeadRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitLogin' | 'rateLimitTokenEndpoint'>;
  clock: Clock;
  store: HitCounter;
  leads: LeadLogin;
}

const bodyOf = (req: Request): Record<string, unknown> => {
  if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body))
    throw invalidRequest('Send the fields as a JSON object.');
  return req.body as Record<string, unknown>;
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
  const ws = (req: Request) => String(req.params.workspaceId);

  r.post('/lead', body, ...startLimit, async (req, res) => {
    res.json(await leads.start(bodyOf(req).email));
  });
  r.post('/lead/activate', body, ...activateLimit, async (req, res) => {
    await leads.activate(bodyOf(req));
    res.json({ activated: true });
  });
  r.post('/lead/login', body, tokenLimit, async (req, res) => {
    res.json(await leads.login(bodyOf(req).leadId));
  });
  r.post('/workspaces/:workspaceId/exchange', body, tokenLimit, async (req, res) => {
    res.json(await leads.exchange(ws(req), bodyOf(req).exchangeToken));
  });
  r.post('/workspaces/:workspaceId/refresh', body, tokenLimit, async (req, res) => {
    res.json(await leads.refresh(ws(req), bodyOf(req).refreshToken));
  });
  return r;
}

/** Mounted under the management base path (requireAuth + requireSelf): GET …/login-codes?email=. */
export function loginCodeRoutes(deps: { leads: LeadLogin }): Router {
  const r = Router({ mergeParams: true });
  r.get(
    '/login-codes',
    authed(async (req, res, p) => {
      res.json(await deps.leads.pendingCode(p, req.query.email));
    }),
  );
  return r;
}
