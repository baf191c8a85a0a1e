/**
 * Fetch an app's own manifest from `<APP_HOST_URL>/manifest` (docs/protocol.md §7) with got: a one-off GET, so the
 * user's HTTP client of choice, under the same egress policy, no redirects, a size cap and a timeout.
 */
import net from 'node:net';
import { AppError, egressDenied, invalidRequest, manifestUnavailable } from '../errors.js';
import { MAX_JSON_DEPTH, tooDeep } from '../json-depth.js';
import { EgressDenied, type EgressPolicy } from './egress.js';
import { errnoOf, messageOf } from '../unknown-values.js';

const MAX_BYTES = 1024 * 1024;

function manifestUrl(appHostUrl: unknown): URL {
  if (typeof appHostUrl !== 'string' || !appHostUrl) throw invalidRequest('url (the app host URL) is required.');
  let u: URL;
  try {
    u = new URL(appHostUrl);
  } catch {
    throw invalidRequest('url must be an absolute http(s) URL of the app host.');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalidRequest('url must be an http(s) URL.');
  if (u.username || u.password) throw invalidRequest('url must not contain a user name or password.');
  u.pathname = u.pathname.replace(/\/+$/, '') + '/manifest';
  u.search = '';
  u.hash = '';
  return u;
}

const unreachable = manifestUnavailable;

export async function fetchManifest(appHostUrl: unknown, egress: EgressPolicy, timeoutMs = 10_000): Promise<unknown> {
  const url = manifestUrl(appHostUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) {
    const why = egress.check(host);
    if (why) throw egressDenied(`Cannot fetch ${url.origin}: ${why}.`);
  }
  // loaded on the first fetch, not with the daemon: got and its dependencies are a tenth of a start
  const { default: got } = await import('got');
  let text: string;
  try {
    const stream = got.stream(url, {
      dnsLookup: egress.lookup,
      followRedirect: false,
      timeout: { request: timeoutMs },
      retry: { limit: 0 },
      throwHttpErrors: false,
      headers: { accept: 'application/json', 'user-agent': 'appreg' },
    });
    let status = 0;
    stream.on('response', (res: { statusCode: number }) => (status = res.statusCode));
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) {
      // got's stream of a response without an encoding gives Buffers
      if (!Buffer.isBuffer(chunk)) throw new TypeError('the manifest response gave no bytes');
      size += chunk.length;
      if (size > MAX_BYTES) {
        stream.destroy();
        throw unreachable(`${url.href} answered more than 1 MiB.`);
      }
      chunks.push(chunk);
    }
    // decoded once, whole: a character whose bytes arrive in two chunks is read as itself
    text = Buffer.concat(chunks, size).toString('utf8');
    if (status >= 300 && status < 400)
      throw unreachable(`${url.href} answered a ${status} redirect (redirects are not followed).`);
    if (status !== 200) throw unreachable(`${url.href} answered status ${status}.`);
  } catch (e) {
    if (e instanceof AppError) throw e;
    const cause = e instanceof Error ? e.cause : undefined;
    const denied = e instanceof EgressDenied ? e : cause instanceof EgressDenied ? cause : undefined;
    if (denied) throw egressDenied(`Cannot fetch ${url.origin}: ${denied.message}.`);
    throw unreachable(`Could not fetch ${url.href}: ${errnoOf(e) ?? messageOf(e)}.`);
  }
  if (tooDeep(text)) throw unreachable(`${url.href} answered JSON nested more than ${MAX_JSON_DEPTH} levels deep.`);
  try {
    return JSON.parse(text);
  } catch {
    throw unreachable(`${url.href} did not answer JSON.`);
  }
}
