/**
 * The daemon's wire errors: one table of codes with one status each, and a named
 * constructor per code. Services throw these; src/server/respond.ts is the only place an
 * error becomes a response (JSON body `{code, message, details?}`, docs/protocol.md §1).
 * Anything that is not an AppError becomes a bland 500 `internal_error`.
 */
export interface ErrorDetail {
  pointer: string;
  message: string;
}

/** Every code the daemon answers with, and its HTTP status. */
export const ERROR_STATUS = {
  invalid_json: 400,
  invalid_manifest: 400,
  invalid_request: 400,
  invalid_grant: 400,
  invalid_scope: 400,
  invalid_redirect_url: 400,
  invalid_lead: 400,
  invalid_login_code: 400,
  unknown_client: 400,
  egress_denied: 400,
  socket_mode_disabled: 400,
  unauthenticated: 401,
  invalid_client: 401,
  invalid_credentials: 401,
  forbidden: 403,
  missing_scope: 403,
  not_found: 404,
  app_published: 409,
  user_exists: 409,
  payload_not_kept: 409,
  delivery_not_retrying: 409,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  manifest_unavailable: 502,
  shutting_down: 503,
  store_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

interface Extra {
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, extra: Extra = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = extra.details;
    this.headers = extra.headers;
  }

  toBody(): ErrorBody {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}

export interface ErrorBody {
  code: string;
  message: string;
  details?: ErrorDetail[];
}

const withDetails = (code: ErrorCode) => (message: string, details?: ErrorDetail[]) =>
  new AppError(code, message, { details });
const plain =
  (code: ErrorCode, fallback: string) =>
  (message = fallback) =>
    new AppError(code, message);

export const invalidJson = plain('invalid_json', 'The body is not valid JSON.');
export const invalidManifest = withDetails('invalid_manifest');
export const invalidRequest = withDetails('invalid_request');
export const invalidGrant = plain('invalid_grant', 'The authorization code is unknown, expired or already used.');
export const invalidScope = plain('invalid_scope', 'The scopes are not acceptable.');
export const invalidRedirectUrl = plain('invalid_redirect_url', 'The redirectUrl is not acceptable.');
export const invalidLead = plain(
  'invalid_lead',
  'The login request is unknown, expired, void or already used; start the login again.',
);
export const invalidLoginCode = plain('invalid_login_code', 'The login code is wrong.');
export const unknownClient = plain('unknown_client', 'No app has this clientId.');
export const egressDenied = plain('egress_denied', 'The egress policy refuses this address.');
export const socketModeDisabled = plain('socket_mode_disabled', 'This app does not use socket mode.');
export const unauthenticated = plain('unauthenticated', 'A valid Authtoken header is required.');
export const invalidClient = plain('invalid_client', 'Client authentication failed.');
export const invalidCredentials = plain('invalid_credentials', 'Email or password is wrong.');
export const forbidden = plain('forbidden', 'This path belongs to another workspace or user.');
/** A platform API call whose token lacks the scope the call needs; the message names it. */
export const missingScope = (scope: string) =>
  new AppError('missing_scope', `This call needs the scope ${scope}, which the token was not granted.`);
export const notFound = (what = 'Resource') => new AppError('not_found', `${what} not found.`);
export const noRoute = (method: string, path: string) => new AppError('not_found', `No route for ${method} ${path}.`);
export const appPublished = plain('app_published', 'A published app cannot be changed; unpublish it first.');
export const userExists = plain('user_exists', 'That email is already a user of this workspace.');
export const payloadNotKept = plain('payload_not_kept', 'The payload of this delivery is not kept.');
export const deliveryNotRetrying = plain(
  'delivery_not_retrying',
  'Only an event waiting for its next retry can be cancelled.',
);
export const payloadTooLarge = plain('payload_too_large', 'The body is larger than the limit.');
export const unsupportedMediaType = plain('unsupported_media_type', 'Unsupported body encoding.');
export const requestTimeout = plain('request_timeout', 'The request was not received in time.');
export const headersTooLarge = plain('headers_too_large', 'The request headers are larger than the limit.');
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError('rate_limited', `Too many requests; retry after ${retryAfterSeconds} s.`, {
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
export const manifestUnavailable = plain('manifest_unavailable', 'The manifest could not be fetched.');
export const shuttingDown = plain('shutting_down', 'The daemon is shutting down.');
/** How long a client is asked to wait when the store is down: the store itself checks again every second. */
const STORE_RETRY_AFTER_S = 1;
/** The store cannot be reached or cannot write (`reason`: what /healthz says): try again. */
export const storeUnavailable = (reason: string) =>
  new AppError('store_unavailable', `The daemon cannot use its store right now (${reason}). Try again in a moment.`, {
    headers: { 'Retry-After': String(STORE_RETRY_AFTER_S) },
  });

const INTERNAL: ErrorBody = {
  code: 'internal_error',
  message: 'The daemon hit an internal error; it has been logged.',
};

/** Anything thrown → {status, body, headers}; what is not an AppError becomes a bland 500. */
export function toErrorResponse(err: unknown): { status: number; body: ErrorBody; headers: Record<string, string> } {
  if (err instanceof AppError) return { status: err.status, body: err.toBody(), headers: err.headers ?? {} };
  return { status: 500, body: INTERNAL, headers: {} };
}
