/** Authentication of management calls: the Authtoken header → the caller (a Principal). */
import type { Request, RequestHandler, Response } from 'express';
import { forbidden, unauthenticated } from '../../errors.js';
import type { IdentityService, Principal } from '../../services/identity.js';

/** The management base path: every call there acts on the caller's own workspace user. */
export const MGMT_BASE = '/workspaces/:workspaceId/workspaceUsers/:workspaceUserId';

const PRINCIPAL = 'principal';

/**
 * Authtoken → principal; 401 when missing, invalid, expired or revoked (express 5 passes a rejection to the error
 * handler).
 */
export function requireAuth(identity: IdentityService): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers['authtoken'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) return next(unauthenticated());
    res.locals[PRINCIPAL] = await identity.authenticate(token);
    next();
  };
}

/** The caller, on a route behind requireAuth. */
export function principalOf(res: Response): Principal {
  const p = res.locals[PRINCIPAL] as Principal | undefined;
  if (!p) throw unauthenticated();
  return p;
}

/** The path's workspace and user must be the token's own, else 403. */
export function requireSelf(): RequestHandler {
  return (req, res, next) => {
    const p = principalOf(res);
    if (req.params.workspaceId !== p.workspaceId || req.params.workspaceUserId !== p.workspaceUserId)
      return next(forbidden());
    next();
  };
}

/** A route handler that is handed the caller. */
export const authed =
  (handler: (req: Request, res: Response, p: Principal) => unknown): RequestHandler =>
  (req, res) =>
    handler(req, res, principalOf(res));
