/**
 * One route of the JSON API as data: its method, path, summary and the schemas of its path
 * parameters, query and body (schemas/http). A router mounts its routes from these (`mount`), and
 * tools/openapi.mjs writes schemas/openapi.json from the same tables (routes/http-api.ts), so the
 * description and the routers agree; test/unit/openapi.test.ts still walks express's stack to see it.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import { checked, type Messages, type Refusal, type Schema } from '../../validation/http-input.js';
import type { Principal } from '../../services/identity.js';
import { principalOf } from './auth.js';

type Auth = 'authtoken' | 'app-token' | 'none';

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

export interface RouteSpec<P = Record<string, never>, Q = Record<string, never>, B = undefined> {
  method: Method;
  /** The express path, relative to where its router is mounted. */
  path: string;
  summary: string;
  params?: Schema<P>;
  query?: Schema<Q>;
  body?: Schema<B>;
  /** How the body is sent, when not JSON: the media types the description lists. */
  bodyTypes?: readonly string[];
  /** The messages of the 400s where a route says more than the default (by the first problem's pointer). */
  messages?: Messages;
  /** A route's own 400 from every problem of the body (the token endpoint lists every missing part). */
  refuse?: Refusal;
  /** The statuses of its answers besides the errors of docs/protocol.md §1, for the description. */
  answers: Record<number, string>;
  /** The scope an app's token needs for the call (403 missing_scope without it). */
  scope?: string;
  /** A body the handler reads itself (a file upload's multipart form): described, not checked here. */
  form?: Schema<unknown>;
  /** The Authtoken, an app's token, or none (one of several, when a list): for the description. */
  auth: Auth | Auth[];
}

export const route = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec<P, Q, B> => spec;

/** A JSON body whose schema leaves its type open is this when it is not an object: its properties apply to objects. */
export type NotAnObject = string | number | boolean | null | undefined | unknown[];

/** The fields of such a body: none when it is not an object (the service then says what is missing). */
export const fieldsOf = <T extends object>(b: T | NotAnObject): Partial<T> =>
  b !== null && typeof b === 'object' && !Array.isArray(b) ? b : {};

/** A route's input once its schemas passed. */
export interface Input<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

/**
 * The request's input, checked against the route's schemas (params, then query, then body): each
 * one as its type, else the route's 400. A part without a schema must be empty (no query, no body).
 */
function inputOf<P, Q, B>(spec: RouteSpec<P, Q, B>, req: Request): Input<P, Q, B> {
  const opts = { messages: spec.messages, refuse: spec.refuse };
  return {
    params: spec.params ? checked(spec.params, { ...req.params }, 'The path', opts) : noInput<P>(),
    // a copy: express 5 parses the query again at every read, and the schema may coerce a number
    query: spec.query ? checked(spec.query, { ...req.query }, 'The query', opts) : noInput<Q>(),
    body: spec.body ? checked(spec.body, req.body, 'The body', opts) : noInput<B>(),
  };
}

function noInput<T>(): T {
  return undefined as T;
}

type Handler<P, Q, B> = (req: Request, res: Response, input: Input<P, Q, B>) => unknown;

/** Mount `spec` on `r`: its middleware (auth, limits, body parser) in order, then the checks, then the handler. */
export function mount<P, Q, B>(
  r: Router,
  spec: RouteSpec<P, Q, B>,
  before: RequestHandler[],
  handler: Handler<P, Q, B>,
): void {
  r[spec.method](spec.path, ...before, (req: Request, res: Response) => handler(req, res, inputOf(spec, req)));
}

/**
 * `mount` for a management route: the caller first (an act-as token is refused before its input is
 * looked at, docs/security.md AS1), then the checks, then the handler with both.
 */
export function mountAuthed<P, Q, B>(
  r: Router,
  spec: RouteSpec<P, Q, B>,
  before: RequestHandler[],
  handler: (req: Request, res: Response, p: Principal, input: Input<P, Q, B>) => unknown,
): void {
  r[spec.method](spec.path, ...before, (req: Request, res: Response) => {
    const p = principalOf(res);
    return handler(req, res, p, inputOf(spec, req));
  });
}
