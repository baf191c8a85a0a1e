/** The token endpoint (docs/protocol.md §3, endpoint 6) and the calls apps make with their tokens (§4). */
import { Buffer, isAscii } from 'node:buffer';
import crypto from 'node:crypto';
import process from 'node:process';
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
import { errorCodeOf, sendError, writeWhole } from '../respond.js';
import { must } from '../../must.js';
import { recordOr } from '../../unknown-values.js';
import { namesRoute, routedPath } from '../request-target.js';
import { checked, schema } from '../../validation/http-input.js';
import { mount, route, type RouteSpec } from './route-table.js';
import { onNode, type BodyRequest, type RawHandler } from './on-node.js';

// multer 2's own option (its index.js documents it), which @types/multer does not list yet
declare module 'multer' {
  interface Options {
    /** Feeds the request body to busboy, instead of `req.pipe(busboy)`. */
    streamHandler?(req: IncomingMessage, busboy: NodeJS.WritableStream): void;
  }
}

export const FORM_LIMITS = { fields: 10, fieldSize: 4096, fieldNameSize: 100, files: 0, parts: 10, headerPairs: 20 };

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

const mediaType = (req: IncomingMessage) =>
  String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();

/** A body up to this size is read whole and, when it has the plain shape, parsed at once (simpleForm). */
const SIMPLE_FORM_MAX = 64 * 1024;
/** `multipart/form-data; boundary=…` with nothing else, the boundary plain or quoted. */
const PLAIN_MULTIPART = /^multipart\/form-data; ?boundary=(?:([\w'()+,\-./:=?]{1,70})|"([\w'()+,\-./:=?]{1,70})")$/i;
/** A part's one header: its name, plain (as FormData and the SDK write it: no file, no escapes). */
const PLAIN_PART_HEADER = /^content-disposition: ?form-data; ?name="([\w.-]{1,100})"$/i;

/** Whether s[from, to) is 1 to `max` characters, each one `ok`. */
function allOf(s: string, from: number, to: number, max: number, ok: (c: number) => boolean): boolean {
  if (to - from < 1 || to - from > max) return false;
  for (let i = from; i < to; i++) if (!ok(s.charCodeAt(i))) return false;
  return true;
}
/** A test of a character code for membership of the ASCII characters of `chars`. */
function charClass(chars: string): (c: number) => boolean {
  const member = new Uint8Array(128);
  for (let i = 0; i < chars.length; i++) member[chars.charCodeAt(i)] = 1;
  return (c) => member[c] === 1;
}
const WORD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_';
/** [\w.-] */
const nameChar = charClass(`${WORD}.-`);
/** [\w'()+,\-./:=?] */
const boundaryChar = charClass(`${WORD}'()+,-./:=?`);

const MULTIPART_AS_SENT = 'multipart/form-data; boundary=';
const PART_HEADER_AS_SENT = 'Content-Disposition: form-data; name="';

/**
 * The boundary of a content type of the plain shape (PLAIN_MULTIPART), else undefined. The spelling
 * clients send (FormData, the SDK) is checked without a RegExp, every other spelling by PLAIN_MULTIPART.
 */
export function plainBoundary(contentType: string): string | undefined {
  const n = MULTIPART_AS_SENT.length;
  if (contentType.startsWith(MULTIPART_AS_SENT) && allOf(contentType, n, contentType.length, 70, boundaryChar))
    return contentType.slice(n);
  const m = PLAIN_MULTIPART.exec(contentType);
  return m ? (m[1] ?? m[2]) : undefined;
}

/** The name of a part's header of the plain shape (PLAIN_PART_HEADER), else undefined; as plainBoundary. */
export function plainPartName(header: string): string | undefined {
  const n = PART_HEADER_AS_SENT.length;
  if (
    header.startsWith(PART_HEADER_AS_SENT) &&
    header.endsWith('"') &&
    allOf(header, n, header.length - 1, 100, nameChar)
  )
    return header.slice(n, -1);
  return PLAIN_PART_HEADER.exec(header)?.[1];
}

/**
 * The fields of a multipart form of the plain shape every client sends for this endpoint (one
 * `Content-Disposition: form-data; name="…"` header per part, ASCII only, within FORM_LIMITS, no
 * name twice, no preamble or epilogue), else undefined: then multer reads the same bytes, with all
 * of its rules and errors. Measured: multer and busboy were 11 % of an exchange's CPU, mostly the
 * parser made for each request.
 */
export function simpleForm(body: Buffer, boundary: string): Record<string, string> | undefined {
  if (!isAscii(body)) return undefined;
  const text = body.toString('latin1');
  const delim = `\r\n--${boundary}`;
  if (!text.startsWith(`--${boundary}\r\n`)) return undefined;
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  let at = boundary.length + 4;
  for (let parts = 1; ; parts++) {
    if (parts > FORM_LIMITS.fields) return undefined;
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return undefined;
    const name = plainPartName(text.slice(at, headEnd));
    if (name === undefined || name in fields) return undefined;
    const valueEnd = text.indexOf(delim, headEnd + 4);
    if (valueEnd < 0 || valueEnd - (headEnd + 4) > FORM_LIMITS.fieldSize) return undefined;
    fields[name] = text.slice(headEnd + 4, valueEnd);
    at = valueEnd + delim.length;
    if (text.startsWith('\r\n', at)) {
      at += 2;
      continue;
    }
    const rest = text.slice(at);
    return rest === '--' || rest === '--\r\n' ? fields : undefined;
  }
}

/**
 * multipart/form-data (what the official SDK sends) or urlencoded; nothing else, no files,
 * small fields. Works on a plain node:http request.
 */
function tokenForm(): RawHandler {
  const urlencoded = onNode({
    handle: express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10, type: () => true }),
  });
  // multer reads what was read already, then the rest of the stream if any (it calls streamHandler
  // synchronously, so `feed` is this request's while the call lasts)
  let feed: { head: Buffer; rest: boolean } | undefined;
  const multipart = onNode({
    handle: multer({
      limits: FORM_LIMITS,
      streamHandler: (req: IncomingMessage, busboy: NodeJS.WritableStream) => {
        if (!feed) return void req.pipe(busboy);
        if (!feed.rest) return void busboy.end(feed.head);
        busboy.write(feed.head);
        req.pipe(busboy);
      },
    }).none(),
  });
  const viaMulter = (
    req: IncomingMessage,
    res: ServerResponse,
    next: (err?: unknown) => void,
    head?: Buffer,
    rest = false,
  ) => {
    feed = head && { head, rest };
    try {
      // what the multipart reader throws beyond multer's own limits is a malformed form
      multipart(req, res, (err) =>
        next(
          err === undefined || recordOr(err)?.name === 'MulterError'
            ? err
            : invalidRequest('The multipart form is malformed.'),
        ),
      );
    } finally {
      feed = undefined;
    }
  };
  return (req, res, next) => {
    const boundary = plainBoundary(String(req.headers['content-type'] ?? ''));
    const type = boundary === undefined ? mediaType(req) : 'multipart/form-data';
    if (type === 'multipart/form-data') {
      if (boundary === undefined || Number(req.headers['content-length'] ?? 0) > SIMPLE_FORM_MAX)
        return viaMulter(req, res, next);
      return readUpTo(req, SIMPLE_FORM_MAX, (err, body, complete) => {
        if (err) return next(err);
        const fields = complete ? simpleForm(must(body), boundary) : undefined;
        if (!fields) return viaMulter(req, res, next, body, !complete);
        req.body = fields;
        next();
      });
    }
    if (type === 'application/x-www-form-urlencoded') return urlencoded(req, res, next);
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
      req.body = {};
      return next();
    }
    next(
      unsupportedMediaType(
        'Send multipart/form-data (or application/x-www-form-urlencoded) with client-id, client-secret and code.',
      ),
    );
  };
}

