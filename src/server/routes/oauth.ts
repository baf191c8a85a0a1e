/** The token endpoint (docs/protocol.md §3, endpoint 6) and the calls apps make with their tokens (§4). */
import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { Router, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { invalidRequest, unsupportedMediaType } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { AppTokens, TokenOwner } from '../../services/oauth/app-tokens.js';
import type { CodeExchange } from '../../services/oauth/code-exchange.js';
import type { Revocation } from '../../services/oauth/revocation.js';
import { jsonBody, logRequest, rateLimit, type HitCounter } from '../middleware.js';
import { errorCodeOf, sendError } from '../respond.js';

const FORM_LIMITS = { fields: 10, fieldSize: 4096, fieldNameSize: 100, files: 0, parts: 10, headerPairs: 20 };

const TOKEN_PATH = '/oauth2/access';

type RawHandler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

const mediaType = (req: IncomingMessage) => String(req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();

/**
 * multipart/form-data (what the official SDK sends) or urlencoded; nothing else, no files,
 * small fields. Works on a plain node:http request.
 */
function tokenForm(): RawHandler {
  const multipart = multer({ limits: FORM_LIMITS }).none() as unknown as RawHandler;
  const urlencoded = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10, type: () => true }) as unknown as RawHandler;
  return (req, res, next) => {
    const type = mediaType(req);
    if (type === 'multipart/form-data') {
      // what the multipart reader throws beyond multer's own limits is a malformed form
      return multipart(req, res, (err) => next(err === undefined || (err as { name?: unknown }).name === 'MulterError' ? err : invalidRequest('The multipart form is malformed.')));
    }
    if (type === 'application/x-www-form-urlencoded') return urlencoded(req, res, next);
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      (req as IncomingMessage & { body?: unknown }).body = {};
      return next();
    }
    next(unsupportedMediaType('Send multipart/form-data (or application/x-www-form-urlencoded) with client-id, client-secret and code.'));
  };
}

export interface TokenEndpointDeps {
  config: Pick<Config, 'rateLimitTokenEndpoint'>;
  clock: Clock;
  /** Counts the endpoint's rate-limit windows, shared by every daemon of the store. */
  store: HitCounter;
  logger: Logger;
  exchange: CodeExchange;
}

/**
 * POST /oauth2/access on plain node:http. Steps in order: no-store → parse → rate limit →
 * authenticate the client → consume the code → issue. The daemon's request handler sends this
 * path here before express: express's per-request cost is most of an exchange's CPU time.
 */
export function createTokenHandler(deps: TokenEndpointDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger } = deps;
  const parse = tokenForm();
  const limiter = rateLimit({
    perMinute: deps.config.rateLimitTokenEndpoint,
    clock: deps.clock,
    store: deps.store,
    // per caller address and client: a flood from one address against one app is cut off
    key: (req) => `token|${req.socket.remoteAddress}|${typeof req.body?.['client-id'] === 'string' ? req.body['client-id'].slice(0, 100) : ''}`,
  }) as unknown as RawHandler;
  const logLine = (req: IncomingMessage, res: ServerResponse, status: number, start: bigint) =>
    logRequest(logger, { reqId: res.getHeader('x-request-id'), method: req.method, path: TOKEN_PATH, status, ms: Number(process.hrtime.bigint() - start) / 1e6, code: errorCodeOf(res) });
  const send = (req: IncomingMessage, res: ServerResponse, body: unknown, start: bigint) => {
    if (res.headersSent) return;
    const json = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
    res.end(json);
    logLine(req, res, 200, start);
  };
  const fail = (req: IncomingMessage, res: ServerResponse, err: unknown, start: bigint) => {
    // a body we did not read would otherwise be parsed as the next request on this connection
    if (!req.complete) res.setHeader('connection', 'close');
    logLine(req, res, sendError(res, err, logger, { reqId: res.getHeader('x-request-id'), method: req.method, path: TOKEN_PATH }), start);
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
        deps.exchange.exchange({ clientId: b['client-id'], clientSecret: b['client-secret'], code: b['code'] }).then(
          (out) => send(req, res, out, start),
          (e) => fail(req, res, e, start),
        );
      });
    });
  };
}

/** Is this request for the token endpoint (with or without a trailing slash, as express would route it)? */
export function isTokenRequest(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || !req.url?.startsWith(TOKEN_PATH)) return false;
  const rest = req.url.slice(TOKEN_PATH.length);
  return rest === '' || rest === '/' || rest.startsWith('?') || rest.startsWith('/?');
}

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('pragma', 'no-cache');
  next();
};

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const ownerOf = (res: Response) => res.locals.appOwner as TokenOwner;

export interface AppCallDeps {
  appTokens: AppTokens;
  revocation: Revocation;
  logger: Logger;
}

/** Calls an app makes with its `token` and `x-app-token` headers. */
export function appCallRoutes(deps: AppCallDeps): Router {
  const { appTokens, revocation } = deps;
  const r = Router();
  const appAuth: RequestHandler = async (req, res, next) => {
    res.locals.appOwner = await appTokens.authenticate(header(req.headers['token']), header(req.headers['x-app-token']));
    next();
  };

  r.get('/oauth2/me', noStore, appAuth, async (_req, res) => {
    res.json(await appTokens.me(ownerOf(res)));
  });
  r.delete('/v1/app/authorization', appAuth, async (_req, res) => {
    await revocation.unauthorize(ownerOf(res));
    res.status(204).end();
  });
  r.delete('/v1/app/installation', appAuth, async (_req, res) => {
    const o = ownerOf(res);
    await revocation.uninstall(o.appId, o.workspaceId);
    res.status(204).end();
  });
  // The SDK reports that it finished handling an interaction; the daemon has no loading state to clear, so it only
  // checks and logs it.
  r.post('/v1/interactions/complete', appAuth, jsonBody(16 * 1024), (req, res) => {
    const b = req.body as Record<string, unknown> | undefined;
    const bad = ['sourceId', 'sourceType', 'triggerId'].filter((k) => typeof b?.[k] !== 'string' || !(b[k] as string));
    if (!b || typeof b !== 'object' || bad.length) throw invalidRequest('Send {channelId, sourceId, sourceType, triggerId} as JSON.', bad.map((k) => ({ pointer: `/${k}`, message: 'is required' })));
    deps.logger.debug('interaction complete', { appId: ownerOf(res).appId, sourceType: b.sourceType, triggerId: b.triggerId });
    res.status(200).json({});
  });
  return r;
}
