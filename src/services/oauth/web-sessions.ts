/**
 * Browser sessions and anti-CSRF tokens of the consent screen and console (docs/security.md §3).
 *
 * Any daemon sharing the store may get any request (a round-robin balancer), so nothing here is
 * kept in one daemon's memory. Every token is stateless: its content and expiry, signed with an
 * HMAC under a key derived from the master key, which every daemon has. Visitors who have not
 * signed in, signed-in sessions and consent forms shown therefore cost no memory and no store
 * record. What must work only once (a consent form's token, a sign-in link) is marked used in the
 * store when it is used: the marker is written expecting none, so only one daemon can use it; it
 * is kept until the token expires and then swept. A session signed out is recorded the same way
 * (by its id, until its expiry), and every daemon reads that record before taking the session:
 * a copy of the cookie stops working the moment the sign-out answered. Signing an account out
 * everywhere records the moment (by the account's id, for as long as a session lasts): every
 * session of the account issued until then is refused, on every daemon.
 */
import { mac, newSecret, PREFIX, safeEqual, sha256 } from '../../crypto.js';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/types.js';
import type { AuthRequestParams, QueryValue } from './authorization-request.js';
import { must } from '../../must.js';
import { IDENTITY_TABLES } from '../../model/identity.js';
import { isRecord } from '../../unknown-values.js';

export const SESSION_TTL_MS = 8 * 3600_000;
const CSRF_TTL_MS = 15 * 60_000;
/** A sign-in link (appreg open) works once, for this long. */
const SIGN_IN_LINK_TTL_MS = 5 * 60_000;
/** Single-use tokens that were used, until they expire: { id: sha256(token), expiresAt }. */
export const USED_TOKENS = 'webTokensUsed';
/** Sessions signed out before their expiry: { id: the session's id, expiresAt }. */
export const ENDED_SESSIONS = 'webSessionsEnded';
/**
 * Accounts signed out everywhere: { id: the account's id, before: sessions issued until then are refused, expiresAt }.
 */
export const ACCOUNT_SIGN_OUTS = 'webAccountSignOuts';
/** Longer tokens are refused unread (a consent form's token carries the authorization request). */
const MAX_TOKEN_CHARS = 16_384;

interface Session {
  accountId: string;
  expiresAt: number;
  /** The management token a sign-in link was made with (its record id): the session ends with it. */
  tokenId?: string;
}

export type CsrfPurpose = { kind: 'consent'; params: AuthRequestParams; workspaceIds: string[] };

