/**
 * Which daemon a client (the CLI, `appreg test`) talks to and as whom: --url / --data-dir / --token, saved logins, the
 * first start's credentials.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolveDataDir } from '../default-data-dir.js';
import { CliError, EXIT } from './exit.js';
import type { GlobalOpts, Io } from './io.js';
import { recordOr } from '../unknown-values.js';

export interface Credentials {
  workspaceId: string;
  workspaceUserId: string;
  email?: string;
  authToken: string;
}

const dataDirOf = (io: Io, g: GlobalOpts) => resolveDataDir(g.dataDir, io.env, io.cwd);
const trimSlashes = (url: string) => url.replace(/\/+$/, '');

/** The URL in <data-dir>/daemon.json, written by the daemon that data dir runs. */
function localDaemonUrl(io: Io, g: GlobalOpts): string | undefined {
  try {
    const d = JSON.parse(fs.readFileSync(path.join(dataDirOf(io, g), 'daemon.json'), 'utf8'));
    return typeof d.url === 'string' ? trimSlashes(d.url) : undefined;
  } catch {
    return undefined;
  }
}

/** --url, APPREG_URL, or <data-dir>/daemon.json. */
export function resolveUrl(io: Io, g: GlobalOpts): string {
  const explicit = g.url ?? io.env.APPREG_URL;
  if (explicit) return trimSlashes(explicit);
  const local = localDaemonUrl(io, g);
  if (local !== undefined) return local;
  const file = path.join(dataDirOf(io, g), 'daemon.json');
  throw new CliError(
    `no running daemon found: ${file} does not exist. Start one with "appreg serve", or pass --url / set APPREG_URL.`,
    EXIT.unreachable,
  );
}

function userConfigDir(io: Pick<Io, 'env'>): string {
  const env = io.env;
  return (
    env.APPREG_CONFIG_DIR ?? path.join(env.XDG_CONFIG_HOME ?? path.join(env.HOME ?? os.homedir(), '.config'), 'appreg')
  );
}

/** Logins saved by `appreg login`, by daemon URL. */
type Saved = Record<string, Credentials>;

/** `v` when it holds credentials (a file of ours read back; one edited by hand may not), else undefined. */
function credentialsOr(v: unknown): Credentials | undefined {
  const r = recordOr(v);
  if (!r) return undefined;
  const { workspaceId, workspaceUserId, authToken, email } = r;
  if (typeof workspaceId !== 'string' || typeof workspaceUserId !== 'string' || typeof authToken !== 'string')
    return undefined;
  return { workspaceId, workspaceUserId, authToken, ...(typeof email === 'string' ? { email } : {}) };
}

export function readSaved(io: Pick<Io, 'env'>): Saved {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(path.join(userConfigDir(io), 'credentials.json'), 'utf8'));
  } catch {
    return {};
  }
  const saved: Saved = {};
  for (const [url, v] of Object.entries(recordOr(parsed) ?? {})) {
    const creds = credentialsOr(v);
    if (creds) saved[url] = creds;
  }
  return saved;
}

export function writeSaved(io: Io, s: Saved): void {
  const dir = userConfigDir(io);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, 'credentials.json');
  fs.writeFileSync(file, JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

function decodeClaims(token: string): { sub: string; ws: string } | null {
  try {
    const c = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
    return typeof c.sub === 'string' && typeof c.ws === 'string' ? c : null;
  } catch {
    return null;
  }
}

/** Where credentials come from: which one a command uses, and what is left after `logout`. */
type Source = { creds: Credentials; from: 'token' | 'saved' | 'owner'; file?: string };

/**
 * --token/APPREG_TOKEN, then a login saved for this daemon, then <data-dir>/credentials.json of the first start;
 * undefined when none.
 */
function findCredentials(io: Io, g: GlobalOpts, url: string, opts: { saved?: boolean } = {}): Source | undefined {
  const token = g.token ?? io.env.APPREG_TOKEN;
  if (token) {
    const claims = decodeClaims(token);
    if (!claims) throw new CliError('the token given by --token / APPREG_TOKEN is not a management token', EXIT.usage);
    return { from: 'token', creds: { authToken: token, workspaceId: claims.ws, workspaceUserId: claims.sub } };
  }
  const saved = opts.saved === false ? undefined : readSaved(io)[url];
  if (saved) return { from: 'saved', creds: saved };
  // The first-start owner token goes only to the daemon of that data dir (daemon.json's URL),
  // never to whatever --url names.
  const local = localDaemonUrl(io, g);
  if (local !== undefined && local === url) {
    const file = path.join(dataDirOf(io, g), 'credentials.json');
    try {
      const creds = credentialsOr(JSON.parse(fs.readFileSync(file, 'utf8')));
      if (creds) return { from: 'owner', file, creds };
    } catch {
      /* fall through */
    }
  }
  return undefined;
}

/** No credentials for `url`; the command then checks whether a daemon answers there at all (options.ts). */
export class NotLoggedIn extends CliError {
  constructor(readonly url: string) {
    super(
      `not logged in to ${url}: run "appreg login --email … " (the data dir's credentials.json is used only for the daemon that data dir runs).`,
      EXIT.usage,
    );
  }
}

export function resolveCredentials(io: Io, g: GlobalOpts, url: string): Credentials {
  const found = findCredentials(io, g, url);
  if (found) return found.creds;
  throw new NotLoggedIn(url);
}

/** After `logout` (the saved login is gone): the credentials the next command will use, in words. */
export function fallbackAfterLogout(io: Io, g: GlobalOpts, url: string): string {
  const next = findCredentials(io, g, url, { saved: false });
  if (!next) return `no credentials left for ${url}`;
  const who = next.creds.email ? `${next.creds.email}, ` : '';
  if (next.from === 'token')
    return `now using the token from ${g.token ? '--token' : 'APPREG_TOKEN'} (${who}user ${next.creds.workspaceUserId})`;
  return `now using the owner credentials of ${next.file} (${who}user ${next.creds.workspaceUserId})`;
}
