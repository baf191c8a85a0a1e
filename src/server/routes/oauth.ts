/** Token endpoint (interface.md endpoint 6) and the calls apps make with their tokens (wire-protocol.md §4). */
import express, { Router, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { AppError, invalidRequest } from '../../errors.js';
import { jsonBody, rateLimit } from '../middleware.js';
import type { ServerDeps } from '../deps.js';
import type { OAuthService, TokenOwner } from '../../services/oauth.js';

const FORM_LIMITS = { fields: 10, fieldSize: 4096, fieldNameSize: 100, files: 0, parts: 10, headerPairs: 20 };

/** multipart/form-data (what the official SDK sends) or urlencoded; nothing else, no files, small fields. */
export function tokenForm(): RequestHandler {
  const multipart = multer({ limits: FORM_LIMITS }).none();
  const urlencoded = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10, type: () => true });
  return (req, res, next) => {
    if (req.is('multipart/form-data')) return multipart(req, res, next);
    if (req.is('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      req.body = {};
      return next();
    }
    next(new AppError(415, 'unsupported_media_type', 'Send multipart/form-data (or application/x-www-form-urlencoded) with client-id, client-secret and code.'));
  };
}

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('pragma', 'no-cache');
  next();
};

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const ownerOf = (res: Response) => res.locals.appOwner as TokenOwner;

export function oauthTokenRoutes(deps: ServerDeps, oauth: OAuthService): Router {
  const { ctx } = deps;
  const r = Router();
  const limit = rateLimit({
    perMinute: ctx.config.rateLimitTokenEndpoint,
    clock: ctx.clock,
    // per caller and client: a flood from one address against one app is cut off; ids are public, secrets are not part of the key
    key: (req) => `${req.ip}|${typeof req.body?.['client-id'] === 'string' ? req.body['client-id'].slice(0, 100) : ''}`,
  });

  // no-store → parse → (rate limit) → authenticate client → consume code → issue
  r.post('/oauth2/access', noStore, tokenForm(), limit, async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const out = await oauth.exchange({ clientId: b['client-id'], clientSecret: b['client-secret'], code: b['code'] });
    res.status(200).json(out);
  });

  const appAuth: RequestHandler = (req, res, next) => {
    res.locals.appOwner = oauth.authenticateApp(header(req.headers['token']), header(req.headers['x-app-token']));
    next();
  };

  r.get('/oauth2/me', noStore, appAuth, (_req, res) => {
    res.json(oauth.me(ownerOf(res)));
  });
  r.delete('/v1/app/authorization', appAuth, async (_req, res) => {
    await oauth.unauthorize(ownerOf(res));
    res.status(204).end();
  });
  r.delete('/v1/app/installation', appAuth, async (_req, res) => {
    const o = ownerOf(res);
    await oauth.uninstall(o.appId, o.workspaceId);
    res.status(204).end();
  });
  r.post('/v1/interactions/complete', appAuth, jsonBody(16 * 1024), (req, res) => {
    const b = req.body as Record<string, unknown> | undefined;
    const fields = ['channelId', 'sourceId', 'sourceType', 'triggerId'] as const;
    const bad = fields.filter((k) => k !== 'channelId' && (typeof b?.[k] !== 'string' || !(b[k] as string)));
    if (!b || typeof b !== 'object' || bad.length) throw invalidRequest('Send {channelId, sourceId, sourceType, triggerId} as JSON.', bad.map((k) => ({ pointer: `/${k}`, message: 'is required' })));
    const body: Record<string, string> = {};
    for (const k of fields) if (typeof b[k] === 'string') body[k] = b[k] as string;
    oauth.completeInteraction(ownerOf(res), body);
    res.status(200).json({});
  });
  return r;
}
