/**
 * express middleware run on a plain node:http request, outside express (the token endpoint, a file
 * upload): body-parser, multer and the rate limiter read only what node's request has (its headers,
 * its stream, its socket) and set `body` on it. That is the one claim made here, once: TypeScript
 * compares a method's parameters both ways, so an express handler is taken for `handle` below,
 * where a cast at each use would say the same with less said.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** node's request, with the body a parser read from it (set by the parser, else absent). */
export type BodyRequest = IncomingMessage & { body?: unknown };

interface OnNode {
  handle(req: BodyRequest, res: ServerResponse, next: (err?: unknown) => void): void;
}

/** A middleware of node:http's request and response. */
export type RawHandler = OnNode['handle'];

/** `middleware.handle`, an express middleware, as a handler of node:http's request. */
export const onNode =
  (middleware: OnNode): RawHandler =>
  (req, res, next) =>
    middleware.handle(req, res, next);
