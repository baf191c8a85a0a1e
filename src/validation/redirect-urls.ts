/**
 * Redirect URLs at registration (security.md §1, R1–R3). Matching a requested
 * `redirectUrl` against these at the consent screen is src/oauth/redirect-match.ts.
 */

export interface RedirectCheck {
  /** Why the URL is refused, or undefined when it is accepted. */
  error?: string;
  /** A note for the response when the URL is accepted but broad. */
  warning?: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const RESERVED_QUERY_KEYS = ['code', 'state', 'error'];

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname);
}

/** R1–R3 for one registered redirect URL. */
export function checkRegisteredRedirect(raw: string, opts: { allowInsecureRedirects?: boolean } = {}): RedirectCheck {
  if (/[\u0000-\u0020\u007f-\uffff]/.test(raw)) return { error: 'must not contain spaces, control or non-ASCII characters (write the host in punycode)' };
  if (raw.includes('*')) return { error: 'must not contain a wildcard (*)' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: 'must be an absolute URL (https://host/path)' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { error: `must use https (the ${url.protocol.replace(':', '')} scheme is not allowed)` };
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname) && !opts.allowInsecureRedirects) {
    return { error: 'must use https; http is allowed only to localhost, 127.0.0.1 or [::1] (the operator can allow insecure redirect URLs for development)' };
  }
  if (url.username || url.password || /^[a-z]+:\/\/[^/?#]*@/i.test(raw)) return { error: 'must not contain a user name or password' };
  if (raw.includes('#')) return { error: 'must not contain a fragment (#)' };
  if (url.href !== raw) return { error: `must be written in canonical form: ${url.href}` };
  for (const key of RESERVED_QUERY_KEYS) if (url.searchParams.has(key)) return { error: `must not carry the query parameter "${key}" (the daemon adds it)` };
  if (url.pathname === '/') return { warning: 'a path of / matches every page of the site; register the exact callback path instead' };
  return {};
}
