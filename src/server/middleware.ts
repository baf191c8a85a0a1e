/** Express middleware shared by every route module. */
import crypto from 'node:crypto';
import express, { type Request, type Response, type NextFunction, type RequestHandler } from 'express';
import { AppError, toErrorResponse, rateLimited } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      principal?: import('../services/identity.js').Principal;
    }
  }
}

export function requestId(): RequestHandler {
  return (req, res, next) => {
    req.id = crypto.randomBytes(8).toString('hex');
    res.setHeader('x-request-id', req.id);
    res.setHeader('x-content-type-options', 'nosniff');
    next();
  };
}

/** One log line per request: method, path WITHOUT the query string (it may carry an appKey), status, ms. */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      logger.debug('request', { reqId: req.id, method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 });
    });
    next();
  };
}

const hasBody = (req: Request) => Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

/** JSON bodies only: 415 for another content type, 413 over the limit, 400 when unparsable. */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({ limit: limitBytes, strict: false, type: () => true });
  return (req, res, next) => {
    if (!hasBody(req)) {
      req.body = undefined;
      return next();
    }
    if (!req.is('application/json') && !req.is('+json')) {
      return next(new AppError(415, 'unsupported_media_type', 'Send the body as application/json.'));
    }
    parse(req, res, next);
  };
}

/** The only place errors become responses (wire-protocol.md §1). */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    let e = err;
    const t = (err as { type?: string })?.type;
    if (t === 'entity.parse.failed') e = new AppError(400, 'invalid_json', 'The body is not valid JSON.');
    else if (t === 'entity.too.large') e = new AppError(413, 'payload_too_large', 'The body is larger than the limit.');
    else if (t === 'encoding.unsupported' || t === 'charset.unsupported') e = new AppError(415, 'unsupported_media_type', 'Unsupported body encoding.');
    else if ((err as { code?: string })?.code === 'LIMIT_FIELD_VALUE' || (err as { code?: string })?.code === 'LIMIT_FIELD_KEY') e = new AppError(413, 'payload_too_large', 'A form field is larger than the limit.');
    else if (typeof (err as { code?: string })?.code === 'string' && (err as { name?: string }).name === 'MulterError') e = new AppError(400, 'invalid_request', 'The form is not acceptable: ' + (err as Error).message);
    else if (err instanceof URIError) e = new AppError(400, 'invalid_request', 'The request path is not valid percent-encoding.');
    const { status, body, headers } = toErrorResponse(e);
    if (status >= 500) logger.error('request failed', { reqId: req.id, method: req.method, path: req.path, error: (err as Error)?.stack ?? String(err) });
    if (res.headersSent) return;
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.status(status).json(body);
  };
}

export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => next(new AppError(404, 'not_found', `No route for ${req.method} ${req.path}.`));
}

/** Fixed-window limiter keyed per caller; limit is requests per minute, 0 disables. */
export function rateLimit(opts: { perMinute: number; clock: Clock; key: (req: Request) => string }): RequestHandler {
  const windows = new Map<string, { start: number; count: number }>();
  return (req, _res, next) => {
    if (!opts.perMinute) return next();
    const now = opts.clock.now();
    const k = opts.key(req);
    let w = windows.get(k);
    if (!w || now - w.start >= 60_000) {
      if (windows.size > 50_000) windows.clear();
      w = { start: now, count: 0 };
      windows.set(k, w);
    }
    if (++w.count > opts.perMinute) return next(rateLimited(Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000))));
    next();
  };
}
