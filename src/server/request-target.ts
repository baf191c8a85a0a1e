/**
 * Which path a request's target names, and whether it names a route, by the rules express routes
 * by: the two paths served ahead of express (the token endpoint and the app get, start.ts) must
 * take every form of their path that the express routes would take, or such a request would fall
 * through to express and be answered 404 (the token endpoint has no express route) or otherwise.
 *
 * - The target's path is what express's router reads (the `parseurl` package): an origin-form
 *   target (`/path?query`) up to its `?`, and otherwise, an absolute-form one
 *   (`POST http://host/oauth2/access`, which an HTTP/1.1 server must accept, RFC 9112 §3.2.2) or
 *   an origin-form one holding a space, `#` or other character it leaves to Node's `url.parse`,
 *   the path `url.parse` finds.
 * - A route matches that path whatever its case (express's `case sensitive routing` is off) and
 *   with one trailing slash or none (`strict routing` is off); nothing is decoded or normalised
 *   first (`/%6Fauth2/access`, `/oauth2//access` and `/oauth2/./access` name no route).
 *
 * test/fixtures/request-forms.ts is the table both the fast paths and express are held to.
 */
import { parse as legacyParse } from 'node:url';

const SLASH = 0x2f;
/** Characters parseurl's fast path leaves to `url.parse` (whitespace, `#`, NBSP, BOM). */
const LEFT_TO_URL_PARSE = /[\t\n\f\r #\u00a0\ufeff]/;

/** The path of a request target as express's router reads it; undefined when it has none (as express: no route). */
export function routedPath(url: string): string | undefined {
  if (url.charCodeAt(0) === SLASH) {
    const q = url.indexOf('?');
    const p = q === -1 ? url : url.slice(0, q);
    if (!LEFT_TO_URL_PARSE.test(p)) return p;
  }
  try {
    // the parser express itself uses for these forms (through parseurl), so both read one path
    return legacyParse(url).pathname ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `path` names the literal route `route` (written in lower case) as express matches it: any
 * case, one trailing slash or none.
 */
export function namesRoute(path: string, route: string): boolean {
  const n = route.length;
  if (path.length !== n && !(path.length === n + 1 && path.charCodeAt(n) === SLASH)) return false;
  const p = path.length === n ? path : path.slice(0, n);
  return p === route || p.toLowerCase() === route;
}
