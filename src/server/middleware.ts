/** Express middleware shared by every route module. */
import crypto from 'node:crypto';
import type http from 'node:http';
import express, { type Request, type Response, type NextFunction, type RequestHandler } from 'express';
import { invalidJson, noRoute, rateLimited, unsupportedMediaType } from '../errors.js';
import { MAX_JSON_DEPTH, tooDeep } from '../json-depth.js';
import { normalizeEmail } from '../model/identity.js';
import { errorCodeOf, sendError } from './respond.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';
import type { Store } from '../store/types.js';

declare global {
  namespace Express {
    interface Request {
      /** Set by requestId(); also sent back as x-request-id. */
      id: string;
    }
  }
}

// Request ids need to be unique, not secret: a random prefix per process and a counter, as the
// token endpoint's (a CSPRNG call per request was 3 % of a management get).
const idPrefix = crypto.randomBytes(4).toString('hex');
let idCounter = 0;

/**
 * A new request id (16 hex digits), and the headers every answer carries: nothing the daemon says is for a cache to
 * keep.
 */
export function startAnswer(res: http.ServerResponse): string {
  idCounter = (idCounter + 1) >>> 0;
  const id = idPrefix + idCounter.toString(16).padStart(8, '0');
  res.setHeader('x-request-id', id);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', 'no-store');
  return id;
}

/** A request id, and the headers every answer carries (startAnswer). */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    req.id = startAnswer(res);
    next();
  };
}

/** How many sign-in attempts one address may make per minute, as a multiple of rateLimitLogin (which is per email). */
const LOGIN_PER_ADDRESS_FACTOR = 5;

/**
 * Sign-in attempts (the API login and the consent screen's form): at most `perMinute` per
 * email address in its normal form, whatever its case or spaces, and five times that per
 * caller address. `name` keeps each form's windows apart (the API login, the consent screen's form…).
 */
export function loginLimits(opts: {
  name: string;
  perMinute: number;
  clock: Clock;
  store: HitCounter;
  emailOf: (req: Request) => unknown;
}): RequestHandler[] {
  const email = (req: Request) => {
    const e = opts.emailOf(req);
    return typeof e === 'string' ? normalizeEmail(e).slice(0, 254) : '';
  };
  return [
    rateLimit({
      perMinute: opts.perMinute * LOGIN_PER_ADDRESS_FACTOR,
      clock: opts.clock,
      store: opts.store,
      key: (req) => `${opts.name}|login-address|${req.ip}`,
    }),
    rateLimit({
      perMinute: opts.perMinute,
      clock: opts.clock,
      store: opts.store,
      key: (req) => `${opts.name}|login-email|${email(req)}`,
    }),
  ];
}

/**
 * The log line of a request: at debug when it succeeded; a failed one (4xx, 5xx) at info, readable
 * on its own: `POST /v1/channels/x/messages → 403 missing_scope`. The path never carries the query
 * string (it may carry an appKey).
 */
export function logRequest(
  logger: Logger,
  r: { reqId: unknown; method?: string; path: string; status: number; ms: number; code?: string },
): void {
  const ms = Math.round(r.ms * 10) / 10;
  if (r.status < 400)
    return logger.debug('request', { reqId: r.reqId, method: r.method, path: r.path, status: r.status, ms });
  logger.info(`${r.method} ${r.path} → ${r.status}${r.code ? ` ${r.code}` : ''}`, { reqId: r.reqId, ms });
}

/** One log line per request (logRequest). */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      logRequest(logger, {
        reqId: req.id,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        ms: Number(process.hrtime.bigint() - start) / 1e6,
        code: errorCodeOf(res),
      });
    });
    next();
  };
}

const hasBody = (req: Request) =>
  Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

/** JSON bodies only: 415 for another content type, 413 over the limit, 400 when unparsable or nested too deeply. */
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({
    limit: limitBytes,
    strict: false,
    type: () => true,
    // checked on the raw bytes, before anything is parsed or kept
    verify: (_req, _res, buf) => {
      if (tooDeep(buf)) throw invalidJson(`The body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep.`);
    },
  });
  return (req, res, next) => {
    if (!hasBody(req)) {
      req.body = undefined;
      return next();
    }
    if (!req.is('application/json') && !req.is('+json')) {
      return next(unsupportedMediaType('Send the body as application/json.'));
    }
    parse(req, res, next);
  };
}

/** The express end of the one error path (respond.ts). */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    sendError(res, err, logger, { reqId: req.id, method: req.method, path: req.path });
  };
}

export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => next(noRoute(req.method, req.path));
}

/** What a limiter needs of the store: windows counted in the store are shared by every daemon behind a balancer. */
export type HitCounter = Pick<Store, 'hit'>;

const WINDOW_MS = 60_000;

/**
 * Requests of one caller a daemon counts in the store at once and then lets through without asking
 * it again (a lease on the window): 1 below 200 a minute, so every request is counted as it comes;
 * above, 1 % of the limit, at most 50. Never more than the limit get through, across daemons; at the
 * end of a window a caller may be refused up to the leases other daemons hold unused (1 % each).
 */
export function leaseSize(perMinute: number): number {
  return Math.max(1, Math.min(50, Math.floor(perMinute / 100)));
}

/**
 * Fixed-window limiter keyed per caller (a window starts at the caller's first request); limit is
 * requests per minute, 0 disables; Retry-After is the rest of the window. The windows are counted
 * by the store (`hit`), not in this process: a second daemon sees the same counts. With a limit of
 * 200 or more a daemon counts `leaseSize` requests at once and lets the next ones through from its
 * lease: the store is asked once per lease, not once per request.
 * `key` must name the limiter as well as the caller (a limiter's own bucket, as each had its own
 * map before). Works on express's requests and on plain node:http ones (the token endpoint):
 * it answers through `next` only, never by throwing.
 */
export function rateLimit(opts: {
  perMinute: number;
  clock: Clock;
  store: HitCounter;
  key: (req: Request, res: Response) => string;
}): RequestHandler {
  const size = leaseSize(opts.perMinute);
  /** Requests this daemon counted in the store and has not let through yet, per caller and window. */
  const leases = new Map<string, { end: number; left: number }>();
  let sweepAt = 1024;
  return (req, res, next) => {
    if (!opts.perMinute) return next();
    const now = opts.clock.now();
    let k: string;
    try {
      k = `rate|${opts.key(req, res)}`;
    } catch (e) {
      return next(e);
    }
    const lease = leases.get(k);
    if (lease && lease.left > 0 && now < lease.end) {
      lease.left--;
      return next();
    }
    opts.store.hit(k, WINDOW_MS, now, size).then(
      (w) => {
        // of the `size` just counted, those within the limit may go: this request, and the rest leased
        const granted = Math.max(0, Math.min(size, opts.perMinute - (w.count - size)));
        if (!granted) return next(rateLimited(Math.max(1, Math.ceil((w.resetAt - now) / 1000))));
        if (granted > 1) {
          const held = leases.get(k);
          if (held && held.end === w.resetAt) held.left += granted - 1;
          else leases.set(k, { end: w.resetAt, left: granted - 1 });
          if (leases.size >= sweepAt) {
            for (const [key, l] of leases) if (l.end <= now || !l.left) leases.delete(key);
            sweepAt = Math.max(1024, leases.size * 2);
          }
        }
        next();
      },
      (e: unknown) => next(e),
    );
  };
}
