/** The CLI's only way to the daemon: its HTTP API (the CLI never opens the data file). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { got, RequestError } from 'got';
import { CliError, EXIT } from './output.js';

export interface GlobalOpts {
  url?: string;
  dataDir?: string;
  token?: string;
  json?: boolean;
}

export interface Credentials { workspaceId: string; workspaceUserId: string; email?: string; authToken: string }

export const dataDirOf = (g: GlobalOpts) => path.resolve(g.dataDir ?? process.env.APPREG_DATA_DIR ?? './data');

/** --url, APPREG_URL, or <data-dir>/daemon.json. */
export function resolveUrl(g: GlobalOpts): string {
  const explicit = g.url ?? process.env.APPREG_URL;
  if (explicit) return explicit.replace(/\/+$/, '');
  const file = path.join(dataDirOf(g), 'daemon.json');
  try {
    const d = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (typeof d.url === 'string') return d.url.replace(/\/+$/, '');
  } catch {
    /* fall through */
  }
  throw new CliError(`no running daemon found: ${file} does not exist. Start one with "appreg serve", or pass --url / set APPREG_URL.`, EXIT.unreachable);
}

export function userConfigDir(): string {
  return process.env.APPREG_CONFIG_DIR ?? path.join(process.env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'appreg');
}

type Saved = Record<string, Credentials>;
const savedFile = () => path.join(userConfigDir(), 'credentials.json');

export function readSaved(): Saved {
  try {
    return JSON.parse(fs.readFileSync(savedFile(), 'utf8')) as Saved;
  } catch {
    return {};
  }
}

export function writeSaved(s: Saved): void {
  fs.mkdirSync(userConfigDir(), { recursive: true, mode: 0o700 });
  const file = savedFile();
  fs.writeFileSync(file, JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

/** --token/APPREG_TOKEN, then a login saved for this daemon, then <data-dir>/credentials.json of the first start. */
export function resolveCredentials(g: GlobalOpts, url: string): Credentials {
  const token = g.token ?? process.env.APPREG_TOKEN;
  if (token) {
    const claims = decodeClaims(token);
    if (!claims) throw new CliError('the token given by --token / APPREG_TOKEN is not a management token', EXIT.usage);
    return { authToken: token, workspaceId: claims.ws, workspaceUserId: claims.sub };
  }
  const saved = readSaved()[url];
  if (saved) return saved;
  // The first-start owner token goes only to the daemon of that data dir (daemon.json's URL),
  // never to whatever --url names.
  const local = localDaemonUrl(g);
  if (local !== undefined && local === url) {
    try {
      return JSON.parse(fs.readFileSync(path.join(dataDirOf(g), 'credentials.json'), 'utf8')) as Credentials;
    } catch {
      /* fall through */
    }
  }
  throw new CliError(`not logged in to ${url}: run "appreg login --email … " (the data dir's credentials.json is used only for the daemon that data dir runs).`, EXIT.usage);
}

function localDaemonUrl(g: GlobalOpts): string | undefined {
  try {
    const d = JSON.parse(fs.readFileSync(path.join(dataDirOf(g), 'daemon.json'), 'utf8'));
    return typeof d.url === 'string' ? d.url.replace(/\/+$/, '') : undefined;
  } catch {
    return undefined;
  }
}

function decodeClaims(token: string): { sub: string; ws: string } | null {
  try {
    const c = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    return typeof c.sub === 'string' && typeof c.ws === 'string' ? c : null;
  } catch {
    return null;
  }
}

export interface Client {
  url: string;
  creds?: Credentials;
  /** Management base path for the logged-in user. */
  base(): string;
  request<T = unknown>(method: string, pathname: string, opts?: { json?: unknown; auth?: boolean; timeoutMs?: number; searchParams?: Record<string, string>; onHeaders?: (h: Record<string, string | string[] | undefined>) => void }): Promise<T>;
}

export function createClient(g: GlobalOpts, opts: { auth?: boolean } = {}): Client {
  const url = resolveUrl(g);
  const creds = opts.auth === false ? undefined : resolveCredentials(g, url);
  return {
    url,
    creds,
    base() {
      if (!creds) throw new CliError('not logged in', EXIT.usage);
      return `/workspaces/${encodeURIComponent(creds.workspaceId)}/workspaceUsers/${encodeURIComponent(creds.workspaceUserId)}`;
    },
    async request(method, pathname, o = {}) {
      let res;
      try {
        res = await got(url + pathname, {
          method: method as 'GET',
          json: o.json,
          searchParams: o.searchParams,
          headers: creds && o.auth !== false ? { Authtoken: creds.authToken } : {},
          throwHttpErrors: false,
          retry: { limit: 0 },
          followRedirect: false,
          timeout: { request: o.timeoutMs ?? 30_000 },
        });
      } catch (e) {
        if (e instanceof RequestError) throw new CliError(`cannot reach the daemon at ${url}: ${e.code ?? e.message}. Is "appreg serve" running?`, EXIT.unreachable);
        throw e;
      }
      o.onHeaders?.(res.headers);
      let body: unknown = undefined;
      if (res.body) {
        try {
          body = JSON.parse(res.body);
        } catch {
          body = res.body;
        }
      }
      if (res.statusCode >= 400) {
        const b = body as { code?: string; message?: string; details?: Array<{ pointer: string; message: string }> } | undefined;
        const lines = [`${b?.message ?? `the daemon answered ${res.statusCode}`}${b?.code ? ` (${b.code})` : ''}`];
        for (const d of b?.details ?? []) lines.push(`  ${d.pointer || '/'}: ${d.message}`);
        throw new CliError(lines.join('\n'), res.statusCode >= 500 ? EXIT.daemonError : EXIT.rejected, body);
      }
      return body as never;
    },
  };
}
