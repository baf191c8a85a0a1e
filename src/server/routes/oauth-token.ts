/** The token endpoint (docs/protocol.md §3, endpoint 6), served on plain node:http ahead of express. */
import { Buffer } from 'node:buffer';
import crypto from 'node:crypto';
import process from 'node:process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidRequest } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { CodeExchange } from '../../services/oauth/code-exchange.js';
import { logRequest, rateLimit, type HitCounter } from '../middleware.js';
import { errorCodeOf, sendError, writeWhole } from '../respond.js';
import { namesRoute, routedPath } from '../request-target.js';
import { checked, schema } from '../../validation/http-input.js';
import type { RouteSpec } from './route-table.js';
import { onNode, type BodyRequest } from './on-node.js';
import { tokenForm } from './token-form.js';

export const TOKEN_PATH = '/oauth2/access';

/**
 * What every token answer carries after its request id: the headers startAnswer (middleware.ts)
 * sets on every answer, and no cache may keep tokens (RFC 6749 §5.1).
 */
const ANSWER_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['x-content-type-options', 'nosniff'],
  ['cache-control', 'no-store'],
  ['pragma', 'no-cache'],
];
/** ANSWER_HEADERS as writeHead takes them: name, value, name, value. */
const ANSWER_HEADERS_FLAT = ANSWER_HEADERS.flat();

type TokenForm = { 'client-id': string; 'client-secret': string; code: string };
const TOKEN_PARTS = ['client-id', 'client-secret', 'code'] as const;

/** POST /oauth2/access, served on plain node:http ahead of express (createTokenHandler). */
export const TOKEN_ROUTE = {
  method: 'post',
  path: TOKEN_PATH,
  summary: 'Exchange an authorization code for tokens (client authentication by client-id and client-secret)',
  body: schema<TokenForm>('oauth#tokenForm'),
  bodyTypes: ['multipart/form-data', 'application/x-www-form-urlencoded'],
  // every part that is missing (or empty, or longer than 512) is named at once, in the form's order
  refuse: (problems) => {
    const missing = TOKEN_PARTS.filter((k) => problems.some((v) => v.pointer === `/${k}`));
    return invalidRequest(
      `The form parts ${missing.join(', ')} are required.`,
      missing.map((k) => ({ pointer: `/${k}`, message: 'is required' })),
    );
  },
  answers: { 200: 'The tokens: accessToken, userId, workspaceId, and botToken, botId on install' },
  auth: 'none',
} satisfies RouteSpec<Record<string, never>, Record<string, never>, TokenForm>;

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
export function createTokenHandler(deps: TokenEndpointDeps): (req: BodyRequest, res: ServerResponse) => void {
  const { logger } = deps;
  const parse = tokenForm();
  const limiter = onNode({
    handle: rateLimit({
      perMinute: deps.config.rateLimitTokenEndpoint,
      clock: deps.clock,
      store: deps.store,
      // per caller address and client: a flood from one address against one app is cut off
      key: (req) =>
        `token|${req.socket.remoteAddress}|${typeof req.body?.['client-id'] === 'string' ? req.body['client-id'].slice(0, 100) : ''}`,
    }),
  });
  const logLine = (req: IncomingMessage, res: ServerResponse, reqId: string, status: number, start: bigint) =>
    logRequest(logger, {
      reqId,
      method: req.method,
      path: TOKEN_PATH,
      status,
      ms: Number(process.hrtime.bigint() - start) / 1e6,
      code: status < 400 ? undefined : errorCodeOf(res),
    });
  /** The tokens, head and body in one write (writeWhole), with the headers startAnswer would set, in its order. */
  const send = (req: IncomingMessage, res: ServerResponse, reqId: string, body: unknown, start: bigint) => {
    if (res.headersSent) return;
    const json = JSON.stringify(body);
    writeWhole(
      res,
      200,
      [
        'x-request-id',
        reqId,
        ...ANSWER_HEADERS_FLAT,
        'content-type',
        'application/json; charset=utf-8',
        'content-length',
        String(Buffer.byteLength(json)),
      ],
      json,
    );
    logLine(req, res, reqId, 200, start);
  };
  const fail = (req: IncomingMessage, res: ServerResponse, reqId: string, err: unknown, start: bigint) => {
    if (!res.headersSent) {
      res.setHeader('x-request-id', reqId);
      for (const [name, value] of ANSWER_HEADERS) res.setHeader(name, value);
    }
    // a body we did not read would otherwise be parsed as the next request on this connection
    if (!req.complete) res.setHeader('connection', 'close');
    logLine(req, res, reqId, sendError(res, err, logger, { reqId, method: req.method, path: TOKEN_PATH }), start);
  };
  // request ids need to be unique, not secret: a random per-process prefix and a counter
  // (a CSPRNG call per request showed up at ~3% of an exchange's CPU)
  const idPrefix = crypto.randomBytes(4).toString('hex');
  let idCounter = 0;
  return (req, res) => {
    const start = process.hrtime.bigint();
    idCounter = (idCounter + 1) >>> 0;
    const reqId = idPrefix + idCounter.toString(16).padStart(8, '0');
    parse(req, res, (err) => {
      if (err) return fail(req, res, reqId, err, start);
      limiter(req, res, (err2) => {
        if (err2) return fail(req, res, reqId, err2, start);
        let form: TokenForm;
        try {
          form = checked(TOKEN_ROUTE.body, req.body ?? {}, 'The form', TOKEN_ROUTE);
        } catch (e) {
          return fail(req, res, reqId, e, start);
        }
        deps.exchange
          .exchange({ clientId: form['client-id'], clientSecret: form['client-secret'], code: form.code })
          .then(
            (out) => send(req, res, reqId, out, start),
            (e) => fail(req, res, reqId, e, start),
          );
      });
    });
  };
}

/**
 * Is this request for the token endpoint, in any form of its path express would route to it
 * (request-target.ts: absolute-form, any case, a trailing slash)?
 */
export function isTokenRequest(req: Pick<IncomingMessage, 'method' | 'url'>): boolean {
  if (req.method !== 'POST' || req.url === undefined) return false;
  if (req.url === TOKEN_PATH) return true;
  const path = routedPath(req.url);
  return path !== undefined && namesRoute(path, TOKEN_PATH);
}
