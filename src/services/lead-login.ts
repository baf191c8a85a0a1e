/**
 * The official CLI's login (docs/protocol.md §2.7, docs/security.md §4): an email gets a
 * "lead" and a six-digit code (written to the daemon's log, never mailed), the code
 * activates the lead, the lead is traded once for one exchange token per workspace, and
 * an exchange token for a management token (the JWT-shaped Authtoken) and a refresh
 * token. Refresh tokens rotate; presenting a spent one revokes every token of its login
 * (its family). Leads, exchange and refresh tokens are kept as SHA-256 digests; the code
 * is sealed, because the owner may be shown it again.
 */
import { randomInt } from 'node:crypto';
import { mac, newId, newSecret, safeEqual, sha256, signJwt } from '../crypto.js';
import { forbidden, invalidGrant, invalidLead, invalidLoginCode, invalidRequest, notFound } from '../errors.js';
import type { AppError } from '../errors.js';
import type { Change, Transaction } from '../store/types.js';
import type { ServiceContext } from './context.js';
import type { IdentityService, Principal } from './identity.js';
import { IDENTITY_TABLES, accountId, normalizeEmail, type WorkspaceUserRecord } from '../model/identity.js';
import type { ExchangeRecord, FamilyRecord, LeadRecord, RefreshRecord } from '../model/identity.js';

const LOGIN_TABLES = {
  leads: 'loginLeads',
  exchanges: 'loginExchanges',
  refresh: 'refreshTokens',
  families: 'loginFamilies',
} as const;

const LEAD_TTL_MS = 10 * 60_000;
const EXCHANGE_TTL_MS = 10 * 60_000;
const MAX_WRONG_CODES = 5;
const REFRESH_TTL_SECONDS = 90 * 24 * 3600;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
/**
 * What an invalid_grant of calls 4 and 5 says, whatever was wrong: the reason is logged, never sent (as at the token
 * endpoint, docs/security.md C8), so a stolen or guessed token learns nothing of its state. The CLI reads none of it:
 * it logs in again.
 */
const REFUSED = {
  exchange: 'The exchange token is unknown, expired, used or for another workspace; log in again.',
  refresh: 'The refresh token is unknown, expired, used, revoked or for another workspace; log in again.',
} as const;

/**
 * A refusal decided inside a transaction whose writes still count (a wrong code counted, a reused
 * refresh token's family revoked): made, and logged, once the transaction is over.
 */
type Refusal = () => Error;

/** A transaction's refusal: the one function its answers can be (a token pair, nothing). */
const isRefusal = (r: unknown): r is Refusal => typeof r === 'function';

/** The transaction's answer, or its refusal thrown. */
function unlessRefused<T>(r: T | Refusal): T {
  if (isRefusal(r)) throw r();
  return r;
}

export interface LoginItem {
  workspace: { id: string; name: string };
  workspaceUser: { id: string };
  exchangeToken: string;
}
export interface TokenPair {
  token: string;
  refreshToken: string;
}

/** POST /lead/activate (management.schema.json#leadActivateBody): the code as text or as its number. */
export interface LeadActivateBody {
  email?: string;
  code?: string | number;
  leadId?: string | null;
}

/** The login service's 400 for an email it cannot use (and the edge's, for one that is not text). */
export const badEmail = () =>
  invalidRequest('A valid email is required.', [{ pointer: '/email', message: 'must be an email address' }]);

export interface LeadLoginDeps extends ServiceContext {
  identity: IdentityService;
}

