/**
 * The single error type of the daemon. Services throw AppError; the express error
 * handler is the only place an error becomes a response (wire-protocol.md §1).
 * Anything that is not an AppError with expose=true becomes a bland 500.
 */
export interface ErrorDetail {
  pointer: string;
  message: string;
}

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;
  readonly expose: boolean;

  constructor(status: number, code: string, message: string, extra: { details?: ErrorDetail[]; headers?: Record<string, string>; expose?: boolean } = {}) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.details = extra.details;
    this.headers = extra.headers;
    this.expose = extra.expose ?? status < 500;
  }

  toBody(): { code: string; message: string; details?: ErrorDetail[] } {
    return this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
  }
}

export const badRequest = (code: string, message: string, details?: ErrorDetail[]) => new AppError(400, code, message, { details });
export const invalidRequest = (message: string, details?: ErrorDetail[]) => new AppError(400, 'invalid_request', message, { details });
export const unauthenticated = (message = 'A valid Authtoken header is required.') => new AppError(401, 'unauthenticated', message);
export const invalidClient = (message = 'Client authentication failed.') => new AppError(401, 'invalid_client', message);
export const forbidden = (message = 'This path belongs to another workspace or user.') => new AppError(403, 'forbidden', message);
export const notFound = (what = 'Resource') => new AppError(404, 'not_found', `${what} not found.`);
export const conflict = (code: string, message: string) => new AppError(409, code, message);
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', `Too many requests; retry after ${retryAfterSeconds} s.`, { headers: { 'Retry-After': String(retryAfterSeconds) } });

/** Turn anything thrown into {status, body, headers}; unexposed errors become a bland 500. */
export function toErrorResponse(err: unknown): { status: number; body: { code: string; message: string; details?: ErrorDetail[] }; headers: Record<string, string> } {
  if (err instanceof AppError && err.expose) {
    return { status: err.status, body: err.toBody(), headers: err.headers ?? {} };
  }
  return { status: 500, body: { code: 'internal_error', message: 'The daemon hit an internal error; it has been logged.' }, headers: {} };
}
