/** Authentication of management calls: the Authtoken header → the caller (a Principal). */
import type { RequestHandler, Response } from 'express';
import { forbidden, unauthenticated } from '../../errors.js';
import type { IdentityService, Principal } from '../../services/identity.js';

/** The management base path: every call there acts on the caller's own workspace user. */
export const MGMT_BASE = '/workspaces/:workspaceId/workspaceUsers/:workspaceUserId';

/** The caller requireAuth found, by the request's response (typed, where res.locals holds anything). */
const callers = new WeakMap<Response, Principal>();
const ACT_AS_ALLOWED = 'actAsAllowed';

/**
 * An act-as token (POST …/act-as) reaches only the routes marked with `actAsAllowed` (docs/security.md
 * AS1); anywhere else it is refused before the route does anything.
 */
export const refusedActAs = () =>
  forbidden(
    "An act-as token can only read and post in its workspace, react, run commands and authorize the acting owner's apps as that user; this call needs their own login.",
  );

/** The caller of a call served outside express (no route marks): refused when it holds an act-as token. */
export function notActingAs(p: Principal): Principal {
  if (p.actedBy) throw refusedActAs();
  return p;
}

/** Marks a route an act-as token may call (docs/security.md AS1); put it before anything that reads the caller. */
export const actAsAllowed: RequestHandler = (_req, res, next) => {
  res.locals[ACT_AS_ALLOWED] = true;
  next();
};

/**
 * Authtoken → principal; 401 when missing, invalid, expired or revoked (express 5 passes a rejection to the error
 * handler).
 */
export function requireAuth(identity: IdentityService): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers['authtoken'];
    const token = Array.isArray(header) ? header[0] : header;
    if (!token) return next(unauthenticated());
    callers.set(res, await identity.authenticate(token));
    next();
  };
}

/** The caller as authenticated, whatever the route allows. */
function callerOf(res: Response): Principal {
  const p = callers.get(res);
  if (!p) throw unauthenticated();
  return p;
}

/**
 * The caller, on a route behind requireAuth. Every route reads its caller through here, so an act-as
 * token is refused on every route that is not marked `actAsAllowed`: deny unless listed.
 */
export function principalOf(res: Response): Principal {
  const p = callerOf(res);
  if (p.actedBy && res.locals[ACT_AS_ALLOWED] !== true) throw refusedActAs();
  return p;
}

/** The path's workspace and user must be the token's own, else 403. */
export function requireSelf(): RequestHandler {
  return (req, res, next) => {
    const p = callerOf(res);
    if (req.params.workspaceId !== p.workspaceId || req.params.workspaceUserId !== p.workspaceUserId)
      return next(forbidden());
    next();
  };
}