/**
 * Read `req`'s body up to `max` bytes: `complete` when it ended within them; else the bytes read so
 * far, the stream paused where it stopped (to be piped on). An error or a close before the end is `err`.
 */
function readUpTo(
  req: IncomingMessage,
  max: number,
  done: (err: unknown, body?: Buffer, complete?: boolean) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const stop = () => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
  };
  const onData = (c: Buffer) => {
    chunks.push(c);
    size += c.length;
    if (size <= max) return;
    stop();
    req.pause();
    done(undefined, Buffer.concat(chunks), false);
  };
  const onEnd = () => {
    stop();
    done(undefined, chunks.length === 1 ? must(chunks[0]) : Buffer.concat(chunks), true);
  };
  const onError = (e: unknown) => {
    stop();
    done(e);
  };
  const onClose = () => onError(Object.assign(new Error('request aborted'), { code: 'ECONNABORTED' }));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
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

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('pragma', 'no-cache');
  next();
};

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
/** The app token's owner appAuth found, by the request's response (typed, where res.locals holds anything). */
const appOwners = new WeakMap<Response, TokenOwner>();
const ownerOf = (res: Response) => must(appOwners.get(res), 'the token owner of an app call');

export interface AppCallDeps {
  appTokens: AppTokens;
  revocation: Revocation;
  logger: Logger;
}

