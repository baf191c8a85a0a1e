/**
 * The authorization flow (interface.md endpoints 6–7, wire-protocol.md §2–§4, security.md §1–§2):
 * request validation, installations and bot users, authorizations, codes, tokens,
 * unauthorize and uninstall. No express here: routes call these functions.
 *
 * Lookups: tokens and codes are keyed by the sha256 digest of their value, so the
 * store's own in-memory map is the O(1) digest → record index. Secondary indexes
 * (tokens and authorized users per app+workspace) live in memory and are rebuilt from
 * the store on start.
 */
import { newId, newSecret, PREFIX, safeEqual, sha256 } from '../crypto.js';
import { AppError, forbidden, invalidClient, invalidRequest, notFound, unauthenticated } from '../errors.js';
import { matchRedirect, withParams } from '../oauth/redirect-match.js';
import type { ServiceContext } from './context.js';
import type { IdentityService } from './identity.js';
import type { AppsService } from './apps.js';
import { T, type AppRecord, type WorkspaceUserRecord } from './records.js';
import type { Principal } from './identity.js';
import type { Change } from '../store/types.js';
import {
  EVENTS_OUTBOX,
  OT,
  type AuthorizationRecord,
  type CodeRecord,
  type ConsumedCodeRecord,
  type InstallationRecord,
  type StoredCodeRecord,
  type OutboxEventRecord,
  type TokenRecord,
} from './oauth-records.js';

/** Codes never live longer than this, whatever the configuration says (security.md §2). */
export const MAX_CODE_TTL_SECONDS = 600;

export interface AuthRequestParams {
  clientId?: unknown;
  redirectUrl?: unknown;
  scopes?: unknown;
  isReinstall?: unknown;
  state?: unknown;
  defaultWorkspaceId?: unknown;
}

/** A consent/grant request after validation: everything the decision needs, from the server side. */
export interface AuthRequest {
  app: AppRecord;
  /** The absolute URL the user is sent to (code/state added on the way out). */
  redirectUrl: string;
  userScopes: string[];
  botScopes: string[];
  reinstall: boolean;
  state?: string;
  defaultWorkspaceId?: string;
  /** The validated input, kept so a later step can validate it again against the current app. */
  params: { clientId: string; redirectUrl: string; scopes: string; isReinstall?: string; state?: string; defaultWorkspaceId?: string };
}

export interface TokenResponse {
  accessToken: string;
  botToken?: string;
  userId: string;
  botId?: string;
  workspaceId: string;
}

export interface TokenOwner {
  appId: string;
  workspaceId: string;
  workspaceUserId: string;
  kind: 'user' | 'bot';
  scopes: string[];
}

export interface BotUserRecord extends WorkspaceUserRecord {
  isBot: true;
  appId: string;
  title?: string;
}

const installationId = (appId: string, workspaceId: string) => `${PREFIX.installation}_${sha256(`${appId}|${workspaceId}`).slice(0, 27)}`;
const authorizationId = (appId: string, workspaceUserId: string) => `${PREFIX.authorization}_${sha256(`${appId}|${workspaceUserId}`).slice(0, 27)}`;
const pairKey = (appId: string, workspaceId: string) => `${appId}|${workspaceId}`;

/** How long a consumed code is remembered so that its reuse revokes what it issued. */
export const CONSUMED_CODE_MEMORY_MS = 24 * 3600_000;

