/**
 * The environment the platform's official Node SDK reads (docs/official-sdk.md), with the values that make an app on
 * it talk to this daemon: what `apps … --env-out` writes and what `appreg test` hands the app it starts.
 *
 * The SDK reads two kinds of variables. The daemon's side (the app's id and secrets, and where the platform is: its
 * API, its consent screen, its file uploads) is known here exactly. The app's side (the port it listens on, the host
 * it tells the platform in its `/manifest`, the manifest file it starts from) is known only where appreg starts the
 * app; elsewhere it is what the app's registration says, or the SDK's own defaults.
 */
import { fieldOf } from '../unknown-values.js';

/** The SDK's own default port (`PUMBLE_ADDON_PORT` unset) and manifest file (`PUMBLE_ADDON_MANIFEST_PATH` unset). */
const SDK_DEFAULT_PORT = 5000;
const SDK_DEFAULT_MANIFEST = 'manifest.json';

/** The names of the app's side: an env file keeps the values it already has. */
export const APP_SIDE = ['PUMBLE_ADDON_PORT', 'ADDON_HOST', 'PUMBLE_ADDON_MANIFEST_PATH'] as const;

export interface AppSecrets {
  id: string;
  appKey?: unknown;
  clientSecret?: unknown;
  signingSecret?: unknown;
}

/** Where the app is: the origin it is reached at, the port it listens on, the manifest file it reads. */
export interface AppSide {
  host: string;
  port: number;
  manifestPath: string;
}

/**
 * The daemon's side: the app's id and secrets, and the daemon as the platform (`apiUrl` without a trailing slash:
 * the SDK appends paths to it). The consent screen is the daemon's `/access-request`, as on the platform it is a
 * page of its own; files are uploaded to the daemon itself.
 */
export function daemonSide(apiUrl: string, app: AppSecrets): Record<string, string> {
  const api = apiUrl.replace(/\/+$/, '');
  return {
    PUMBLE_APP_ID: app.id,
    PUMBLE_APP_KEY: String(app.appKey),
    PUMBLE_APP_CLIENT_SECRET: String(app.clientSecret),
    PUMBLE_APP_SIGNING_SECRET: String(app.signingSecret),
    PUMBLE_API_URL: api,
    PUMBLE_CONSENT_SCREEN_URL: `${api}/access-request`,
    PUMBLE_FILEUPLOAD_URL: api,
  };
}

/** The app's side as the SDK reads it: `ADDON_HOST` is an origin (scheme, host and port, no path). */
export function appSide(a: AppSide): Record<(typeof APP_SIDE)[number], string> {
  return {
    PUMBLE_ADDON_PORT: String(a.port),
    ADDON_HOST: a.host,
    PUMBLE_ADDON_MANIFEST_PATH: a.manifestPath,
  };
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Where an app is, from what is known of it: its host (`--from-url`, else the first URL its registration calls it at)
 * and the manifest file it was registered from. The port is the host's own when the host is this machine (the app
 * listens where it is called); behind any other host (a tunnel) it is the SDK's default. Nothing known: the SDK's
 * defaults, http://localhost:5000.
 */
export function appSideOf(o: {
  hostUrl?: string;
  registration?: Record<string, unknown>;
  manifestPath?: string;
}): AppSide {
  const url = parsed(o.hostUrl) ?? firstCalledUrl(o.registration);
  let port = SDK_DEFAULT_PORT;
  if (url && LOOPBACK.has(url.hostname)) port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return {
    host: url ? url.origin : `http://localhost:${SDK_DEFAULT_PORT}`,
    port,
    manifestPath: o.manifestPath ?? SDK_DEFAULT_MANIFEST,
  };
}

function parsed(s: unknown): URL | undefined {
  if (typeof s !== 'string' || !/^https?:\/\//i.test(s)) return undefined;
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

/** The first URL the daemon calls the app at: its redirect page, events, block interactions, commands, shortcuts. */
function firstCalledUrl(r: Record<string, unknown> | undefined): URL | undefined {
  if (!r) return undefined;
  const urlOf = (v: unknown) => parsed(fieldOf(v, 'url'));
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const candidates = [
    ...list(r.redirectUrls).map(parsed),
    urlOf(r.eventSubscriptions),
    urlOf(r.blockInteraction),
    urlOf(r.viewAction),
    ...list(r.slashCommands).map(urlOf),
    ...list(r.shortcuts).map(urlOf),
    ...list(r.dynamicMenus).map(urlOf),
  ];
  return candidates.find((u) => u !== undefined);
}