const COMPLETE_PARTS = ['sourceId', 'sourceType', 'triggerId'] as const;
type InteractionComplete = { channelId?: string; sourceId: string; sourceType: string; triggerId: string };

/** The calls an app makes with its `token` and `x-app-token` headers (docs/protocol.md §4). */
export const APP_CALL_ROUTES = {
  me: route({
    method: 'get',
    path: '/oauth2/me',
    summary: "Who the token is: the app, the workspace and the user (or the app's bot)",
    answers: { 200: 'The token owner' },
    auth: 'app-token',
  }),
  unauthorize: route({
    method: 'delete',
    path: '/v1/app/authorization',
    summary: "Revoke the user's authorization of the app",
    answers: { 204: 'Revoked' },
    auth: 'app-token',
  }),
  uninstall: route({
    method: 'delete',
    path: '/v1/app/installation',
    summary: 'Uninstall the app from the workspace',
    answers: { 204: 'Uninstalled' },
    auth: 'app-token',
  }),
  interactionComplete: route({
    method: 'post',
    path: '/v1/interactions/complete',
    summary: 'The app finished handling an interaction (checked and logged; there is no loading state to clear)',
    body: schema<InteractionComplete>('oauth#interactionComplete'),
    refuse: (problems) => {
      // not an object at all: every part is missing
      const bad = COMPLETE_PARTS.filter((k) => problems.some((v) => v.pointer === `/${k}` || v.pointer === ''));
      return invalidRequest(
        'Send {channelId, sourceId, sourceType, triggerId} as JSON.',
        bad.map((k) => ({ pointer: `/${k}`, message: 'is required' })),
      );
    },
    answers: { 200: 'An empty object' },
    auth: 'app-token',
  }),
};

/** Calls an app makes with its `token` and `x-app-token` headers. */
export function appCallRoutes(deps: AppCallDeps): Router {
  const { appTokens, revocation } = deps;
  const r = Router();
  const appAuth: RequestHandler = async (req, res, next) => {
    appOwners.set(res, await appTokens.authenticate(header(req.headers['token']), header(req.headers['x-app-token'])));
    next();
  };
  const A = APP_CALL_ROUTES;

  mount(r, A.me, [noStore, appAuth], async (_req, res) => {
    res.json(await appTokens.me(ownerOf(res)));
  });
  mount(r, A.unauthorize, [appAuth], async (_req, res) => {
    await revocation.unauthorize(ownerOf(res));
    res.status(204).end();
  });
  mount(r, A.uninstall, [appAuth], async (_req, res) => {
    const o = ownerOf(res);
    await revocation.uninstall(o.appId, o.workspaceId);
    res.status(204).end();
  });
  mount(r, A.interactionComplete, [appAuth, jsonBody(16 * 1024)], (_req, res, { body: b }) => {
    deps.logger.debug('interaction complete', {
      appId: ownerOf(res).appId,
      sourceType: b.sourceType,
      triggerId: b.triggerId,
    });
    res.status(200).json({});
  });
  return r;
}
