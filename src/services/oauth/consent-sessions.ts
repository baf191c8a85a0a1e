/**
 * Browser sessions and anti-CSRF records of the consent screen (docs/security.md §3).
 * Memory only, by design: a daemon restart logs everyone out of the consent screen and
 * voids open forms (the user reloads the consent link). Both are keyed by the sha256
 * digest of their value, so the values themselves are never kept.
 */
import { newSecret, PREFIX, sha256 } from '../../crypto.js';
import type { Clock } from '../../clock.js';
import type { AuthRequestParams } from './authorization-request.js';

export const SESSION_TTL_MS = 8 * 3600_000;
const CSRF_TTL_MS = 15 * 60_000;
const MAX_ENTRIES = 100_000;

interface Session { accountId?: string; expiresAt: number }

export type CsrfPurpose =
  | { kind: 'login'; query: string }
  | { kind: 'consent'; params: AuthRequestParams; workspaceIds: string[] };

interface CsrfRecord { sessionId: string; purpose: CsrfPurpose; expiresAt: number }

export function createWebSessions(clock: Clock) {
  const sessions = new Map<string, Session>();
  const csrf = new Map<string, CsrfRecord>();

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

  function create(accountId?: string): { token: string; id: string } {
    if (sessions.size >= MAX_ENTRIES) prune(sessions);
    const token = newSecret(PREFIX.session);
    const id = sha256(token);
    sessions.set(id, { accountId, expiresAt: clock.now() + SESSION_TTL_MS });
    return { token, id };
  }

  return {
    get,
    create,
    /** Log in: a new session value (no fixation), the anonymous one is dropped. */
    login(previousToken: string | undefined, accountId: string): { token: string; id: string } {
      if (previousToken) sessions.delete(sha256(previousToken));
      return create(accountId);
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
    sweep() {
      prune(sessions);
      prune(csrf);
    },
  };
}

export type WebSessions = ReturnType<typeof createWebSessions>;
