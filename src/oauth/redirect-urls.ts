/**
 * Redirect URLs, every rule in one place (docs/security.md §1), pure functions with no I/O:
 * - at registration, each URL of the manifest (R1–R3): `checkRegisteredRedirect`;
 * - at the consent screen and the grant call, a requested `redirectUrl` against the app's
 *   registered ones (M1–M6, plus the relative-URL rule of docs/protocol.md §3): `matchRedirect`;
 * - the final Location with code/state appended (M8): `withParams`.
 *
 *
 * Matching is by prefix ("a registered <url> matches <url>/<more path>");
 * a naive startsWith is exploitable, so the prefix is applied to the parsed path only,
 * at a "/" boundary, after the raw input has been refused for anything that a URL parser
 * (ours or the app's) could rewrite: dot segments, encoded dots/slashes/backslashes,
 * backslashes, empty segments, userinfo, fragments, non-ASCII, whitespace.
 */

export type RedirectMatch =
  | { ok: true; /** the absolute URL to redirect to (code/state are added later) */ url: string; registered: string }
  | { ok: false; reason: string };

/** Query parameters the daemon adds to the redirect: never registered, never requested. */
const RESERVED_KEYS = ['code', 'state', 'error'];
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** M1: raw-input refusals that hold before any parsing. Returns a reason or undefined. */
function rawProblem(raw: string): string | undefined {
  if (raw.length === 0) return 'is empty';
  if (raw.length > 2048) return 'is longer than 2048 characters';
  // control characters, whitespace, DEL and anything non-ASCII
  if (/[\u0000-\u0020\u007f-\uffff]/.test(raw)) return 'contains whitespace, control or non-ASCII characters';
  if (raw.includes('\\')) return 'contains a backslash';
  if (/%(2e|2f|5c|00|25)/i.test(raw)) return 'contains an encoded dot, slash, backslash, NUL or percent sign';
  if (raw.includes('#')) return 'contains a fragment';
  const m = /^(?:[a-z][a-z0-9+.-]*:\/\/[^/?#]*)?([^?#]*)/i.exec(raw);
  const path = m?.[1] ?? '';
  if (raw.startsWith('//')) return 'is protocol-relative';
  if (path.includes('//')) return 'contains an empty path segment (//)';
  for (const seg of path.split('/')) if (seg === '.' || seg === '..') return 'contains a . or .. path segment';
  return undefined;
}

function parse(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

/** Does `url` (already canonical, same origin) fall under the registered URL `reg`? M4–M6. */
function under(url: URL, reg: URL): string | undefined {
  if (url.username || url.password) return 'carries a user name or password';
  if (url.hash) return 'carries a fragment';
  const base = reg.pathname;
  const pathOk = url.pathname === base || url.pathname.startsWith(base.endsWith('/') ? base : base + '/');
  if (!pathOk) return `path is not ${base} or below it`;
  if (url.search !== reg.search) return reg.search ? 'query differs from the registered one' : 'carries a query';
  for (const k of RESERVED_KEYS) if (url.searchParams.has(k)) return `carries the reserved query parameter "${k}"`;
  return undefined;
}

/**
 * Match `requested` against `registered` (absolute URLs already checked at registration).
 * A requested URL that starts with a single "/" is resolved against the origin of each
 * registered URL in turn (docs/protocol.md §3) and accepted if one matches.
 */
export function matchRedirect(requested: unknown, registered: readonly string[]): RedirectMatch {
  if (typeof requested !== 'string') return { ok: false, reason: 'redirectUrl is required' };
  const problem = rawProblem(requested);
  if (problem) return { ok: false, reason: `redirectUrl ${problem}` };
  const relative = requested.startsWith('/');
  if (!relative && !/^https?:\/\//i.test(requested))
    return { ok: false, reason: 'redirectUrl must be an https URL (or a path starting with /)' };
  let firstReason = 'redirectUrl does not match any registered redirect URL';
  for (const r of registered) {
    const reg = parse(r);
    if (!reg || (reg.protocol !== 'https:' && reg.protocol !== 'http:')) continue;
    const candidate = relative ? reg.origin + requested : requested;
    const url = parse(candidate);
    if (!url) return { ok: false, reason: 'redirectUrl is not a valid URL' };
    // M2: parsing must not change the input (case of scheme/host, default port, IDN, IPv6 forms, dots…)
    if (url.href !== candidate) return { ok: false, reason: 'redirectUrl is not in canonical form' };
    // M3: compare origins (scheme, host, port), never a string prefix
    if (url.origin !== reg.origin || url.protocol !== reg.protocol) continue;
    const why = under(url, reg);
    if (why) {
      firstReason = `redirectUrl ${why}`;
      continue;
    }
    return { ok: true, url: url.href, registered: r };
  }
  return { ok: false, reason: firstReason };
}

/** M8: the final Location, with code/state (or error/state) appended through URLSearchParams. */
export function withParams(matchedUrl: string, params: Record<string, string | undefined>): string {
  const url = new URL(matchedUrl);
  const extra = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) extra.append(k, v);
  const q = extra.toString();
  // keep the registered query exactly as registered; append ours after it
  url.search = url.search ? `${url.search.slice(1)}&${q}` : q;
  return url.href;
}

export interface RedirectCheck {
  /** Why the URL is refused, or undefined when it is accepted. */
  error?: string;
  /** A note for the response when the URL is accepted but broad. */
  warning?: string;
}

/** R1–R3 for one registered redirect URL. */
export function checkRegisteredRedirect(raw: string, opts: { allowInsecureRedirects?: boolean } = {}): RedirectCheck {
  if (/[\u0000-\u0020\u007f-\uffff]/.test(raw))
    return { error: 'must not contain spaces, control or non-ASCII characters (write the host in punycode)' };
  if (raw.includes('*')) return { error: 'must not contain a wildcard (*)' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: 'must be an absolute URL (https://host/path)' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { error: `must use https (the ${url.protocol.replace(':', '')} scheme is not allowed)` };
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname) && !opts.allowInsecureRedirects) {
    return {
      error:
        'must use https; http is allowed only to localhost, 127.0.0.1 or [::1] (the operator can allow insecure redirect URLs for development)',
    };
  }
  if (url.username || url.password || /^[a-z]+:\/\/[^/?#]*@/i.test(raw))
    return { error: 'must not contain a user name or password' };
  if (raw.includes('#')) return { error: 'must not contain a fragment (#)' };
  if (url.href !== raw) return { error: `must be written in canonical form: ${url.href}` };
  for (const key of RESERVED_KEYS)
    if (url.searchParams.has(key)) return { error: `must not carry the query parameter "${key}" (the daemon adds it)` };
  if (url.pathname === '/')
    return { warning: 'a path of / matches every page of the site; register the exact callback path instead' };
  return {};
}
