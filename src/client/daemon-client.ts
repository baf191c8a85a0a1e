/**
 * The one HTTP client of the CLI and `appreg test`: every call to the daemon's API, and the one call
 * to an app (`authorize --follow`), goes through here, on node:http: a client command loads no HTTP
 * library. Neither client ever opens the daemon's data file.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { CliError, EXIT } from './exit.js';
import { resolveCredentials, resolveUrl, type Credentials } from './credentials.js';
import type { GlobalOpts, Io } from './io.js';
import { errnoOf, fieldOf, messageOf, recordOr, stringOr } from '../unknown-values.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}
interface Outgoing {
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** Thrown when no HTTP answer came back at all (refused, reset, timed out, not a URL). */
class NoAnswer extends Error {}

/**
 * One HTTP exchange with node:http(s): no redirects followed, one connection per call. (Not fetch:
 * fetch refuses "bad ports" such as 6000 or 6667, where a daemon may well listen.)
 */
async function send(url: string, req: Outgoing, timeoutMs: number): Promise<Answer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch (e) {
    throw new NoAnswer(errnoOf(e) ?? messageOf(e));
  }
  const { request } = target.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const signal = AbortSignal.timeout(timeoutMs);
  return new Promise((resolve, reject) => {
    const fail = (e: NodeJS.ErrnoException) =>
      reject(new NoAnswer(signal.aborted ? 'ETIMEDOUT' : (e.code ?? e.message)));
    const r = request(target, { method: req.method, headers: req.headers, agent: false, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    r.on('error', fail);
    r.end(req.body);
  });
}

/** Why nothing answers at `url` (ECONNREFUSED, ETIMEDOUT…), or undefined when something does. */
export async function unreachable(url: string): Promise<string | undefined> {
  try {
    await send(`${url}/healthz`, { method: 'GET', headers: {} }, 5000);
    return undefined;
  } catch (e) {
    if (e instanceof NoAnswer) return e.message;
    throw e;
  }
}

/** The error for a daemon that does not answer: exit 3. */
export const notReachable = (url: string, why: string) =>
  new CliError(`cannot reach the daemon at ${url}: ${why}. Is "appreg serve" running?`, EXIT.unreachable);

/** The token endpoint's format: multipart/form-data with plain text fields. */
function multipart(fields: Record<string, string>): { body: Buffer; type: string } {
  const boundary = `appreg-${globalThis.crypto.randomUUID()}`;
  const parts = Object.entries(fields).map(
    ([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
  );
  return {
    body: Buffer.from(parts.join('') + `--${boundary}--\r\n`),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

function parseBody(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The daemon's message above its details, without the first detail it quotes for clients that show no details ("The
 * manifest has 2 problems: /bot is required (and more in details).") since the lines below list it.
 */
function headline(message: string, details: Array<{ pointer: string; message: string }>): string {
  const first = details[0];
  if (!first) return message;
  const at = message.indexOf(`: ${first.pointer || '/'} ${first.message}`);
  return at < 0 ? message : message.slice(0, at);
}

/**
 * The daemon's error body as one line, then one line per detail; 5xx → exit 5, else exit 4.
 * A 502 manifest_unavailable (the app host named by --from-url did not serve a manifest) is the
 * request's fault, not the daemon's: exit 4.
 */
function rejection(status: number, body: unknown): CliError {
  const b = recordOr(body);
  const code = stringOr(b?.code);
  const details = (Array.isArray(b?.details) ? b.details : []).map((d: unknown) => ({
    pointer: stringOr(fieldOf(d, 'pointer')) ?? '',
    message: stringOr(fieldOf(d, 'message')) ?? '',
  }));
  const message = stringOr(b?.message) ?? `the daemon answered ${status}`;
  const head = headline(message, details);
  const lines = [`${head}${code ? ` (${code})` : ''}${head === message ? '' : ':'}`];
  for (const d of details) lines.push(`  ${d.pointer || '/'}: ${d.message}`);
  return new CliError(
    lines.join('\n'),
    status >= 500 && code !== 'manifest_unavailable' ? EXIT.daemonError : EXIT.rejected,
    body,
  );
}

interface RequestOptions {
  /** Sent as a JSON body. */
  json?: unknown;
  /** Sent as a multipart form (the token endpoint's format). */
  form?: Record<string, string>;
  /** false: without the management token. */
  auth?: boolean;
  timeoutMs?: number;
  searchParams?: Record<string, string>;
  onHeaders?: (headers: IncomingHttpHeaders) => void;
}

export interface Client {
  url: string;
  creds?: Credentials;
  /** Management base path for the logged-in user. */
  base(): string;
  /** A call to the daemon's API; a refusal becomes a CliError with the daemon's message. */
  request<T = unknown>(method: string, pathname: string, opts?: RequestOptions): Promise<T>;
  /** GET a URL of a running app (not the daemon), without following redirects. */
  visitApp(url: string): Promise<{ status: number; location?: string; body: string }>;
}

export function createClient(io: Io, g: GlobalOpts, opts: { auth?: boolean } = {}): Client {
  const url = resolveUrl(io, g);
  const creds = opts.auth === false ? undefined : resolveCredentials(io, g, url);
  return {
    url,
    creds,
    base() {
      if (!creds) throw new CliError('not logged in', EXIT.usage);
      return `/workspaces/${encodeURIComponent(creds.workspaceId)}/workspaceUsers/${encodeURIComponent(creds.workspaceUserId)}`;
    },
    async request(method, pathname, o = {}) {
      const headers: Record<string, string> = creds && o.auth !== false ? { Authtoken: creds.authToken } : {};
      let body: string | Buffer | undefined;
      if (o.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(o.json);
      } else if (o.form) {
        const form = multipart(o.form);
        headers['content-type'] = form.type;
        body = form.body;
      }
      const query = o.searchParams ? `?${new URLSearchParams(o.searchParams)}` : '';
      let res: Answer;
      try {
        res = await send(url + pathname + query, { method, headers, body }, o.timeoutMs ?? 30_000);
      } catch (e) {
        if (e instanceof NoAnswer) throw notReachable(url, e.message);
        throw e;
      }
      o.onHeaders?.(res.headers);
      const answer = parseBody(res.text);
      if (res.status >= 400) throw rejection(res.status, answer);
      // the daemon's answer, of the type the caller's route names (the one place the client asserts it)
      return answer as never;
    },
    async visitApp(appUrl) {
      let res: Answer;
      try {
        res = await send(appUrl, { method: 'GET', headers: {} }, 15_000);
      } catch (e) {
        if (e instanceof NoAnswer)
          throw new CliError(
            `the app at ${new URL(appUrl).origin} did not answer: ${e.message}. Is it running?`,
            EXIT.rejected,
          );
        throw e;
      }
      return { status: res.status, location: res.headers.location, body: res.text.slice(0, 4000) };
    },
  };
}
