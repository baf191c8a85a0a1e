/**
 * The one error path of the daemon: whatever a route, a body parser or a websocket upgrade
 * throws is turned into an AppError here (`asAppError`), then written as the JSON body of
 * docs/protocol.md §1 (`sendError`), as the consent screen's HTML page (`sendErrorPage`) or
 * as a refused upgrade (`refuseUpgrade`). 5xx are logged once, with the stack, never sent.
 */
import http from 'node:http';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  AppError,
  headersTooLarge,
  invalidJson,
  invalidRequest,
  payloadTooLarge,
  requestTimeout,
  storeUnavailable,
  toErrorResponse,
  unsupportedMediaType,
} from '../errors.js';
import { StoreUnavailable, StoreValueRefused } from '../store/types.js';
import type { Logger } from '../logger.js';
import { messageOf, recordOr, stackOf } from '../unknown-values.js';

/** Multer's limit codes that mean "too large" rather than "malformed". */
const MULTER_TOO_LARGE = new Set(['LIMIT_FIELD_VALUE', 'LIMIT_FIELD_KEY', 'LIMIT_FILE_SIZE']);

/**
 * Errors of the body parsers (body-parser's http-errors, multer, zlib) and of URL decoding,
 * classified by their type, status or code fields — never by their message text.
 */
export function asAppError(err: unknown): unknown {
  if (err instanceof AppError || !err || typeof err !== 'object') return err;
  // an outage, not a bug: 503 with the store's reason (what /healthz says) and Retry-After
  if (err instanceof StoreUnavailable) return storeUnavailable(err.reason);
  // only a caller's input can bring a NUL into a commit
  if (err instanceof StoreValueRefused)
    return invalidRequest(
      'A text of the request holds the character U+0000 (NUL) or an unpaired surrogate (half of a UTF-16 pair), which appreg does not store.',
    );
  // what the parsers throw are Errors with fields of their own (type, status, code), read by name
  const e = recordOr(err);
  if (!e) return err;
  if (e.type === 'entity.parse.failed') return invalidJson();
  if (e.name === 'MulterError') {
    // multer's messages are its own fixed sentences ("Too many fields"), never the client's input
    return MULTER_TOO_LARGE.has(String(e.code))
      ? payloadTooLarge('A form field is larger than the limit.')
      : invalidRequest(`The form is not acceptable: ${messageOf(err)}.`);
  }
  if (typeof e.status === 'number' && e.status >= 400 && e.status < 500 && e.expose === true) {
    if (e.status === 413) return payloadTooLarge();
    if (e.status === 415) return unsupportedMediaType();
    if (e.type === 'parameters.too.many') return invalidRequest('The form has too many fields.');
    return invalidRequest('The body could not be read.');
  }
  if (typeof e.code === 'string' && e.code.startsWith('Z_'))
    return invalidRequest('The body is not valid for its Content-Encoding.');
  if (clientAborted(err)) return invalidRequest('The request ended before its body was complete.');
  if (err instanceof URIError) return invalidRequest('The request path is not valid percent-encoding.');
  return err;
}

export interface RequestInfo {
  method?: string;
  path: string;
  reqId?: unknown;
}

/**
 * Log what went wrong on the daemon's side: an unexpected error with its stack (a bug); a
 * deliberate 5xx (an app's host unreachable, shutting down) as a warning without one; a
 * request refused while the store is down at debug (the store logs the outage itself, once,
 * and when it ends); a client that went away mid-request at debug. 4xx are the client's and
 * only in the access log.
 */
function report(logger: Logger, err: unknown, status: number, info: RequestInfo): void {
  const where = { reqId: info.reqId, method: info.method, path: info.path };
  if (clientAborted(err)) logger.debug('the client went away before its request was read', where);
  else if (status < 500) return;
  else if (err instanceof StoreUnavailable) logger.debug('request refused: the store is unavailable', where);
  else if (err instanceof AppError) logger.warn(err.message, { ...where, code: err.code });
  else logger.error('request failed', { ...where, error: stackOf(err) });
}

/** body-parser's "request aborted", or the socket reset under the parser. */
function clientAborted(err: unknown): boolean {
  const e = recordOr(err);
  return e?.type === 'request.aborted' || e?.code === 'ECONNABORTED' || e?.code === 'ECONNRESET';
}

/** The error code each error answer was sent with, for the request's log line (middleware.ts). */
const codes = new WeakMap<ServerResponse, string>();
export const errorCodeOf = (res: ServerResponse): string | undefined => codes.get(res);

/** Write `err` as the JSON error body (works on express's and node:http's responses). */
export function sendError(res: ServerResponse, err: unknown, logger: Logger, info: RequestInfo): number {
  const { status, body, headers } = toErrorResponse(asAppError(err));
  report(logger, err, status, info);
  codes.set(res, body.code);
  if (res.headersSent) return status;
  const json = JSON.stringify(body);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
  return status;
}

/**
 * An answer whose head and body are known at once, sent in one write(2): the head in one writeHead
 * (`headers`: name, value, name, value, none set before), then the body. Node's `end(body)` corks the
 * socket, queues the head and body and an empty chunk, and sends them by writev; its `write(body)`
 * corks the socket until the next tick, so the `end()` after it queues the empty chunk the same way.
 * Uncorking after the write sends head and body at once, and `end()` then has nothing to send.
 * Measured on a bare server answering a token's JSON: 30 against 33–35 µs of CPU a request.
 */
export function writeWhole(res: ServerResponse, status: number, headers: string[], body: string): void {
  res.writeHead(status, headers);
  const socket = res.socket;
  const corked = socket?.writableCorked ?? 0;
  res.write(body);
  // only the cork this write added (none when the socket was corked already, or not this answer's yet)
  if (socket && socket.writableCorked > corked) socket.uncork();
  res.end();
}

/** Write `err` as an HTML page: `render(status, title, message)` gives the page. */
export function sendErrorPage(
  res: ServerResponse,
  err: unknown,
  logger: Logger,
  info: RequestInfo,
  render: (status: number, message: string) => string,
): void {
  const { status, body, headers } = toErrorResponse(asAppError(err));
  report(logger, err, status, info);
  if (res.headersSent) return;
  const html = render(status, body.message);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

/**
 * Answer on the bare socket with the same JSON body, then close it: a refused websocket upgrade, or a request Node
 * could not parse.
 */
export function refuseUpgrade(socket: Duplex, err: unknown, logger: Logger, info: RequestInfo): void {
  const { status, body } = toErrorResponse(asAppError(err));
  report(logger, err, status, info);
  const json = JSON.stringify(body);
  const reason = http.STATUS_CODES[status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nCache-Control: no-store\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
  );
}

/**
 * The server's 'clientError' listener: headers too large (431), a request too slow (408) or
 * malformed HTTP (400) get the JSON error body instead of Node's bare answer, where the socket
 * can still take one.
 */
export function answerClientError(logger: Logger) {
  return (err: NodeJS.ErrnoException, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? headersTooLarge()
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? requestTimeout()
          : invalidRequest('The request is not valid HTTP.');
    logger.debug('refused a request Node could not read', { code: err.code });
    refuseUpgrade(socket, answer, logger, { path: '(unparsed)' });
  };
}