interface CsrfClaims {
  s: string;
  p: CsrfPurpose;
  e: number;
}
interface LinkClaims {
  a: string;
  p: string;
  e: number;
  /** The id of the management token that asked for the link. */
  t?: string;
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
const isQueryValue = (v: unknown): v is QueryValue | undefined =>
  v === undefined || typeof v === 'string' || isStrings(v);

/** The parameters of an authorization request, as a consent form's token carries them. */
function isAuthRequestParams(v: unknown): v is AuthRequestParams {
  if (!isRecord(v)) return false;
  const { clientId, redirectUrl, scopes, isReinstall, state, defaultWorkspaceId } = v;
  return [clientId, redirectUrl, scopes, isReinstall, state, defaultWorkspaceId].every(isQueryValue);
}

/** What a consent form's token says (signed by a daemon of this store: checked all the same). */
function isCsrfClaims(v: unknown): v is CsrfClaims {
  if (!isRecord(v) || typeof v.s !== 'string' || typeof v.e !== 'number' || !isRecord(v.p)) return false;
  const { kind, params, workspaceIds } = v.p;
  return kind === 'consent' && isAuthRequestParams(params) && isStrings(workspaceIds);
}

/** The purpose of a form of `kind`. */
const isPurpose = <K extends CsrfPurpose['kind']>(p: CsrfPurpose, kind: K): p is Extract<CsrfPurpose, { kind: K }> =>
  p.kind === kind;

/** What a sign-in link's token says. */
function isLinkClaims(v: unknown): v is LinkClaims {
  return (
    isRecord(v) &&
    typeof v.a === 'string' &&
    typeof v.p === 'string' &&
    typeof v.e === 'number' &&
    (v.t === undefined || typeof v.t === 'string')
  );
}

/** The claims of a signed payload when they are what `is` says; else undefined. */
function claimsOf<T>(payload: string | undefined, is: (v: unknown) => v is T): T | undefined {
  if (payload === undefined) return undefined;
  const v: unknown = JSON.parse(payload);
  return is(v) ? v : undefined;
}

/** A fresh browser cookie value for a visitor who has not signed in (nothing is stored for it). */
export const newVisitorToken = () => newSecret(PREFIX.session);

const b64 = (s: string) => Buffer.from(s).toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url').toString('utf8');

export interface WebSessionsDeps {
  clock: Clock;
  /** Signs every token (derived from the master key, so the same in every daemon). */
  key: Buffer;
  /** Where used single-use tokens are marked. */
  store: Store;
}

export function createWebSessions(deps: WebSessionsDeps) {
  const { clock, key, store } = deps;
  /** `<random>.<body>.<mac>`: the random part makes each token unique; body is base64url of `payload`. */
  function sign(kind: string, prefix: string, payload: string): string {
    const head = newSecret(prefix);
    const body = b64(payload);
    return `${head}.${body}.${mac(key, `${kind}|${head}|${body}`)}`;
  }
  /** The payload of a token this daemon (or any other of the store) signed for `kind`; else undefined. */
  function open(kind: string, token: string | undefined): string | undefined {
    if (token === undefined || token.length > MAX_TOKEN_CHARS) return undefined;
    const [head, body, given, extra] = token.split('.');
    if (head === undefined || body === undefined || given === undefined || extra !== undefined) return undefined;
    if (!safeEqual(given, mac(key, `${kind}|${head}|${body}`))) return undefined;
    return unb64(body);
  }
  /** Mark a single-use token used; false when it was used already (here or on another daemon). */
  async function useOnce(token: string, expiresAt: number): Promise<boolean> {
    const id = sha256(token);
    return store.transaction(async (tx) => {
      if (await tx.get(USED_TOKENS, id)) return false;
      tx.put(USED_TOKENS, id, { id, expiresAt });
      return true;
    });
  }

  /** The signed-in session a cookie value carries: signed here, not expired, not signed out. */
  async function get(token: string | undefined): Promise<(Session & { id: string }) | undefined> {
    const payload = open('session', token);
    if (payload === undefined) return undefined;
    const parsed: unknown = JSON.parse(payload);
    const fields: unknown[] = Array.isArray(parsed) ? parsed : [];
    const [accountId, exp, madeWithId] = fields;
    if (typeof accountId !== 'string' || typeof exp !== 'number' || exp <= clock.now()) return undefined;
    const tokenId = typeof madeWithId === 'string' ? madeWithId : undefined;
    const id = sha256(must(token));
    const [ended, everywhere, madeWith] = await store.getMany([
      { table: ENDED_SESSIONS, id },
      { table: ACCOUNT_SIGN_OUTS, id: accountId },
      // a session made from a token ends when that token is revoked or expires (AS2)
      ...(tokenId === undefined ? [] : [{ table: IDENTITY_TABLES.mgmtTokens, id: tokenId }]),
    ]);
    if (ended || (everywhere && exp - SESSION_TTL_MS <= everywhere.before)) return undefined;
    if (tokenId !== undefined && !(madeWith && madeWith.exp * 1000 > clock.now())) return undefined;
    return { accountId, expiresAt: exp, id, ...(tokenId === undefined ? {} : { tokenId }) };
  }

  const loginMac = (visitor: string, query: string, exp: string) =>
    mac(key, `login|${sha256(visitor)}|${exp}|${query}`);

  return {
    get,
    /**
     * Log in: a new session value (no fixation). The session the browser had is replaced by the
     * new cookie; being stateless it is not voided server-side, and ends at its own expiry.
     */
    login(_previousToken: string | undefined, accountId: string, tokenId?: string): { token: string; id: string } {
      const exp = clock.now() + SESSION_TTL_MS;
      const token = sign(
        'session',
        PREFIX.session,
        JSON.stringify(tokenId ? [accountId, exp, tokenId] : [accountId, exp]),
      );
      return { token, id: sha256(token) };
    },
    /**
     * The sign-in form's token for this browser (its cookie value) and consent link: carries the query, stores nothing.
     */
    loginToken(visitor: string, query: string): string {
      const exp = (clock.now() + CSRF_TTL_MS).toString(36);
      return `${Buffer.from(query).toString('base64url')}.${exp}.${loginMac(visitor, query, exp)}`;
    },
    /** The consent link's query when `token` was made for this browser and has not expired; else undefined. */
    checkLoginToken(token: string | undefined, visitor: string | undefined): string | undefined {
      if (token === undefined || !visitor || token.length > 16_384) return undefined;
      const [q, exp, given, extra] = token.split('.');
      if (q === undefined || exp === undefined || given === undefined || extra !== undefined) return undefined;
      const query = Buffer.from(q, 'base64url').toString('utf8');
      if (!safeEqual(given, loginMac(visitor, query, exp))) return undefined;
      return parseInt(exp, 36) > clock.now() ? query : undefined;
    },
    /**
     * A single-use anti-CSRF token bound to the session, carrying what the form's POST will act on (signed, not
     * stored).
     */
    issueCsrf(sessionId: string, purpose: CsrfPurpose): string {
      const claims: CsrfClaims = { s: sessionId, p: purpose, e: clock.now() + CSRF_TTL_MS };
      return sign('csrf', PREFIX.csrf, JSON.stringify(claims));
    },
    /**
     * Consume it: undefined when forged, expired, used, for another session or another kind of form (those do not
     * consume it).
     */
    async takeCsrf<K extends CsrfPurpose['kind']>(
      token: string | undefined,
      sessionId: string | undefined,
      kind: K,
    ): Promise<Extract<CsrfPurpose, { kind: K }> | undefined> {
      if (!sessionId) return undefined;
      const c = claimsOf(open('csrf', token), isCsrfClaims);
      if (!c || c.s !== sessionId || !isPurpose(c.p, kind) || !(c.e > clock.now())) return undefined;
      if (!token || !(await useOnce(token, c.e))) return undefined;
      return c.p;
    },
    /**
     * The console's anti-CSRF token: an HMAC of the session's id, so every form and fetch of the
     * session's pages carries the same token (several tabs, live pages) and nothing is stored;
     * a token from another session, or from before sign-in, does not match.
     */
    consoleToken: (sessionId: string): string => mac(key, `console|${sessionId}`),
    checkConsoleToken(token: string | undefined, sessionId: string | undefined): boolean {
      return (
        token !== undefined && !!sessionId && token.length < 200 && safeEqual(token, mac(key, `console|${sessionId}`))
      );
    },
    /**
     * A single-use link token that signs a browser in as `accountId` and lands on `path` (appreg open);
     * the session it makes lasts no longer than the management token `tokenId` that asked for it.
     */
    issueSignInLink(accountId: string, path: string, tokenId: string): { token: string; expiresAt: number } {
      const expiresAt = clock.now() + SIGN_IN_LINK_TTL_MS;
      const claims: LinkClaims = { a: accountId, p: path, e: expiresAt, t: tokenId };
      return { token: sign('link', PREFIX.session, JSON.stringify(claims)), expiresAt };
    },
    /** Who a sign-in link is for, without using it: undefined when forged, used or expired. */
    async peekSignInLink(
      token: string | undefined,
    ): Promise<{ accountId: string; path: string; tokenId?: string } | undefined> {
      const c = claimsOf(open('link', token), isLinkClaims);
      if (!c || !(c.e > clock.now()) || !token || (await store.get(USED_TOKENS, sha256(token)))) return undefined;
      return { accountId: c.a, path: c.p, tokenId: c.t };
    },
    /** Use a sign-in link: undefined when forged, used or expired. */
    async takeSignInLink(
      token: string | undefined,
    ): Promise<{ accountId: string; path: string; tokenId?: string } | undefined> {
      const c = claimsOf(open('link', token), isLinkClaims);
      if (!c || !(c.e > clock.now()) || !token || !(await useOnce(token, c.e))) return undefined;
      return { accountId: c.a, path: c.p, tokenId: c.t };
    },
    /**
     * Sign a session out on every daemon of the store, from when this resolves (its cookie value is refused from then
     * on).
     */
    async end(session: { id: string; expiresAt: number }): Promise<void> {
      await store.transaction(async (tx) =>
        tx.put(ENDED_SESSIONS, session.id, { id: session.id, expiresAt: session.expiresAt }),
      );
    },
    /**
     * Sign every session of the account out, on every daemon, this one's included: each issued
     * until now is refused from when this resolves (a daemon whose clock runs behind may refuse
     * a session it issues for that much longer).
     */
    async endAll(accountId: string): Promise<void> {
      const before = clock.now();
      await store.transaction(async (tx) =>
        tx.put(ACCOUNT_SIGN_OUTS, accountId, { id: accountId, before, expiresAt: before + SESSION_TTL_MS }),
      );
    },
    /**
     * Forget used tokens and signed-out sessions once they have expired (they are refused by their expiry from then
     * on).
     */
    async sweep(): Promise<number> {
      const now = clock.now();
      let n = 0;
      for (const table of [USED_TOKENS, ENDED_SESSIONS, ACCOUNT_SIGN_OUTS] as const) {
        const gone = (await store.all(table)).filter((u) => u.expiresAt <= now);
        if (gone.length)
          await store.transaction(async (tx) => {
            for (const u of gone) tx.delete(table, u.id);
          });
        n += gone.length;
      }
      return n;
    },
  };
}

export type WebSessions = ReturnType<typeof createWebSessions>;
