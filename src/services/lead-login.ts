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
import { mac, newId, newSecret, safeEqual, sha256, signJwt, verifyJwt } from '../crypto.js';
import { forbidden, invalidGrant, invalidLead, invalidLoginCode, invalidRequest, notFound } from '../errors.js';
import type { Change } from '../store/types.js';
import type { ServiceContext } from './context.js';
import type { IdentityService, Principal } from './identity.js';
import { T, accountId, normalizeEmail, type AccountRecord, type WorkspaceUserRecord } from './records.js';

const LT = { leads: 'loginLeads', exchanges: 'loginExchanges', refresh: 'refreshTokens', families: 'loginFamilies' } as const;

/** A pending login; `id` is the digest of the lead id the client holds. */
interface LeadRecord {
  id: string;
  email: string;
  /** false: the email is no user's; the lead behaves the same but no code can ever match. */
  known: boolean;
  sealedCode?: string;
  expiresAt: number;
  attempts: number;
  activatedAt?: string;
  /** Set when a workspace owner other than the user was shown the code: the login reaches only these workspaces. */
  limitTo?: string[];
  createdAt: string;
}
interface ExchangeRecord { id: string; workspaceId: string; workspaceUserId: string; expiresAt: number }
interface RefreshRecord { id: string; familyId: string; workspaceId: string; workspaceUserId: string; exp: number; spentAt?: string; createdAt: string }
/** Everything issued from one exchange: revoked together when a spent refresh token comes back. */
interface FamilyRecord { id: string; workspaceId: string; workspaceUserId: string; accessTokenIds: string[]; refreshTokenIds: string[]; createdAt: string }

const LEAD_TTL_MS = 10 * 60_000;
const EXCHANGE_TTL_MS = 10 * 60_000;
const MAX_WRONG_CODES = 5;
const REFRESH_TTL_SECONDS = 90 * 24 * 3600;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
/** A commit already applied in memory and awaited later: its failure must not go unhandled meanwhile. */
const started = (p: Promise<void>) => {
  p.catch(() => undefined);
  return p;
};

export interface LoginItem { workspace: { id: string; name: string }; workspaceUser: { id: string }; exchangeToken: string }
export interface TokenPair { token: string; refreshToken: string }

