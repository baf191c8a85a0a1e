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
import { StoreConflict, type Change } from '../store/types.js';
import type { ServiceContext } from './context.js';
import type { IdentityService, Principal } from './identity.js';
import { IDENTITY_TABLES, accountId, normalizeEmail, type WorkspaceUserRecord } from '../model/identity.js';
import { retryOnConflict } from './conflict.js';
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

/** A commit that uses something once: a StoreConflict means another request used it first (`refusal`). */
async function refuseOnConflict(commit: Promise<void>, refusal: () => Error): Promise<void> {
  try {
    await commit;
  } catch (e) {
    throw e instanceof StoreConflict ? refusal() : e;
  }
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

  const emailOf = (v: unknown): string => {
    if (typeof v !== 'string' || v.length > 254 || !EMAIL.test(v.trim()))
      throw invalidRequest('A valid email is required.', [{ pointer: '/email', message: 'must be an email address' }]);
    return normalizeEmail(v);
  };
  const stringField = (v: unknown, name: string): string => {
    if (typeof v !== 'string' || !v || v.length > 512)
      throw invalidRequest(`${name} is required.`, [{ pointer: `/${name}`, message: 'is required' }]);
    return v;
  };
  /** The human workspace users of this email's account ([] when there is no such account). */
  const membersOf = (email: string): Promise<WorkspaceUserRecord[]> => identity.membershipsOf(accountId(email));
  const leadsOf = (email: string) => store.find(LOGIN_TABLES.leads, 'email', email);

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
  async function start(emailIn: unknown): Promise<{ id: string }> {
    const email = emailOf(emailIn);
    const [members, older, expired] = await Promise.all([membersOf(email), leadsOf(email), expiredChanges()]);
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
    const mine = new Set(older.map((l) => l.id));
    const changes = expired.filter((c) => c.table !== LOGIN_TABLES.leads || !mine.has(c.id));
    for (const l of older) changes.push({ table: LOGIN_TABLES.leads, id: l.id, value: null });
    changes.push({ table: LOGIN_TABLES.leads, id: lead.id, value: lead });
    await store.commit(changes);
    if (known)
      logger.info(
        `login code ${code} for ${email} (valid 10 minutes; also shown by: appreg users login-code --email ${email})`,
        { expiresAt: new Date(expiresAt).toISOString() },
      );
    else logger.info(`login requested for ${email}, which is no user's: no code issued`);
    return { id: leadId };
  }

  /** The lead a client names (its id, or for clients that send none, the newest of the email), or invalid_lead. */
  async function leadFor(leadId: unknown, email: string): Promise<LeadRecord> {
    let lead: LeadRecord | undefined;
    if (leadId !== undefined && leadId !== null)
      lead = await store.get(LOGIN_TABLES.leads, sha256(stringField(leadId, 'leadId')));
    else for (const l of await leadsOf(email)) if (!lead || l.createdAt >= lead.createdAt) lead = l;
    if (!lead || lead.email !== email || lead.activatedAt) throw invalidLead();
    if (lead.expiresAt <= clock.now()) throw invalidLead('The login code has expired; start the login again.');
    return lead;
  }

  /**
   * POST /lead/activate: the right code activates the lead; the fifth wrong one voids it. Each try
   * commits expecting the lead as read, so wrong codes sent at once to several daemons are each
   * counted (a conflicting try runs again on the lead as it is now).
   */
  async function activate(input: { email?: unknown; code?: unknown; leadId?: unknown }): Promise<void> {
    const email = emailOf(input.email);
    const given =
      typeof input.code === 'number' && Number.isInteger(input.code)
        ? String(input.code).padStart(6, '0')
        : stringField(input.code, 'code').trim();
    return retryOnConflict(async () => {
      const lead = await leadFor(input.leadId, email);
      const asRead = [{ table: LOGIN_TABLES.leads, id: lead.id, value: lead }];
      const right = lead.known && lead.sealedCode !== undefined && safeEqual(given, sealer.open(lead.sealedCode));
      if (right) {
        await store.commit(
          [{ table: LOGIN_TABLES.leads, id: lead.id, value: { ...lead, activatedAt: nowIso() } }],
          asRead,
        );
        return;
      }
      const attempts = lead.attempts + 1;
      if (attempts >= MAX_WRONG_CODES) {
        await store.commit([{ table: LOGIN_TABLES.leads, id: lead.id, value: null }], asRead);
        throw invalidLead(`The code was wrong ${MAX_WRONG_CODES} times; this login is void. Start it again.`);
      }
      await store.commit([{ table: LOGIN_TABLES.leads, id: lead.id, value: { ...lead, attempts } }], asRead);
      const left = MAX_WRONG_CODES - attempts;
      throw invalidLoginCode(`The code is wrong; ${left} ${left === 1 ? 'try' : 'tries'} left.`);
    }, 8);
  }

  /** POST /lead/login: an activated lead, used once, becomes one exchange token per workspace of the account. */
  async function login(leadIdIn: unknown): Promise<{ items: LoginItem[] }> {
    const unusable = () =>
      invalidLead('The login request is unknown, expired, used or not yet activated with its code.');
    const lead = await store.get(LOGIN_TABLES.leads, sha256(stringField(leadIdIn, 'leadId')));
    if (!lead || !lead.activatedAt || lead.expiresAt <= clock.now()) throw unusable();
    const changes: Change[] = [{ table: LOGIN_TABLES.leads, id: lead.id, value: null }];
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
      changes.push({ table: LOGIN_TABLES.exchanges, id: rec.id, value: rec });
      items.push({
        workspace: await identity.workspaceInfo(wu.workspaceId),
        workspaceUser: { id: wu.id },
        exchangeToken,
      });
    }
    // used once across every daemon: the lead as read (a concurrent use deleted it)
    await refuseOnConflict(store.commit(changes, [{ table: LOGIN_TABLES.leads, id: lead.id, value: lead }]), unusable);
    return { items };
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

  /** POST /workspaces/{ws}/exchange: a single-use exchange token → the first pair of a new family. */
  async function exchange(workspaceId: string, tokenIn: unknown): Promise<TokenPair> {
    const rec = await store.get(LOGIN_TABLES.exchanges, sha256(stringField(tokenIn, 'exchangeToken')));
    if (!rec) throw refuse('exchange', 'unknown exchange token (never issued, already used or swept)', { workspaceId });
    const who = { workspaceId, workspaceUserId: rec.workspaceUserId };
    if (rec.workspaceId !== workspaceId)
      throw refuse('exchange', `issued for another workspace (${rec.workspaceId})`, who);
    if (rec.expiresAt <= clock.now()) throw refuse('exchange', 'expired', who);
    const unusable = () => refuse('exchange', 'used at the same time by another request', who);
    const consume = { table: LOGIN_TABLES.exchanges, id: rec.id, value: null };
    const asRead = [{ table: LOGIN_TABLES.exchanges, id: rec.id, value: rec }];
    const user = await identity.userRecord(rec.workspaceUserId);
    if (!user) {
      await refuseOnConflict(store.commit([consume], asRead), unusable);
      throw refuse('exchange', 'its user no longer exists', who);
    }
    const access = identity.newToken(user);
    const refresh = newRefresh(newId('lfm'), user);
    const family: FamilyRecord = {
      id: refresh.rec.familyId,
      workspaceId,
      workspaceUserId: user.id,
      accessTokenIds: [access.jti],
      refreshTokenIds: [refresh.rec.id],
      createdAt: nowIso(),
    };
    // one commit, used once across every daemon: the exchange token as read (a concurrent use deleted it)
    const changes: Change[] = [
      consume,
      access.change,
      { table: LOGIN_TABLES.refresh, id: refresh.rec.id, value: refresh.rec },
      { table: LOGIN_TABLES.families, id: family.id, value: family },
    ];
    await refuseOnConflict(store.commit(changes, asRead), unusable);
    return { token: access.issued.authToken, refreshToken: refresh.token };
  }

  function revokeFamily(family: FamilyRecord): Change[] {
    return [
      ...family.accessTokenIds.map((id) => ({ table: IDENTITY_TABLES.mgmtTokens, id, value: null })),
      ...family.refreshTokenIds.map((id) => ({ table: LOGIN_TABLES.refresh, id, value: null })),
      { table: LOGIN_TABLES.families, id: family.id, value: null },
    ];
  }

  /**
   * POST /workspaces/{ws}/refresh: rotate; a spent refresh token revokes its whole family. Rotation
   * happens once across every daemon: the commit expects the refresh record and its family as read.
   * When it conflicts (the same token presented twice at once) the step runs again, and the second
   * run finds the token spent: a reuse, which revokes the family, as one after the other would.
   */
  const refresh = (workspaceId: string, tokenIn: unknown): Promise<TokenPair> => {
    const id = sha256(stringField(tokenIn, 'refreshToken'));
    return retryOnConflict(() => refreshOnce(workspaceId, id));
  };

  async function refreshOnce(workspaceId: string, id: string): Promise<TokenPair> {
    const rec = await store.get(LOGIN_TABLES.refresh, id);
    const family = rec && (await store.get(LOGIN_TABLES.families, rec.familyId));
    if (!rec) throw refuse('refresh', 'unknown refresh token (never issued, or revoked)', { workspaceId });
    const who = { workspaceId, workspaceUserId: rec.workspaceUserId };
    if (!family) throw refuse('refresh', 'revoked: its login was revoked', who);
    if (rec.workspaceId !== workspaceId)
      throw refuse('refresh', `issued for another workspace (${rec.workspaceId})`, who);
    if (rec.exp <= nowS()) throw refuse('refresh', 'expired', who);
    if (rec.spentAt) {
      logger.warn('a spent refresh token was presented again: every token of its login is revoked', who);
      await store.commit(revokeFamily(family));
      throw refuse('refresh', 'already used: every token of its login is now revoked', who);
    }
    const spent: Change = { table: LOGIN_TABLES.refresh, id: rec.id, value: { ...rec, spentAt: nowIso() } };
    const asRead = [
      { table: LOGIN_TABLES.refresh, id: rec.id, value: rec },
      { table: LOGIN_TABLES.families, id: family.id, value: family },
    ];
    const user = await identity.userRecord(rec.workspaceUserId);
    if (!user) {
      await store.commit([spent], asRead);
      throw refuse('refresh', 'its user no longer exists', who);
    }
    const access = identity.newToken(user);
    const next = newRefresh(family.id, user);
    // the family keeps only what is still live, so it does not grow with every rotation
    const [accessLive, refreshLive] = await Promise.all([
      Promise.all(family.accessTokenIds.map((t) => store.get(IDENTITY_TABLES.mgmtTokens, t))),
      Promise.all(family.refreshTokenIds.map((r) => store.get(LOGIN_TABLES.refresh, r))),
    ]);
    const updated: FamilyRecord = {
      ...family,
      accessTokenIds: [...family.accessTokenIds.filter((_t, i) => accessLive[i] !== undefined), access.jti],
      refreshTokenIds: [...family.refreshTokenIds.filter((_r, i) => (refreshLive[i]?.exp ?? 0) > nowS()), next.rec.id],
    };
    await store.commit(
      [
        spent,
        access.change,
        { table: LOGIN_TABLES.refresh, id: next.rec.id, value: next.rec },
        { table: LOGIN_TABLES.families, id: updated.id, value: updated },
      ],
      asRead,
    );
    return { token: access.issued.authToken, refreshToken: next.token };
  }

  /**
   * GET …/login-codes?email=: the pending code of a member of the caller's workspace, for that
   * member or the workspace's owner. When the owner reads another user's code, the login it
   * makes reaches only this workspace (never the user's other workspaces).
   */
  async function pendingCode(
    p: Principal,
    emailIn: unknown,
  ): Promise<{ email: string; code: string; expiresAt: string; attemptsLeft: number }> {
    const email = emailOf(emailIn);
    const me = await identity.userRecord(p.workspaceUserId);
    const self = me?.email === email;
    if (!self && (await identity.ownerOf(p.workspaceId)) !== p.workspaceUserId)
      throw forbidden('Only the workspace owner or that user can see a login code.');
    if (!(await membersOf(email)).some((wu) => wu.workspaceId === p.workspaceId)) throw notFound('Workspace user');
    return retryOnConflict(async () => {
      let lead: LeadRecord | undefined;
      for (const l of await leadsOf(email))
        if (l.known && !l.activatedAt && l.expiresAt > clock.now() && (!lead || l.createdAt >= lead.createdAt))
          lead = l;
      if (!lead?.sealedCode) throw notFound('Pending login code');
      if (!self && !lead.limitTo?.includes(p.workspaceId)) {
        // expects the lead as read: a limit added on another daemon at once is not lost
        await store.commit(
          [
            {
              table: LOGIN_TABLES.leads,
              id: lead.id,
              value: { ...lead, limitTo: [...(lead.limitTo ?? []), p.workspaceId] },
            },
          ],
          [{ table: LOGIN_TABLES.leads, id: lead.id, value: lead }],
        );
      }
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
