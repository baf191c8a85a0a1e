/**
 * Browser sessions and anti-CSRF tokens of the consent screen (docs/security.md §3).
 *
 * Nothing is kept for a visitor who has not signed in: the sign-in form's token is stateless,
 * an HMAC binding the browser's cookie value, the consent link's query and an expiry, so any
 * number of anonymous visits costs no memory. Signed-in sessions and the consent forms they
 * are shown are kept in memory (bounded), keyed by the sha256 digest of their value so the
 * values themselves are never kept; a daemon restart signs everyone out and voids open forms.
 */
import { mac, newSecret, PREFIX, safeEqual, sha256 } from '../../crypto.js';
import type { Clock } from '../../clock.js';
import type { AuthRequestParams } from './authorization-request.js';

export const SESSION_TTL_MS = 8 * 3600_000;
const CSRF_TTL_MS = 15 * 60_000;
/** A sign-in link (appreg open) works once, for this long. */
const SIGN_IN_LINK_TTL_MS = 5 * 60_000;
const MAX_ENTRIES = 100_000;

interface Session { accountId: string; expiresAt: number }

export type CsrfPurpose = { kind: 'consent'; params: AuthRequestParams; workspaceIds: string[] };

interface CsrfRecord { sessionId: string; purpose: CsrfPurpose; expiresAt: number }

/** A fresh browser cookie value for a visitor who has not signed in (nothing is stored for it). */
export const newVisitorToken = () => newSecret(PREFIX.session);

/** @param key signs the stateless sign-in form tokens (derived from the master key) */
export function createWebSessions(clock: Clock, key: Buffer) {
  const sessions = new Map<string, Session>();
  const csrf = new Map<string, CsrfRecord>();
  const links = new Map<string, { accountId: string; path: string; expiresAt: number }>();

  function prune<T extends { expiresAt: number }>(m: Map<string, T>) {
    const now = clock.now();
    for (const [k, v] of m) if (v.expiresAt <= now) m.delete(k);
    // still too many: drop the oldest (Map iterates in insertion order)
    while (m.size >= MAX_ENTRIES) m.delete(m.keys().next().value!);
  }

  function get(token: string | undefined): (Session & { id: string }) | undefined {
    if (!token) return undefined;
    const id = sha256(token);
    const s = sessions.get(id);
    if (!s) return undefined;
    if (s.expiresAt <= clock.now()) {
      sessions.delete(id);
      return undefined;
    }
    return { ...s, id };
  }

  function create(accountId: string): { token: string; id: string } {
    if (sessions.size >= MAX_ENTRIES) prune(sessions);
    const token = newSecret(PREFIX.session);
    const id = sha256(token);
    sessions.set(id, { accountId, expiresAt: clock.now() + SESSION_TTL_MS });
    return { token, id };
  }

  const loginMac = (visitor: string, query: string, exp: string) => mac(key, `login|${sha256(visitor)}|${exp}|${query}`);

  return {
    get,
    /** Log in: a new session value (no fixation); a session the browser had is dropped. */
    login(previousToken: string | undefined, accountId: string): { token: string; id: string } {
      if (previousToken) sessions.delete(sha256(previousToken));
      return create(accountId);
    },
    /** The sign-in form's token for this browser (its cookie value) and consent link: carries the query, stores nothing. */
    loginToken(visitor: string, query: string): string {
      const exp = (clock.now() + CSRF_TTL_MS).toString(36);
      return `${Buffer.from(query).toString('base64url')}.${exp}.${loginMac(visitor, query, exp)}`;
    },
    /** The consent link's query when `token` was made for this browser and has not expired; else undefined. */
    checkLoginToken(token: unknown, visitor: string | undefined): string | undefined {
      if (typeof token !== 'string' || !visitor || token.length > 16_384) return undefined;
      const [q, exp, given, extra] = token.split('.');
      if (q === undefined || exp === undefined || given === undefined || extra !== undefined) return undefined;
      const query = Buffer.from(q, 'base64url').toString('utf8');
      if (!safeEqual(given, loginMac(visitor, query, exp))) return undefined;
      return parseInt(exp, 36) > clock.now() ? query : undefined;
    },
    /** A single-use anti-CSRF token bound to the session, holding what the form's POST will act on. */
    issueCsrf(sessionId: string, purpose: CsrfPurpose): string {
      if (csrf.size >= MAX_ENTRIES) prune(csrf);
      const token = newSecret(PREFIX.csrf);
      csrf.set(sha256(token), { sessionId, purpose, expiresAt: clock.now() + CSRF_TTL_MS });
      return token;
    },
    /** Consume it: undefined when unknown, expired, for another session or another kind of form. */
    takeCsrf<K extends CsrfPurpose['kind']>(token: unknown, sessionId: string | undefined, kind: K): Extract<CsrfPurpose, { kind: K }> | undefined {
      if (typeof token !== 'string' || !sessionId) return undefined;
      const id = sha256(token);
      const rec = csrf.get(id);
      if (!rec || rec.sessionId !== sessionId || rec.purpose.kind !== kind) return undefined;
      csrf.delete(id);
      if (rec.expiresAt <= clock.now()) return undefined;
      return rec.purpose as Extract<CsrfPurpose, { kind: K }>;
    },
    /**
     * The console's anti-CSRF token: an HMAC of the session's id, so every form and fetch of the
     * session's pages carries the same token (several tabs, live pages) and nothing is stored;
     * a token from another session, or from before sign-in, does not match.
     */
    consoleToken: (sessionId: string): string => mac(key, `console|${sessionId}`),
    checkConsoleToken(token: unknown, sessionId: string | undefined): boolean {
      return typeof token === 'string' && !!sessionId && token.length < 200 && safeEqual(token, mac(key, `console|${sessionId}`));
    },
    /** A single-use link token that signs a browser in as `accountId` and lands on `path` (appreg open). */
    issueSignInLink(accountId: string, path: string): { token: string; expiresAt: number } {
      if (links.size >= MAX_ENTRIES) prune(links);
      const token = newSecret(PREFIX.session);
      const expiresAt = clock.now() + SIGN_IN_LINK_TTL_MS;
      links.set(sha256(token), { accountId, path, expiresAt });
      return { token, expiresAt };
    },
    /** Use a sign-in link: undefined when unknown, used or expired. */
    takeSignInLink(token: unknown): { accountId: string; path: string } | undefined {
      if (typeof token !== 'string' || token.length > 200) return undefined;
      const id = sha256(token);
      const l = links.get(id);
      if (!l) return undefined;
      links.delete(id);
      return l.expiresAt > clock.now() ? { accountId: l.accountId, path: l.path } : undefined;
    },
    /** What is kept in memory: signed-in sessions and open consent forms (nothing for visitors). */
    stats: () => ({ sessions: sessions.size, forms: csrf.size }),
    sweep() {
      prune(sessions);
      prune(csrf);
      prune(links);
    },
  };
}

export type WebSessions = ReturnType<typeof createWebSessions>;
