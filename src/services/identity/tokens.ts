/**
 * Management tokens (the JWT-shaped Authtoken): made, issued, checked on every request, revoked.
 * A token works while it is signed, unexpired, its record and its user exist, and — for an act-as
 * token — the token that asked for it still works (docs/security.md AS2).
 */
import { newId, signJwt, verifyJwt } from '../../crypto.js';
import { unauthenticated } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Change, Store } from '../../store/types.js';
import { IDENTITY_TABLES, type MgmtTokenRecord, type WorkspaceUserRecord } from '../../model/identity.js';
import type { IssuedToken, Principal } from './types.js';

export interface ManagementTokensDeps {
  store: Store;
  clock: Clock;
  /** The HS256 key tokens are signed with. */
  jwtKey: Buffer;
  config: Pick<Config, 'managementTokenTtlSeconds'>;
}

export function createManagementTokens(deps: ManagementTokensDeps) {
  const { store, clock, jwtKey, config } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();
  // Verified-signature cache: a pure function of the token (and the shared key), so it decides nothing on its
  // own; expiry, revocation and the user's existence are checked against the store on every call.
  const verified = new Map<string, { claims: Principal; exp: number }>();

  /**
   * A management token's record and its value, not yet committed (a caller may commit it with more); `ttlSeconds`
   * shortens its life. `acting`: an act-as token, for the caller who asked for it; it lives no longer than
   * their token.
   */
  function newToken(
    user: WorkspaceUserRecord,
    ttlSeconds = config.managementTokenTtlSeconds,
    acting?: Principal,
  ): { change: Change; issued: IssuedToken; jti: string } {
    const iat = Math.floor(clock.now() / 1000);
    const exp = iat + Math.min(ttlSeconds, config.managementTokenTtlSeconds);
    const rec: MgmtTokenRecord = {
      id: newId('mtk'),
      workspaceId: user.workspaceId,
      workspaceUserId: user.id,
      exp,
      createdAt: nowIso(),
      ...(acting ? { actedBy: acting.workspaceUserId, madeWith: acting.jti } : {}),
    };
    const authToken = signJwt({ sub: user.id, ws: user.workspaceId, jti: rec.id, iat, exp }, jwtKey);
    return {
      change: { table: IDENTITY_TABLES.mgmtTokens, id: rec.id, value: rec },
      issued: { authToken, exp, workspaceId: user.workspaceId, workspaceUserId: user.id },
      jti: rec.id,
    };
  }

  async function issueToken(user: WorkspaceUserRecord): Promise<IssuedToken> {
    const t = newToken(user);
    await store.transaction(async (tx) => tx.apply(t.change));
    return t.issued;
  }

  async function authenticate(token: string | undefined): Promise<Principal> {
    if (!token) throw unauthenticated();
    const nowS = Math.floor(clock.now() / 1000);
    let hit = verified.get(token);
    if (!hit) {
      const claims = verifyJwt(token, jwtKey, nowS);
      if (!claims) throw unauthenticated('The Authtoken is invalid or expired.');
      hit = { claims: { workspaceId: claims.ws, workspaceUserId: claims.sub, jti: claims.jti }, exp: claims.exp };
      if (verified.size > 10000) verified.clear();
      verified.set(token, hit);
    }
    if (hit.exp <= nowS) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has expired.');
    }
    const [tok, user] = await store.getMany(
      [
        { table: IDENTITY_TABLES.mgmtTokens, id: hit.claims.jti },
        { table: IDENTITY_TABLES.workspaceUsers, id: hit.claims.workspaceUserId },
      ],
      { shared: true },
    );
    if (!tok || !user) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has been revoked.');
    }
    if (!tok.actedBy) return hit.claims;
    // an act-as token ends with the token that asked for it (AS2)
    const parent = tok.madeWith === undefined ? undefined : await store.get(IDENTITY_TABLES.mgmtTokens, tok.madeWith);
    if (!parent || parent.exp <= nowS) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has been revoked: the token that asked for it no longer works.');
    }
    return { ...hit.claims, actedBy: tok.actedBy };
  }

  async function revoke(principal: Principal): Promise<void> {
    await store.transaction(async (tx) => tx.delete(IDENTITY_TABLES.mgmtTokens, principal.jti));
  }

  return { newToken, issueToken, authenticate, revoke };
}

export type ManagementTokens = ReturnType<typeof createManagementTokens>;