export function createLeadLogin(ctx: ServiceContext, deps: { identity: IdentityService }) {
  const { store, clock, logger, sealer } = ctx;
  const { identity } = deps;
  const refreshKey = Buffer.from(mac(ctx.jwtKey, 'appreg:refresh-tokens'), 'base64url');
  const nowIso = () => new Date(clock.now()).toISOString();
  const nowS = () => Math.floor(clock.now() / 1000);

  const emailOf = (v: unknown): string => {
    if (typeof v !== 'string' || v.length > 254 || !EMAIL.test(v.trim())) throw invalidRequest('A valid email is required.', [{ pointer: '/email', message: 'must be an email address' }]);
    return normalizeEmail(v);
  };
  const stringField = (v: unknown, name: string): string => {
    if (typeof v !== 'string' || !v || v.length > 512) throw invalidRequest(`${name} is required.`, [{ pointer: `/${name}`, message: 'is required' }]);
    return v;
  };
  /** The human workspace users of this email's account ([] when there is no such account). */
  const membersOf = (email: string): WorkspaceUserRecord[] => (store.get<AccountRecord>(T.accounts, accountId(email)) ? identity.membershipsOf(accountId(email)) : []);

  /** Expired leads, exchange tokens and refresh tokens, and families with nothing left. */
  function expiredChanges(): Change[] {
    const now = clock.now();
    const out: Change[] = [];
    for (const l of store.values<LeadRecord>(LT.leads)) if (l.expiresAt <= now) out.push({ table: LT.leads, id: l.id, value: null });
    for (const x of store.values<ExchangeRecord>(LT.exchanges)) if (x.expiresAt <= now) out.push({ table: LT.exchanges, id: x.id, value: null });
    const gone = new Set<string>();
    for (const r of store.values<RefreshRecord>(LT.refresh)) if (r.exp * 1000 <= now) gone.add(r.id);
    for (const f of store.values<FamilyRecord>(LT.families)) {
      if (f.refreshTokenIds.every((id) => gone.has(id) || !store.get(LT.refresh, id))) out.push({ table: LT.families, id: f.id, value: null });
    }
    for (const id of gone) out.push({ table: LT.refresh, id, value: null });
    return out;
  }

  /** POST /lead: the same answer whether or not the email is a user's; a new lead voids the email's older ones. */
  async function start(emailIn: unknown): Promise<{ id: string }> {
    const email = emailOf(emailIn);
    const known = membersOf(email).length > 0;
    const leadId = newSecret('ald');
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const expiresAt = clock.now() + LEAD_TTL_MS;
    const lead: LeadRecord = { id: sha256(leadId), email, known, expiresAt, attempts: 0, createdAt: nowIso(), ...(known ? { sealedCode: sealer.seal(code) } : {}) };
    const changes = expiredChanges().filter((c) => c.table !== LT.leads || store.get<LeadRecord>(LT.leads, c.id)?.email !== email);
    for (const l of store.values<LeadRecord>(LT.leads)) if (l.email === email) changes.push({ table: LT.leads, id: l.id, value: null });
    changes.push({ table: LT.leads, id: lead.id, value: lead });
    await store.commit(changes);
    if (known) logger.info(`login code ${code} for ${email} (valid 10 minutes; also shown by: appreg users login-code --email ${email})`, { expiresAt: new Date(expiresAt).toISOString() });
    else logger.info(`login requested for ${email}, which is no user's: no code issued`);
    return { id: leadId };
  }

  /** The lead a client names (its id, or for clients that send none, the newest of the email), or invalid_lead. */
  function leadFor(leadId: unknown, email: string): LeadRecord {
    let lead: LeadRecord | undefined;
    if (leadId !== undefined && leadId !== null) lead = store.get<LeadRecord>(LT.leads, sha256(stringField(leadId, 'leadId')));
    else for (const l of store.values<LeadRecord>(LT.leads)) if (l.email === email && (!lead || l.createdAt >= lead.createdAt)) lead = l;
    if (!lead || lead.email !== email || lead.activatedAt) throw invalidLead();
    if (lead.expiresAt <= clock.now()) throw invalidLead('The login code has expired; start the login again.');
    return lead;
  }

  /** POST /lead/activate: the right code activates the lead; the fifth wrong one voids it. */
  async function activate(input: { email?: unknown; code?: unknown; leadId?: unknown }): Promise<void> {
    const email = emailOf(input.email);
    const given = typeof input.code === 'number' && Number.isInteger(input.code) ? String(input.code).padStart(6, '0') : stringField(input.code, 'code').trim();
    const lead = leadFor(input.leadId, email);
    // ---- no await until commit: check-then-change is atomic ----
    const right = lead.known && lead.sealedCode !== undefined && safeEqual(given, sealer.open(lead.sealedCode));
    if (right) {
      await store.commit([{ table: LT.leads, id: lead.id, value: { ...lead, activatedAt: nowIso() } }]);
      return;
    }
    const attempts = lead.attempts + 1;
    if (attempts >= MAX_WRONG_CODES) {
      await store.commit([{ table: LT.leads, id: lead.id, value: null }]);
      throw invalidLead(`The code was wrong ${MAX_WRONG_CODES} times; this login is void. Start it again.`);
    }
    await store.commit([{ table: LT.leads, id: lead.id, value: { ...lead, attempts } }]);
    const left = MAX_WRONG_CODES - attempts;
    throw invalidLoginCode(`The code is wrong; ${left} ${left === 1 ? 'try' : 'tries'} left.`);
  }

  /** POST /lead/login: an activated lead, used once, becomes one exchange token per workspace of the account. */
  async function login(leadIdIn: unknown): Promise<{ items: LoginItem[] }> {
    const lead = store.get<LeadRecord>(LT.leads, sha256(stringField(leadIdIn, 'leadId')));
    if (!lead || !lead.activatedAt || lead.expiresAt <= clock.now()) throw invalidLead('The login request is unknown, expired, used or not yet activated with its code.');
    const changes: Change[] = [{ table: LT.leads, id: lead.id, value: null }];
    const items: LoginItem[] = [];
    for (const wu of membersOf(lead.email)) {
      if (lead.limitTo && !lead.limitTo.includes(wu.workspaceId)) continue;
      const exchangeToken = newSecret('axt');
      const rec: ExchangeRecord = { id: sha256(exchangeToken), workspaceId: wu.workspaceId, workspaceUserId: wu.id, expiresAt: clock.now() + EXCHANGE_TTL_MS };
      changes.push({ table: LT.exchanges, id: rec.id, value: rec });
      items.push({ workspace: identity.workspaceInfo(wu.workspaceId), workspaceUser: { id: wu.id }, exchangeToken });
    }
    await store.commit(changes);
    return { items };
  }

  function newRefresh(familyId: string, user: WorkspaceUserRecord): { token: string; rec: RefreshRecord } {
    const iat = nowS();
    const token = signJwt({ typ: 'refresh', sub: user.id, ws: user.workspaceId, jti: newId('rft', 32), iat, exp: iat + REFRESH_TTL_SECONDS }, refreshKey);
    return { token, rec: { id: sha256(token), familyId, workspaceId: user.workspaceId, workspaceUserId: user.id, exp: iat + REFRESH_TTL_SECONDS, createdAt: nowIso() } };
  }

  /** A management token through identity, and the id (jti) it is revoked by. */
  async function accessToken(user: WorkspaceUserRecord): Promise<{ token: string; jti: string }> {
    const issued = await identity.issueToken(user);
    const jti = verifyJwt(issued.authToken, ctx.jwtKey, nowS())?.jti;
    if (!jti) throw new Error('identity issued a token it does not verify');
    return { token: issued.authToken, jti };
  }

  /** POST /workspaces/{ws}/exchange: a single-use exchange token → the first pair of a new family. */
  async function exchange(workspaceId: string, tokenIn: unknown): Promise<TokenPair> {
    const rec = store.get<ExchangeRecord>(LT.exchanges, sha256(stringField(tokenIn, 'exchangeToken')));
    if (!rec || rec.workspaceId !== workspaceId || rec.expiresAt <= clock.now()) throw invalidGrant('The exchange token is unknown, expired, used or for another workspace.');
    const consumed = started(store.commit([{ table: LT.exchanges, id: rec.id, value: null }])); // in memory now: a second exchange finds nothing
    const user = identity.userRecord(rec.workspaceUserId);
    if (!user) {
      await consumed;
      throw invalidGrant('The user of this exchange token no longer exists.');
    }
    const access = await accessToken(user);
    const refresh = newRefresh(newId('lfm'), user);
    const family: FamilyRecord = { id: refresh.rec.familyId, workspaceId, workspaceUserId: user.id, accessTokenIds: [access.jti], refreshTokenIds: [refresh.rec.id], createdAt: nowIso() };
    await Promise.all([consumed, store.commit([{ table: LT.refresh, id: refresh.rec.id, value: refresh.rec }, { table: LT.families, id: family.id, value: family }])]);
    return { token: access.token, refreshToken: refresh.token };
  }

  function revokeFamily(family: FamilyRecord): Change[] {
    return [
      ...family.accessTokenIds.map((id) => ({ table: T.mgmtTokens, id, value: null })),
      ...family.refreshTokenIds.map((id) => ({ table: LT.refresh, id, value: null })),
      { table: LT.families, id: family.id, value: null },
    ];
  }

  /** POST /workspaces/{ws}/refresh: rotate; a spent refresh token revokes its whole family. */
  async function refresh(workspaceId: string, tokenIn: unknown): Promise<TokenPair> {
    const rec = store.get<RefreshRecord>(LT.refresh, sha256(stringField(tokenIn, 'refreshToken')));
    const family = rec && store.get<FamilyRecord>(LT.families, rec.familyId);
    if (!rec || !family || rec.workspaceId !== workspaceId) throw invalidGrant('The refresh token is unknown, revoked or for another workspace.');
    if (rec.exp <= nowS()) throw invalidGrant('The refresh token has expired; log in again.');
    if (rec.spentAt) {
      logger.warn('a spent refresh token was presented again: every token of its login is revoked', { workspaceId, workspaceUserId: rec.workspaceUserId });
      await store.commit(revokeFamily(family));
      throw invalidGrant('This refresh token was already used; every token of its login has been revoked. Log in again.');
    }
    const spent = started(store.commit([{ table: LT.refresh, id: rec.id, value: { ...rec, spentAt: nowIso() } }])); // in memory now
    const user = identity.userRecord(rec.workspaceUserId);
    if (!user) {
      await spent;
      throw invalidGrant('The user of this refresh token no longer exists.');
    }
    const access = await accessToken(user);
    const now = store.get<FamilyRecord>(LT.families, family.id);
    if (!now) {
      // revoked while the token was being issued (the spent token came back meanwhile)
      await Promise.all([spent, store.commit([{ table: T.mgmtTokens, id: access.jti, value: null }])]);
      throw invalidGrant('This login has been revoked. Log in again.');
    }
    const next = newRefresh(now.id, user);
    const live = (table: string) => (id: string) => store.get(table, id) !== undefined;
    const updated: FamilyRecord = {
      ...now,
      accessTokenIds: [...now.accessTokenIds.filter(live(T.mgmtTokens)), access.jti],
      refreshTokenIds: [...now.refreshTokenIds.filter((id) => (store.get<RefreshRecord>(LT.refresh, id)?.exp ?? 0) > nowS()), next.rec.id],
    };
    await Promise.all([spent, store.commit([{ table: LT.refresh, id: next.rec.id, value: next.rec }, { table: LT.families, id: updated.id, value: updated }])]);
    return { token: access.token, refreshToken: next.token };
  }

  /** The workspace's owner: its first human member (who created it). */
  function ownerOf(workspaceId: string): string | undefined {
    let first: WorkspaceUserRecord | undefined;
    for (const wu of store.values<WorkspaceUserRecord>(T.workspaceUsers)) {
      if (wu.workspaceId === workspaceId && !wu.isBot && (!first || wu.createdAt < first.createdAt)) first = wu;
    }
    return first?.id;
  }

  /**
   * GET …/login-codes?email=: the pending code of a member of the caller's workspace, for that
   * member or the workspace's owner. When the owner reads another user's code, the login it
   * makes reaches only this workspace (never the user's other workspaces).
   */
  async function pendingCode(p: Principal, emailIn: unknown): Promise<{ email: string; code: string; expiresAt: string; attemptsLeft: number }> {
    const email = emailOf(emailIn);
    const me = identity.userRecord(p.workspaceUserId);
    const self = me?.email === email;
    if (!self && ownerOf(p.workspaceId) !== p.workspaceUserId) throw forbidden('Only the workspace owner or that user can see a login code.');
    if (!membersOf(email).some((wu) => wu.workspaceId === p.workspaceId)) throw notFound('Workspace user');
    let lead: LeadRecord | undefined;
    for (const l of store.values<LeadRecord>(LT.leads)) if (l.email === email && l.known && !l.activatedAt && l.expiresAt > clock.now()) lead = l;
    if (!lead?.sealedCode) throw notFound('Pending login code');
    if (!self && !lead.limitTo?.includes(p.workspaceId)) {
      await store.commit([{ table: LT.leads, id: lead.id, value: { ...lead, limitTo: [...(lead.limitTo ?? []), p.workspaceId] } }]);
    }
    return { email, code: sealer.open(lead.sealedCode), expiresAt: new Date(lead.expiresAt).toISOString(), attemptsLeft: MAX_WRONG_CODES - lead.attempts };
  }

  return { start, activate, login, exchange, refresh, pendingCode };
}

export type LeadLogin = ReturnType<typeof createLeadLogin>;