const invalidGrant = (message = 'The authorization code is unknown, expired or already used.') => new AppError(400, 'invalid_grant', message);
const STATE_RE = /^[\x21-\x7e]{1,512}$/;
const ID_RE = /^[A-Za-z0-9_-]{1,100}$/;

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function createOAuthService(ctx: ServiceContext, deps: { identity: IdentityService; apps: AppsService }) {
  const { store, sealer, clock, logger } = ctx;
  const { apps, identity } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();
  const codeTtlMs = () => Math.min(Math.max(ctx.config.codeTtlSeconds, 1), MAX_CODE_TTL_SECONDS) * 1000;
  const botTokenCache = new Map<string, string>(); // sealed → plain
  const eventListeners = new Set<(e: OutboxEventRecord) => void>();
  const interactionListeners = new Set<(i: Record<string, string>) => void>();

  // ---- secondary indexes -------------------------------------------------------------
  const tokensByPair = new Map<string, Set<string>>();
  const usersByPair = new Map<string, Set<string>>();
  const addTo = (m: Map<string, Set<string>>, k: string, v: string) => {
    let s = m.get(k);
    if (!s) m.set(k, (s = new Set()));
    s.add(v);
  };
  const removeFrom = (m: Map<string, Set<string>>, k: string, v: string) => {
    const s = m.get(k);
    if (s && s.delete(v) && s.size === 0) m.delete(k);
  };
  function indexRecord(table: string, rec: object, add: boolean) {
    if (table === OT.tokens) {
      const t = rec as TokenRecord;
      (add ? addTo : removeFrom)(tokensByPair, pairKey(t.appId, t.workspaceId), t.id);
    } else if (table === OT.authorizations) {
      const a = rec as AuthorizationRecord;
      (add ? addTo : removeFrom)(usersByPair, pairKey(a.appId, a.workspaceId), a.workspaceUserId);
    }
  }
  for (const t of store.values<TokenRecord>(OT.tokens)) indexRecord(OT.tokens, t, true);
  for (const a of store.values<AuthorizationRecord>(OT.authorizations)) indexRecord(OT.authorizations, a, true);

  /** store.commit plus index maintenance; the memory change (and index) happens before this returns its promise. */
  function commit(changes: Change[]): Promise<void> {
    const prev = changes.map((c) => (c.table === OT.tokens || c.table === OT.authorizations ? store.get<object>(c.table, c.id) : undefined));
    const p = store.commit(changes);
    changes.forEach((c, i) => {
      const before = prev[i];
      if (before) indexRecord(c.table, before, false);
      if (c.value && (c.table === OT.tokens || c.table === OT.authorizations)) indexRecord(c.table, c.value, true);
    });
    return p;
  }

  // ---- request validation (consent screen and grant call share it) --------------------

  function parseScopes(app: AppRecord, raw: string): { userScopes: string[]; botScopes: string[] } {
    const m = app.manifest;
    const userScopes: string[] = [];
    const botScopes: string[] = [];
    const problems: string[] = [];
    let inBot = false;
    for (const item of raw === '' ? [] : raw.split(',')) {
      const s = item.trim();
      if (!s) {
        problems.push('an empty entry');
        continue;
      }
      if (s.startsWith('bot:')) {
        inBot = true;
        const b = s.slice(4);
        if (!m.scopes.botScopes.includes(b)) problems.push(`bot scope "${b}" is not in the app's manifest`);
        else if (!botScopes.includes(b)) botScopes.push(b);
      } else {
        if (inBot) problems.push(`user scope "${s}" comes after the bot scopes (list user scopes first)`);
        else if (!m.scopes.userScopes.includes(s)) problems.push(`user scope "${s}" is not in the app's manifest`);
        else if (!userScopes.includes(s)) userScopes.push(s);
      }
    }
    if (problems.length) throw new AppError(400, 'invalid_scope', `The scopes are not acceptable: ${problems.slice(0, 3).join('; ')}.`);
    // An app without a bot has no bot to grant scopes to; the SDK still lists them, so they are ignored.
    return { userScopes, botScopes: m.bot ? botScopes : [] };
  }

  /** security.md §3: clientId, then redirectUrl (§1 M1–M6), then scopes; throws AppError, never redirects. */
  function validateRequest(q: AuthRequestParams): AuthRequest {
    const clientId = str(q.clientId);
    if (!clientId) throw invalidRequest('The clientId parameter is required.');
    const app = apps.byId(clientId);
    if (!app) throw new AppError(400, 'invalid_client', 'No app has this clientId.');
    const requested = str(q.redirectUrl);
    if (!requested) throw new AppError(400, 'invalid_redirect_url', 'The redirectUrl parameter is required.');
    const match = matchRedirect(requested, app.manifest.redirectUrls ?? []);
    if (!match.ok) throw new AppError(400, 'invalid_redirect_url', `The redirectUrl is not acceptable: ${match.reason}.`);
    const scopes = str(q.scopes);
    if (scopes === undefined) throw new AppError(400, 'invalid_scope', 'The scopes parameter is required.');
    const { userScopes, botScopes } = parseScopes(app, scopes);
    const isReinstall = str(q.isReinstall);
    if (q.isReinstall !== undefined && isReinstall !== 'true' && isReinstall !== 'false') throw invalidRequest('isReinstall must be true or false.');
    const state = str(q.state);
    if (q.state !== undefined && (state === undefined || !STATE_RE.test(state))) throw invalidRequest('state must be 1 to 512 printable ASCII characters.');
    const dws = str(q.defaultWorkspaceId);
    if (q.defaultWorkspaceId !== undefined && (dws === undefined || !ID_RE.test(dws))) throw invalidRequest('defaultWorkspaceId is not a workspace id.');
    return {
      app,
      redirectUrl: match.url,
      userScopes,
      botScopes,
      reinstall: isReinstall === 'true',
      state,
      defaultWorkspaceId: dws,
      params: { clientId, redirectUrl: requested, scopes, isReinstall, state, defaultWorkspaceId: dws },
    };
  }

  function installationOf(appId: string, workspaceId: string): InstallationRecord | undefined {
    return store.get<InstallationRecord>(OT.installations, installationId(appId, workspaceId));
  }

  /** A socket-mode app can only be authorized by its owner (interface.md: "other users cannot authorize the app"). */
  function assertMayAuthorize(app: AppRecord, user: WorkspaceUserRecord): void {
    if (!app.manifest.socketMode) return;
    const owner = store.get<WorkspaceUserRecord>(T.workspaceUsers, app.ownerId);
    if (!owner || owner.accountId !== user.accountId) throw forbidden('This app runs in socket mode (development only); only its owner can authorize it.');
  }

  /** What the consent page must tell the user beyond the requested scopes. */
  function consentContext(req: AuthRequest, workspaceId: string) {
    const inst = installationOf(req.app.id, workspaceId);
    const installedBot = inst?.botTokenId ? inst.botScopes : undefined;
    const newBotScopes = installedBot ? req.botScopes.filter((s) => !installedBot.includes(s)) : req.botScopes;
    return {
      installed: !!inst,
      installedBotScopes: installedBot ?? [],
      /** Bot scopes this grant adds; without isReinstall an existing bot keeps its scopes and these are not granted. */
      newBotScopes,
      botScopesGranted: !installedBot || req.reinstall,
    };
  }

  /** Allow: mint a code bound to app, user, workspace, scopes and redirect URL. */
  async function grant(req: AuthRequest, user: WorkspaceUserRecord): Promise<{ code: string; redirectUrl: string }> {
    assertMayAuthorize(req.app, user);
    const code = newSecret(PREFIX.code);
    const rec: CodeRecord = {
      id: sha256(code),
      appId: req.app.id,
      workspaceId: user.workspaceId,
      workspaceUserId: user.id,
      userScopes: req.userScopes,
      botScopes: req.botScopes,
      redirectUrl: req.redirectUrl,
      reinstall: req.reinstall,
      expiresAt: clock.now() + codeTtlMs(),
      createdAt: nowIso(),
    };
    await store.commit([{ table: OT.codes, id: rec.id, value: rec }]);
    logger.info('authorization granted', { appId: req.app.id, workspaceId: user.workspaceId, workspaceUserId: user.id, reinstall: req.reinstall });
    return { code, redirectUrl: withParams(req.redirectUrl, { code, state: req.state }) };
  }

  /** Cancel: where the user goes back to. */
  function denyLocation(req: AuthRequest): string {
    return withParams(req.redirectUrl, { error: 'access_denied', state: req.state });
  }

  function openBotToken(sealed: string): string {
    let plain = botTokenCache.get(sealed);
    if (!plain) {
      plain = sealer.open(sealed);
      if (botTokenCache.size > 10_000) botTokenCache.clear();
      botTokenCache.set(sealed, plain);
    }
    return plain;
  }

  /** Revoke whatever a reused code handed out (RFC 6749 §4.1.2, security.md §2). */
  function revokeIssued(rec: ConsumedCodeRecord): Promise<void> {
    const changes: Change[] = [];
    for (const id of rec.issuedTokenIds ?? []) {
      const tok = store.get<TokenRecord>(OT.tokens, id);
      if (!tok) continue;
      changes.push({ table: OT.tokens, id, value: null });
      if (tok.kind === 'bot') {
        const inst = installationOf(tok.appId, tok.workspaceId);
        if (inst && inst.botTokenId === id) {
          const { sealedBotToken: _s, botTokenId: _b, ...rest } = inst;
          changes.push({ table: OT.installations, id: inst.id, value: { ...rest, updatedAt: nowIso() } });
        }
      }
    }
    // keep the code record (consumed) so further reuses are recognised too, but forget what it issued
    changes.push({ table: OT.codes, id: rec.id, value: { ...rec, issuedTokenIds: [] } });
    return commit(changes);
  }

  const DUMMY_SECRET = newSecret(PREFIX.clientSecret);

  /**
   * Endpoint 6. Steps in order: authenticate the client (constant time), consume the code
   * (check and change within one tick: store.commit applies to memory synchronously), issue.
   * Resolves once the exchange is durable.
   */
  async function exchange(input: { clientId?: unknown; clientSecret?: unknown; code?: unknown }): Promise<TokenResponse> {
    const missing = (['client-id', 'client-secret', 'code'] as const).filter((k, i) => {
      const v = [input.clientId, input.clientSecret, input.code][i];
      return typeof v !== 'string' || v === '' || v.length > 512;
    });
    if (missing.length) throw invalidRequest(`The form parts ${missing.join(', ')} are required.`, missing.map((k) => ({ pointer: `/${k}`, message: 'is required' })));
    const clientId = input.clientId as string;
    const app = apps.byId(clientId);
    const expected = app ? apps.secretsOf(app).clientSecret : DUMMY_SECRET;
    if (!safeEqual(input.clientSecret as string, expected) || !app) throw invalidClient();

    // ---- from here to commit(): no await, so check-then-change is atomic ----
    const codeId = sha256(input.code as string);
    const stored = store.get<StoredCodeRecord>(OT.codes, codeId);
    if (!stored || stored.appId !== app.id) throw invalidGrant();
    if ('consumedAt' in stored) {
      logger.warn('authorization code reused: tokens issued from it revoked', { appId: app.id, workspaceId: stored.workspaceId });
      await revokeIssued(stored);
      throw invalidGrant();
    }
    const rec: CodeRecord = stored;
    if (rec.expiresAt <= clock.now()) {
      await store.commit([{ table: OT.codes, id: rec.id, value: null }]);
      throw invalidGrant('The authorization code has expired.');
    }
    const user = store.get<WorkspaceUserRecord>(T.workspaceUsers, rec.workspaceUserId);
    if (!user) throw invalidGrant('The user who granted this code no longer exists.');

    const now = nowIso();
    const changes: Change[] = [];
    const issued: string[] = [];
    let inst = installationOf(app.id, rec.workspaceId);
    let botToken: string | undefined;
    let botId: string | undefined;
    if (!inst) {
      inst = { id: installationId(app.id, rec.workspaceId), appId: app.id, workspaceId: rec.workspaceId, installedBy: user.id, botScopes: [], createdAt: now, updatedAt: now };
    }
    if (app.manifest.bot) {
      let botUser = inst.botUserId ? store.get<BotUserRecord>(T.workspaceUsers, inst.botUserId) : undefined;
      const mint = !inst.botTokenId || !inst.sealedBotToken || rec.reinstall || !botUser;
      if (!botUser || rec.reinstall) {
        const m = app.manifest;
        botUser = {
          ...(botUser ?? { id: newId(PREFIX.bot), workspaceId: rec.workspaceId, accountId: `bot:${app.id}`, email: `${app.id.toLowerCase()}@bots.appreg.invalid`, createdAt: now }),
          name: m.displayName,
          isBot: true,
          appId: app.id,
          ...(m.botTitle ? { title: m.botTitle } : {}),
        } as BotUserRecord;
        changes.push({ table: T.workspaceUsers, id: botUser.id, value: botUser });
      }
      botId = botUser.id;
      if (mint) {
        botToken = newSecret(PREFIX.botToken);
        const scopes = inst.botTokenId && !rec.reinstall ? inst.botScopes : rec.botScopes;
        const tok: TokenRecord = { id: sha256(botToken), kind: 'bot', appId: app.id, workspaceId: rec.workspaceId, workspaceUserId: botUser.id, scopes, createdAt: now };
        if (inst.botTokenId) changes.push({ table: OT.tokens, id: inst.botTokenId, value: null }); // reinstall: the old one stops working now
        changes.push({ table: OT.tokens, id: tok.id, value: tok });
        inst = { ...inst, botUserId: botUser.id, botScopes: scopes, sealedBotToken: sealer.seal(botToken), botTokenId: tok.id, installedBy: rec.reinstall ? user.id : inst.installedBy, updatedAt: now };
        issued.push(tok.id);
        changes.push({ table: OT.installations, id: inst.id, value: inst });
      } else {
        botToken = openBotToken(inst.sealedBotToken!);
        issued.push(inst.botTokenId!);
        if (store.get(OT.installations, inst.id) !== inst) changes.push({ table: OT.installations, id: inst.id, value: inst });
      }
    } else if (!store.get(OT.installations, inst.id)) {
      changes.push({ table: OT.installations, id: inst.id, value: inst });
    }

    const accessToken = newSecret(PREFIX.accessToken);
    const userTok: TokenRecord = { id: sha256(accessToken), kind: 'user', appId: app.id, workspaceId: rec.workspaceId, workspaceUserId: user.id, scopes: rec.userScopes, createdAt: now };
    changes.push({ table: OT.tokens, id: userTok.id, value: userTok });
    issued.unshift(userTok.id);

    const azId = authorizationId(app.id, user.id);
    const prevAz = store.get<AuthorizationRecord>(OT.authorizations, azId);
    if (!prevAz) {
      const az: AuthorizationRecord = { id: azId, appId: app.id, workspaceId: rec.workspaceId, workspaceUserId: user.id, userScopes: rec.userScopes, createdAt: now, updatedAt: now };
      changes.push({ table: OT.authorizations, id: az.id, value: az });
    } else if (!rec.userScopes.every((s) => prevAz.userScopes.includes(s))) {
      changes.push({ table: OT.authorizations, id: azId, value: { ...prevAz, userScopes: [...new Set([...prevAz.userScopes, ...rec.userScopes])], updatedAt: now } });
    }
    const consumed: ConsumedCodeRecord = { id: rec.id, appId: rec.appId, workspaceId: rec.workspaceId, expiresAt: rec.expiresAt, consumedAt: now, forgetAt: clock.now() + CONSUMED_CODE_MEMORY_MS, issuedTokenIds: issued };
    changes.push({ table: OT.codes, id: rec.id, value: consumed });
    await commit(changes);

    const out: TokenResponse = { accessToken, userId: user.id, workspaceId: rec.workspaceId };
    if (botToken) {
      out.botToken = botToken;
      out.botId = botId;
    }
    return out;
  }

  // ---- tokens held by apps -------------------------------------------------------------

  /** The owner of an app token, when `appKey` is that app's key (wire-protocol.md §4); else undefined. */
  function tokenOwner(token: unknown, appKey: unknown): TokenOwner | undefined {
    if (typeof token !== 'string' || typeof appKey !== 'string' || !token || !appKey || token.length > 512) return undefined;
    const rec = store.get<TokenRecord>(OT.tokens, sha256(token));
    if (!rec) return undefined;
    const app = apps.byId(rec.appId);
    if (!app || !safeEqual(appKey, apps.secretsOf(app).appKey)) return undefined;
    return { appId: rec.appId, workspaceId: rec.workspaceId, workspaceUserId: rec.workspaceUserId, kind: rec.kind, scopes: rec.scopes };
  }

  function authenticateApp(token: unknown, appKey: unknown): TokenOwner {
    const owner = tokenOwner(token, appKey);
    if (!owner) throw unauthenticated('A valid token header and the x-app-token of the same app are required.');
    return owner;
  }

  function me(owner: TokenOwner) {
    const ws = identity.workspaceInfo(owner.workspaceId);
    const wu = identity.userInfo(owner.workspaceId, owner.workspaceUserId);
    return { workspaceId: ws.id, workspaceName: ws.name, workspaceUserId: wu.id, workspaceUserName: wu.name };
  }

  /** Workspace users who authorized the app in the workspace (delivery uses it for events and scope checks). */
  function authorizedUsers(appId: string, workspaceId: string): string[] {
    return [...(usersByPair.get(pairKey(appId, workspaceId)) ?? [])];
  }

  function authorizationOf(appId: string, workspaceUserId: string): AuthorizationRecord | undefined {
    return store.get<AuthorizationRecord>(OT.authorizations, authorizationId(appId, workspaceUserId));
  }

  function newEvent(appId: string, workspaceId: string, eventType: OutboxEventRecord['eventType'], workspaceUserIds: string[], body: Record<string, unknown>): OutboxEventRecord {
    return { id: newId('evt'), appId, workspaceId, eventType, workspaceUserIds, body, createdAt: nowIso() };
  }

  async function afterEvent(p: Promise<void>, ev: OutboxEventRecord): Promise<void> {
    await p;
    for (const l of eventListeners) {
      try {
        l(ev);
      } catch (e) {
        logger.error('event listener failed', { error: String(e) });
      }
    }
  }

  /** DELETE /v1/app/authorization: the user's tokens for this app stop working now; APP_UNAUTHORIZED is recorded in the same commit. */
  async function unauthorize(owner: TokenOwner): Promise<void> {
    if (owner.kind !== 'user') throw invalidRequest('Unauthorize needs a user access token, not a bot token.');
    const changes: Change[] = [];
    for (const id of tokensByPair.get(pairKey(owner.appId, owner.workspaceId)) ?? []) {
      const t = store.get<TokenRecord>(OT.tokens, id);
      if (t && t.kind === 'user' && t.workspaceUserId === owner.workspaceUserId) changes.push({ table: OT.tokens, id, value: null });
    }
    const az = authorizationOf(owner.appId, owner.workspaceUserId);
    if (az) changes.push({ table: OT.authorizations, id: az.id, value: null });
    const inst = installationOf(owner.appId, owner.workspaceId);
    const ev = newEvent(owner.appId, owner.workspaceId, 'APP_UNAUTHORIZED', [owner.workspaceUserId], {
      id: az?.id ?? authorizationId(owner.appId, owner.workspaceUserId),
      app: owner.appId,
      appInstallation: inst?.id ?? null,
      workspaceUser: owner.workspaceUserId,
      workspace: owner.workspaceId,
      grantedScopes: [],
      accessGranted: false,
    });
    changes.push({ table: EVENTS_OUTBOX, id: ev.id, value: ev });
    logger.info('app unauthorized', { appId: owner.appId, workspaceId: owner.workspaceId, workspaceUserId: owner.workspaceUserId });
    await afterEvent(commit(changes), ev);
  }

  /** Uninstall from a workspace: every token of the app there stops working now; APP_UNINSTALLED is recorded in the same commit. */
  async function uninstall(appId: string, workspaceId: string): Promise<void> {
    const inst = installationOf(appId, workspaceId);
    if (!inst) throw notFound('Installation');
    const users = authorizedUsers(appId, workspaceId);
    const changes: Change[] = [];
    for (const id of tokensByPair.get(pairKey(appId, workspaceId)) ?? []) changes.push({ table: OT.tokens, id, value: null });
    for (const wu of users) changes.push({ table: OT.authorizations, id: authorizationId(appId, wu), value: null });
    changes.push({ table: OT.installations, id: inst.id, value: null });
    if (inst.botUserId && store.get(T.workspaceUsers, inst.botUserId)) changes.push({ table: T.workspaceUsers, id: inst.botUserId, value: null });
    const ev = newEvent(appId, workspaceId, 'APP_UNINSTALLED', users, {
      id: inst.id,
      app: appId,
      workspace: workspaceId,
      installedBy: inst.installedBy,
      botUser: inst.botUserId ?? null,
      uninstalledAt: nowIso(),
    });
    changes.push({ table: EVENTS_OUTBOX, id: ev.id, value: ev });
    logger.info('app uninstalled', { appId, workspaceId });
    await afterEvent(commit(changes), ev);
  }

  /** Management: uninstall by a member of the workspace who installed it, authorized it, or owns the app. */
  async function uninstallAs(p: Principal, appId: string, workspaceId: string): Promise<void> {
    const mine = identity.listWorkspaces(p).find((w) => w.id === workspaceId);
    if (!mine) throw forbidden('You are not a member of this workspace.');
    const app = apps.byId(appId);
    const inst = app ? installationOf(appId, workspaceId) : undefined;
    if (!app || !inst) throw notFound('Installation');
    const me = store.get<WorkspaceUserRecord>(T.workspaceUsers, p.workspaceUserId);
    const owner = store.get<WorkspaceUserRecord>(T.workspaceUsers, app.ownerId);
    const allowed = inst.installedBy === mine.workspaceUserId || !!authorizationOf(appId, mine.workspaceUserId) || (!!me && owner?.accountId === me.accountId);
    if (!allowed) throw forbidden('Only whoever installed or authorized the app, or its owner, can uninstall it.');
    await uninstall(appId, workspaceId);
  }

  /** GET …/apps/authorizations: the apps the calling user has authorized. */
  function authorizationsOf(workspaceUserId: string) {
    const out = [];
    for (const az of store.values<AuthorizationRecord>(OT.authorizations)) {
      if (az.workspaceUserId !== workspaceUserId) continue;
      const app = apps.byId(az.appId);
      if (!app) continue;
      const inst = installationOf(az.appId, az.workspaceId);
      out.push({
        app: { id: app.id, name: app.manifest.name, displayName: app.manifest.displayName },
        workspaceId: az.workspaceId,
        workspaceUserId: az.workspaceUserId,
        userScopes: az.userScopes,
        botScopes: inst?.botTokenId ? inst.botScopes : [],
        ...(inst?.botUserId ? { botId: inst.botUserId } : {}),
        createdAt: az.createdAt,
        updatedAt: az.updatedAt,
      });
    }
    return out;
  }

  /**
   * Drop expired codes. A consumed code is kept for CONSUMED_CODE_MEMORY_MS after its exchange, so a
   * replay long after the code's own expiry (a leaked code tried later) is still recognised and
   * revokes what the code issued (security.md §2).
   */
  async function sweep(): Promise<number> {
    const now = clock.now();
    const changes: Change[] = [];
    for (const c of store.values<StoredCodeRecord>(OT.codes)) {
      const until = 'consumedAt' in c && c.forgetAt !== undefined ? c.forgetAt : c.expiresAt;
      if (until <= now) changes.push({ table: OT.codes, id: c.id, value: null });
    }
    if (changes.length) await store.commit(changes);
    return changes.length;
  }

  return {
    validateRequest,
    parseScopes,
    consentContext,
    assertMayAuthorize,
    grant,
    denyLocation,
    exchange,
    tokenOwner,
    authenticateApp,
    me,
    authorizedUsers,
    authorizationOf,
    installationOf,
    unauthorize,
    uninstall,
    uninstallAs,
    authorizationsOf,
    sweep,
    /** Called after an outbox event is durable (the delivery engine may subscribe instead of polling). */
    onEvent(listener: (e: OutboxEventRecord) => void): () => void {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    /** POST /v1/interactions/complete: whoever shows loading states may listen. */
    onInteractionComplete(listener: (i: Record<string, string>) => void): () => void {
      interactionListeners.add(listener);
      return () => interactionListeners.delete(listener);
    },
    completeInteraction(owner: TokenOwner, body: Record<string, string>): void {
      for (const l of interactionListeners) l({ ...body, appId: owner.appId, workspaceId: owner.workspaceId });
    },
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;

/** The key under which the OAuth extension publishes its service in ServerDeps.shared. */
export const OAUTH_SHARED_KEY = 'oauth';

export function getOAuth(deps: { shared: Map<string, unknown> }): OAuthService {
  const s = deps.shared.get(OAUTH_SHARED_KEY) as OAuthService | undefined;
  if (!s) throw new Error('the OAuth extension is not registered (src/server/extensions.ts)');
  return s;
}
