/** Token endpoint (interface.md endpoint 6) and the calls apps make with their tokens (wire-protocol.md §4). */
import crypto from 'node:crypto';
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { Router, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { AppError, invalidRequest, toErrorResponse } from '../../errors.js';
import { jsonBody, rateLimit } from '../middleware.js';
import type { ServerDeps } from '../deps.js';
import type { OAuthService, TokenOwner } from '../../services/oauth.js';

const FORM_LIMITS = { fields: 10, fieldSize: 4096, fieldNameSize: 100, files: 0, parts: 10, headerPairs: 20 };

type RawHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

const mediaType = (req: IncomingMessage) => String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * multipart/form-data (what the official SDK sends) or urlencoded; nothing else, no files,
 * small fields. Works on a plain node:http request as well as on an express one.
 */
export function tokenForm(): RawHandler {
  const multipart = multer({ limits: FORM_LIMITS }).none() as unknown as RawHandler;
  const urlencoded = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10, type: () => true }) as unknown as RawHandler;
  return (req, res, next) => {
    const type = mediaType(req);
    if (type === 'multipart/form-data') return multipart(req, res, next);
    if (type === 'application/x-www-form-urlencoded') return urlencoded(req, res, next);
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      (req as IncomingMessage & { body?: unknown }).body = {};
      return next();
    }
    next(new AppError(415, 'unsupported_media_type', 'Send multipart/form-data (or application/x-www-form-urlencoded) with client-id, client-secret and code.'));
  };
}

/** Parser and multer failures → AppError (the same mapping as the express error handler). */
function formError(err: unknown): unknown {
  const e = err as { type?: string; code?: string; name?: string; message?: string };
  if (e?.type === 'entity.too.large' || e?.code === 'LIMIT_FIELD_VALUE' || e?.code === 'LIMIT_FIELD_KEY') return new AppError(413, 'payload_too_large', 'A form field is larger than the limit.');
  if (e?.type === 'parameters.too.many') return invalidRequest('The form has too many fields.');
  if (typeof e?.type === 'string' && e.type.startsWith('entity.')) return invalidRequest('The form could not be read.');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') return new AppError(415, 'unsupported_media_type', 'Unsupported body encoding.');
  if (e?.name === 'MulterError') return invalidRequest('The form is not acceptable: ' + e.message);
  if (e instanceof Error && !(e instanceof AppError) && /multipart|boundary|unexpected end/i.test(e.message)) return invalidRequest('The multipart form is malformed.');
  return err;
}

const TOKEN_PATH = '/oauth2/access';

/**
 * POST /oauth2/access on plain node:http: the one implementation of the token endpoint.
 * Steps in order: no-store → parse → rate limit → authenticate client → consume code → issue.
 * It runs ahead of express (see installTokenFastPath) because express's per-request cost is
 * most of an exchange's CPU time; express routes the same handler when it is not installed.
 */
export function createTokenHandler(deps: ServerDeps, oauth: OAuthService): (req: IncomingMessage, res: ServerResponse) => void {
  const { ctx } = deps;
  const parse = tokenForm();
  const limiter = rateLimit({
    perMinute: ctx.config.rateLimitTokenEndpoint,
    clock: ctx.clock,
    // per caller address and client: a flood from one address against one app is cut off
    key: (req) => `${req.socket.remoteAddress}|${typeof req.body?.['client-id'] === 'string' ? req.body['client-id'].slice(0, 100) : ''}`,
  }) as unknown as RawHandler;
  const send = (req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string>, start: bigint) => {
    if (res.headersSent) return;
    const json = JSON.stringify(body);
    res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    ctx.logger.debug('request', { reqId: res.getHeader('x-request-id'), method: req.method, path: TOKEN_PATH, status, ms: Math.round(Number(process.hrtime.bigint() - start) / 1e5) / 10 });
  };
  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown, start: bigint) => {
    const { status, body, headers } = toErrorResponse(formError(err));
    if (status >= 500) ctx.logger.error('request failed', { method: req.method, path: TOKEN_PATH, error: (err as Error)?.stack ?? String(err) });
    // a body we did not read would otherwise be parsed as the next request on this connection
    if (!req.complete) res.setHeader('connection', 'close');
    send(req, res, status, body, headers, start);
  };
  // request ids need to be unique, not secret: a random per-process prefix and a counter
  // (a CSPRNG call per request showed up at ~3% of an exchange's CPU)
  const idPrefix = crypto.randomBytes(4).toString('hex');
  let idCounter = 0;
  return (req, res) => {
    const start = process.hrtime.bigint();
    idCounter = (idCounter + 1) >>> 0;
    res.setHeader('x-request-id', idPrefix + idCounter.toString(16).padStart(8, '0'));
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('cache-control', 'no-store');
    res.setHeader('pragma', 'no-cache');
    parse(req, res, (err) => {
      if (err) return fail(req, res, err, start);
      limiter(req, res, (err2) => {
        if (err2) return fail(req, res, err2, start);
        const b = ((req as IncomingMessage & { body?: Record<string, unknown> }).body ?? {}) as Record<string, unknown>;
        oauth.exchange({ clientId: b['client-id'], clientSecret: b['client-secret'], code: b['code'] }).then(
          (out) => send(req, res, 200, out, {}, start),
          (e) => fail(req, res, e, start),
        );
      });
    });
  };
}

/** Put the token endpoint ahead of express on the daemon's server (express still handles every other request). */
export function installTokenFastPath(server: http.Server, handler: (req: IncomingMessage, res: ServerResponse) => void): void {
  const others = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST' && (req.url === TOKEN_PATH || req.url?.startsWith(TOKEN_PATH + '?'))) return handler(req, res);
    for (const l of others) l.call(server, req, res);
  });
}

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('pragma', 'no-cache');
  next();
};

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const ownerOf = (res: Response) => res.locals.appOwner as TokenOwner;

export function oauthTokenRoutes(deps: ServerDeps, oauth: OAuthService, tokenHandler = createTokenHandler(deps, oauth)): Router {
  const r = Router();
  r.post(TOKEN_PATH, (req, res) => tokenHandler(req, res));

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