export function createLeadLogin(deps: LeadLoginDeps) {
  const ctx: ServiceContext = deps;
  const { store, clock, logger, sealer } = ctx;
  const { identity } = deps;
  const refreshKey = Buffer.from(mac(ctx.jwtKey, 'appreg:refresh-tokens'), 'base64url');
  const nowIso = () => new Date(clock.now()).toISOString();
  const nowS = () => Math.floor(clock.now() / 1000);

  /** An invalid_grant refusal of call 4 or 5: `reason` logged with the workspace (and user), one message sent. */
  function refuse(
    call: keyof typeof REFUSED,
    reason: string,
    fields: { workspaceId: string; workspaceUserId?: string },
  ): AppError {
    logger.info(`login ${call} refused: invalid_grant`, { reason, ...fields });
    return invalidGrant(REFUSED[call]);
  }

  const emailOf = (v: string | undefined): string => {
    if (v === undefined || v.length > 254 || !EMAIL.test(v.trim())) throw badEmail();
    return normalizeEmail(v);
  };
  const stringField = (v: string | undefined, name: string): string => {
    if (!v || v.length > 512)
      throw invalidRequest(`${name} is required.`, [{ pointer: `/${name}`, message: 'is required' }]);
    return v;
  };
  /** The human workspace users of this email's account ([] when there is no such account). */
  const membersOf = (email: string): Promise<WorkspaceUserRecord[]> => identity.membershipsOf(accountId(email));

  /** Expired leads, exchange tokens and refresh tokens, and families with nothing left. */
  async function expiredChanges(): Promise<Change[]> {
    const now = clock.now();
    const out: Change[] = [];
    const [leads, exchanges, refresh, families] = await Promise.all([
      store.all(LOGIN_TABLES.leads),
      store.all(LOGIN_TABLES.exchanges),
      store.all(LOGIN_TABLES.refresh),
      store.all(LOGIN_TABLES.families),
    ]);
    for (const l of leads) if (l.expiresAt <= now) out.push({ table: LOGIN_TABLES.leads, id: l.id, value: null });
    for (const x of exchanges)
      if (x.expiresAt <= now) out.push({ table: LOGIN_TABLES.exchanges, id: x.id, value: null });
    const gone = new Set<string>();
    const live = new Set<string>();
    for (const r of refresh) (r.exp * 1000 <= now ? gone : live).add(r.id);
    for (const f of families) {
      if (f.refreshTokenIds.every((id) => !live.has(id)))
        out.push({ table: LOGIN_TABLES.families, id: f.id, value: null });
    }
    for (const id of gone) out.push({ table: LOGIN_TABLES.refresh, id, value: null });
    return out;
  }

  /** POST /lead: the same answer whether or not the email is a user's; a new lead voids the email's older ones. */
  async function start(emailIn: string): Promise<{ id: string }> {
    const email = emailOf(emailIn);
    const [members, expired] = await Promise.all([membersOf(email), expiredChanges()]);
    const known = members.length > 0;
    const leadId = newSecret('ald');
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const expiresAt = clock.now() + LEAD_TTL_MS;
    const lead: LeadRecord = {
      id: sha256(leadId),
      email,
      known,
      expiresAt,
      attempts: 0,
      createdAt: nowIso(),
      ...(known ? { sealedCode: sealer.seal(code) } : {}),
    };
    await store.transaction(async (tx) => {
      for (const c of expired) tx.apply(c);
      for (const l of await tx.find(LOGIN_TABLES.leads, 'email', email)) tx.delete(LOGIN_TABLES.leads, l.id);
      tx.put(LOGIN_TABLES.leads, lead.id, lead);
    });
    if (known)
      logger.info(
        `login code ${code} for ${email} (valid 10 minutes; also shown by: appreg users login-code --email ${email})`,
        { expiresAt: new Date(expiresAt).toISOString() },
      );
    else logger.info(`login requested for ${email}, which is no user's: no code issued`);
    return { id: leadId };
  }

  /** The lead a client names (its id, or for clients that send none, the newest of the email), or invalid_lead. */
  async function leadFor(tx: Transaction, leadId: string | null | undefined, email: string): Promise<LeadRecord> {
    let lead: LeadRecord | undefined;
    if (leadId !== undefined && leadId !== null)
      lead = await tx.get(LOGIN_TABLES.leads, sha256(stringField(leadId, 'leadId')));
    else
      for (const l of await tx.find(LOGIN_TABLES.leads, 'email', email))
        if (!lead || l.createdAt >= lead.createdAt) lead = l;
    if (!lead || lead.email !== email || lead.activatedAt) throw invalidLead();
    if (lead.expiresAt <= clock.now()) throw invalidLead('The login code has expired; start the login again.');
    return lead;
  }

  /**
   * POST /lead/activate: the right code activates the lead; the fifth wrong one voids it. Each try is
   * a transaction on the lead, so wrong codes sent at once to several daemons are each counted (a
   * conflicting try runs again on the lead as it is now).
   */
  async function activate(input: LeadActivateBody): Promise<void> {
    const email = emailOf(input.email);
    const given =
      typeof input.code === 'number' ? String(input.code).padStart(6, '0') : stringField(input.code, 'code').trim();
    const outcome = await store.transaction(async (tx): Promise<Refusal | undefined> => {
      const lead = await leadFor(tx, input.leadId, email);
      const right = lead.known && lead.sealedCode !== undefined && safeEqual(given, sealer.open(lead.sealedCode));
      if (right) {
        tx.put(LOGIN_TABLES.leads, lead.id, { ...lead, activatedAt: nowIso() });
        return undefined;
      }
      const attempts = lead.attempts + 1;
      if (attempts >= MAX_WRONG_CODES) {
        tx.delete(LOGIN_TABLES.leads, lead.id);
        return () => invalidLead(`The code was wrong ${MAX_WRONG_CODES} times; this login is void. Start it again.`);
      }
      tx.put(LOGIN_TABLES.leads, lead.id, { ...lead, attempts });
      const left = MAX_WRONG_CODES - attempts;
      return () => invalidLoginCode(`The code is wrong; ${left} ${left === 1 ? 'try' : 'tries'} left.`);
    });
    unlessRefused(outcome);
  }

  /** POST /lead/login: an activated lead, used once, becomes one exchange token per workspace of the account. */
  async function login(leadId: string): Promise<{ items: LoginItem[] }> {
    const unusable = () =>
      invalidLead('The login request is unknown, expired, used or not yet activated with its code.');
    const id = sha256(leadId);
    // used once across every daemon: a concurrent use deleted the lead, so this one runs again and finds none
    return store.transaction(async (tx) => {
      const lead = await tx.get(LOGIN_TABLES.leads, id);
      if (!lead || !lead.activatedAt || lead.expiresAt <= clock.now()) throw unusable();
      tx.delete(LOGIN_TABLES.leads, lead.id);
      const items: LoginItem[] = [];
      for (const wu of await membersOf(lead.email)) {
        if (lead.limitTo && !lead.limitTo.includes(wu.workspaceId)) continue;
        const exchangeToken = newSecret('axt');
        const rec: ExchangeRecord = {
          id: sha256(exchangeToken),
          workspaceId: wu.workspaceId,
          workspaceUserId: wu.id,
          expiresAt: clock.now() + EXCHANGE_TTL_MS,
        };
        tx.put(LOGIN_TABLES.exchanges, rec.id, rec);
        items.push({
          workspace: await identity.workspaceInfo(wu.workspaceId),
          workspaceUser: { id: wu.id },
          exchangeToken,
        });
      }
      return { items };
    });
  }

  function newRefresh(familyId: string, user: WorkspaceUserRecord): { token: string; rec: RefreshRecord } {
    const iat = nowS();
    const token = signJwt(
      {
        typ: 'refresh',
        sub: user.id,
        ws: user.workspaceId,
        jti: newId('rft', 32),
        iat,
        exp: iat + REFRESH_TTL_SECONDS,
      },
      refreshKey,
    );
    return {
      token,
      rec: {
        id: sha256(token),
        familyId,
        workspaceId: user.workspaceId,
        workspaceUserId: user.id,
        exp: iat + REFRESH_TTL_SECONDS,
        createdAt: nowIso(),
      },
    };
  }

  /**
   * POST /workspaces/{ws}/exchange: a single-use exchange token → the first pair of a new family. Used
   * once across every daemon: a concurrent use deleted the token, so this one runs again and finds none.
   */
  async function exchange(workspaceId: string, token: string): Promise<TokenPair> {
    const id = sha256(token);
    const outcome = await store.transaction(async (tx): Promise<TokenPair | Refusal> => {
      const rec = await tx.get(LOGIN_TABLES.exchanges, id);
      if (!rec)
        return () =>
          refuse('exchange', 'unknown exchange token (never issued, already used or swept)', { workspaceId });
      const who = { workspaceId, workspaceUserId: rec.workspaceUserId };
      if (rec.workspaceId !== workspaceId)
        return () => refuse('exchange', `issued for another workspace (${rec.workspaceId})`, who);
      if (rec.expiresAt <= clock.now()) return () => refuse('exchange', 'expired', who);
      tx.delete(LOGIN_TABLES.exchanges, rec.id);
      const user = await identity.userRecord(rec.workspaceUserId);
      if (!user) return () => refuse('exchange', 'its user no longer exists', who);
      const access = identity.newToken(user);
      const refresh = newRefresh(newId('lfm'), user);
      tx.apply(access.change);
      tx.put(LOGIN_TABLES.refresh, refresh.rec.id, refresh.rec);
      tx.put(LOGIN_TABLES.families, refresh.rec.familyId, {
        id: refresh.rec.familyId,
        workspaceId,
        workspaceUserId: user.id,
        accessTokenIds: [access.jti],
        refreshTokenIds: [refresh.rec.id],
        createdAt: nowIso(),
      });
      return { token: access.issued.authToken, refreshToken: refresh.token };
    });
    return unlessRefused(outcome);
  }

  /** Delete every token of a login (a family) and the family. */
  function revokeFamily(tx: Transaction, family: FamilyRecord): void {
    for (const id of family.accessTokenIds) tx.delete(IDENTITY_TABLES.mgmtTokens, id);
    for (const id of family.refreshTokenIds) tx.delete(LOGIN_TABLES.refresh, id);
    tx.delete(LOGIN_TABLES.families, family.id);
  }

  /**
   * POST /workspaces/{ws}/refresh: rotate; a spent refresh token revokes its whole family. Rotation
   * happens once across every daemon: a transaction on the refresh record and its family. When it
   * conflicts (the same token presented twice at once) it runs again, and the second run finds the
   * token spent: a reuse, which revokes the family, as one after the other would.
   */
  async function refresh(workspaceId: string, token: string): Promise<TokenPair> {
    const id = sha256(token);
    return unlessRefused(await store.transaction((tx) => rotate(tx, workspaceId, id)));
  }

  async function rotate(tx: Transaction, workspaceId: string, id: string): Promise<TokenPair | Refusal> {
    const rec = await tx.get(LOGIN_TABLES.refresh, id);
    const family = rec && (await tx.get(LOGIN_TABLES.families, rec.familyId));
    if (!rec) return () => refuse('refresh', 'unknown refresh token (never issued, or revoked)', { workspaceId });
    const who = { workspaceId, workspaceUserId: rec.workspaceUserId };
    if (!family) return () => refuse('refresh', 'revoked: its login was revoked', who);
    if (rec.workspaceId !== workspaceId)
      return () => refuse('refresh', `issued for another workspace (${rec.workspaceId})`, who);
    if (rec.exp <= nowS()) return () => refuse('refresh', 'expired', who);
    if (rec.spentAt) {
      revokeFamily(tx, family);
      return () => {
        logger.warn('a spent refresh token was presented again: every token of its login is revoked', who);
        return refuse('refresh', 'already used: every token of its login is now revoked', who);
      };
    }
    tx.put(LOGIN_TABLES.refresh, rec.id, { ...rec, spentAt: nowIso() });
    const user = await identity.userRecord(rec.workspaceUserId);
    if (!user) return () => refuse('refresh', 'its user no longer exists', who);
    const access = identity.newToken(user);
    const next = newRefresh(family.id, user);
    // the family keeps only what is still live, so it does not grow with every rotation (looked at only)
    const [accessLive, refreshLive] = await Promise.all([
      tx.getMany(family.accessTokenIds.map((t) => ({ table: IDENTITY_TABLES.mgmtTokens, id: t, peek: true }) as const)),
      tx.getMany(family.refreshTokenIds.map((r) => ({ table: LOGIN_TABLES.refresh, id: r, peek: true }) as const)),
    ]);
    tx.apply(access.change);
    tx.put(LOGIN_TABLES.refresh, next.rec.id, next.rec);
    tx.put(LOGIN_TABLES.families, family.id, {
      ...family,
      accessTokenIds: [...family.accessTokenIds.filter((_t, i) => accessLive[i] !== undefined), access.jti],
      refreshTokenIds: [...family.refreshTokenIds.filter((_r, i) => (refreshLive[i]?.exp ?? 0) > nowS()), next.rec.id],
    });
    return { token: access.issued.authToken, refreshToken: next.token };
  }

  /**
   * GET …/login-codes?email=: the pending code of a member of the caller's workspace, for that
   * member or the workspace's owner. When the owner reads another user's code, the login it
   * makes reaches only this workspace (never the user's other workspaces).
   */
  async function pendingCode(
    p: Principal,
    emailIn: string | undefined,
  ): Promise<{ email: string; code: string; expiresAt: string; attemptsLeft: number }> {
    const email = emailOf(emailIn);
    const me = await identity.userRecord(p.workspaceUserId);
    const self = me?.email === email;
    if (!self && (await identity.ownerOf(p.workspaceId)) !== p.workspaceUserId)
      throw forbidden('Only the workspace owner or that user can see a login code.');
    if (!(await membersOf(email)).some((wu) => wu.workspaceId === p.workspaceId)) throw notFound('Workspace user');
    return store.transaction(async (tx) => {
      let lead: LeadRecord | undefined;
      for (const l of await tx.find(LOGIN_TABLES.leads, 'email', email))
        if (l.known && !l.activatedAt && l.expiresAt > clock.now() && (!lead || l.createdAt >= lead.createdAt))
          lead = l;
      if (!lead?.sealedCode) throw notFound('Pending login code');
      // the lead as read: a limit added on another daemon at once is not lost
      if (!self && !lead.limitTo?.includes(p.workspaceId))
        tx.put(LOGIN_TABLES.leads, lead.id, { ...lead, limitTo: [...(lead.limitTo ?? []), p.workspaceId] });
      return {
        email,
        code: sealer.open(lead.sealedCode),
        expiresAt: new Date(lead.expiresAt).toISOString(),
        attemptsLeft: MAX_WRONG_CODES - lead.attempts,
      };
    });
  }

  return { start, activate, login, exchange, refresh, pendingCode };
}

export type LeadLogin = ReturnType<typeof createLeadLogin>;
