/**
 * The token endpoint's use-case (docs/protocol.md §3, endpoint 6; docs/security.md §2):
 * authenticate the client in constant time, consume the code exactly once, issue a user
 * token (and a bot token, new on first install or reinstall), and revoke everything a
 * reused code issued. Also the sweep that forgets expired codes.
 */
import { newId, newSecret, PREFIX, safeEqual, sha256 } from '../../crypto.js';
import { invalidClient, invalidGrant, invalidRequest, type AppError } from '../../errors.js';
import { StoreConflict, type Change, type Expectation } from '../../store/types.js';
import type { ServiceContext } from '../context.js';
import type { AppsService } from '../apps.js';
import { IDENTITY_TABLES, type AppRecord, type WorkspaceUserRecord } from '../../model/identity.js';
import { retryOnConflict } from '../conflict.js';
import type { Grants } from './grants.js';
import { authorizationId, installationId } from '../../model/oauth.js';
import {
  OAUTH_TABLES,
  sweepMinuteOf,
  type AuthorizationRecord,
  type CodeRecord,
  type ConsumedCodeRecord,
  type InstallationRecord,
  type StoredCodeRecord,
  type TokenRecord,
} from '../../model/oauth.js';
import { must } from '../../must.js';

export interface TokenResponse {
  accessToken: string;
  botToken?: string;
  userId: string;
  botId?: string;
  workspaceId: string;
}

/** What an exchange reads besides the app and the code. */
interface Related {
  user: WorkspaceUserRecord | undefined;
  inst: InstallationRecord | undefined;
  az: AuthorizationRecord | undefined;
}

/** A sweep reads at most this many minutes one by one (a day and an hour); after a longer gap it reads every code. */
const MAX_MINUTES_PER_SWEEP = 25 * 60;

/**
 * The log line of a reused code: what was revoked, why that matters beyond this user (the bot
 * token is shared by every request the app makes as its bot in the workspace) and how the app
 * recovers. A reuse is often innocent: a browser that reloads the app's redirect page sends the
 * code again.
 */
function reuseMessage(r: { accessTokens: number; botToken: boolean }): string {
  const what = [
    r.accessTokens ? `the user's access token` : '',
    r.botToken
      ? `the installation's bot token (every request the app makes as its bot in this workspace fails until it has a new one)`
      : '',
  ].filter(Boolean);
  return what.length
    ? `authorization code reused (RFC 6749 §4.1.2: a sign the code leaked; a reload of the app's redirect page does it too): revoked ${what.join(' and ')}; the app recovers by having the user authorize it again, which gives it new tokens`
    : 'authorization code reused again: what it issued was already revoked; the app recovers by having the user authorize it again';
}

/** How long a consumed code is remembered so that its reuse revokes what it issued. */
const CONSUMED_CODE_MEMORY_MS = 24 * 3600_000;

export interface CodeExchangeDeps extends ServiceContext {
  apps: AppsService;
  grants: Grants;
}

export function createCodeExchange(deps: CodeExchangeDeps) {
  const ctx: ServiceContext = deps;
  const { store, sealer, clock, logger } = ctx;
  const { apps, grants } = deps;
  const { commit, installationOf } = grants;
  const nowIso = () => new Date(clock.now()).toISOString();
  const botTokenCache = new Map<string, string>(); // sealed → plain: a pure function of immutable input

  function openBotToken(sealed: string): string {
    let plain = botTokenCache.get(sealed);
    if (!plain) {
      plain = sealer.open(sealed);
      if (botTokenCache.size > 10_000) botTokenCache.clear();
      botTokenCache.set(sealed, plain);
    }
    return plain;
  }

  /**
   * Revoke whatever a reused code handed out (RFC 6749 §4.1.2, docs/security.md §2): the user's
   * access token and, when the code's exchange got it, the installation's current bot token.
   * Resolves what was revoked (nothing when an earlier reuse already did).
   */
  const revokeIssued = (codeId: string): Promise<{ accessTokens: number; botToken: boolean }> =>
    retryOnConflict(async () => {
      const revoked = { accessTokens: 0, botToken: false };
      const rec = await store.get(OAUTH_TABLES.codes, codeId);
      if (!rec || !('consumedAt' in rec)) return revoked;
      const changes: Change[] = [];
      const expect: Expectation[] = [{ table: OAUTH_TABLES.codes, id: rec.id, value: rec }];
      const toks = await Promise.all((rec.issuedTokenIds ?? []).map((id) => store.get(OAUTH_TABLES.tokens, id)));
      for (const tok of toks) {
        if (!tok) continue;
        changes.push({ table: OAUTH_TABLES.tokens, id: tok.id, value: null });
        if (tok.kind === 'bot') revoked.botToken = true;
        else revoked.accessTokens++;
        if (tok.kind === 'bot') {
          const inst = await installationOf(tok.appId, tok.workspaceId);
          if (inst && inst.botTokenId === tok.id) {
            const { sealedBotToken: _s, botTokenId: _b, ...rest } = inst;
            changes.push({ table: OAUTH_TABLES.installations, id: inst.id, value: { ...rest, updatedAt: nowIso() } });
            expect.push({ table: OAUTH_TABLES.installations, id: inst.id, value: inst });
          }
        }
      }
      // keep the code record (consumed) so further reuses are recognised too, but forget what it issued
      changes.push({ table: OAUTH_TABLES.codes, id: rec.id, value: { ...rec, issuedTokenIds: [] } });
      await commit(changes, expect);
      return revoked;
    });

  const DUMMY_SECRET = newSecret(PREFIX.clientSecret);

  /** The user, installation and authorization, in one read. */
  async function relatedOf(userId: string, instId: string, azId: string): Promise<Related> {
    const read = await store.getMany(
      [
        { table: IDENTITY_TABLES.workspaceUsers, id: userId },
        { table: OAUTH_TABLES.installations, id: instId },
        { table: OAUTH_TABLES.authorizations, id: azId },
      ],
      { shared: true },
    );
    return { user: read[0], inst: read[1], az: read[2] };
  }

  /**
   * An invalid_grant refusal: `reason` (what was wrong with the code) is logged, never sent: the
   * client gets the one message of docs/protocol.md §3, whatever the reason, so a guessed or stolen
   * code learns nothing (never the code itself either: only its app and workspace).
   */
  function refuse(reason: string, fields: { appId: string; workspaceId?: string }): AppError {
    logger.info('token exchange refused: invalid_grant', { reason, ...fields });
    return invalidGrant();
  }

  /**
   * Endpoint 6. Steps in order: authenticate the client (constant time), consume the code, issue.
   * The code is consumed exactly once across every daemon of the store: the commit that issues
   * expects the code record as it was read, so of two exchanges of one code only one commits; the
   * other finds the code consumed and is a reuse (invalid_grant, and what the code issued is revoked).
   * Resolves once the exchange is durable.
   */
  async function exchange(input: {
    clientId?: unknown;
    clientSecret?: unknown;
    code?: unknown;
  }): Promise<TokenResponse> {
    const missing = (['client-id', 'client-secret', 'code'] as const).filter((_k, i) => {
      const v = [input.clientId, input.clientSecret, input.code][i];
      return typeof v !== 'string' || v === '' || v.length > 512;
    });
    if (missing.length)
      throw invalidRequest(
        `The form parts ${missing.join(', ')} are required.`,
        missing.map((k) => ({ pointer: `/${k}`, message: 'is required' })),
      );
    const clientId = input.clientId as string;
    const codeId = sha256(input.code as string);
    // Every record the exchange reads, in one read (one round trip on PostgreSQL, one snapshot): the
    // app, the code, and what the code names (its user, the installation and authorization it would
    // update). The code is only looked at once the client is authenticated.
    const read = await store.getMany(
      [
        { table: IDENTITY_TABLES.apps, id: clientId },
        { table: OAUTH_TABLES.codes, id: codeId },
        { table: IDENTITY_TABLES.workspaceUsers, idFrom: { key: 1, field: 'workspaceUserId' } },
        { table: OAUTH_TABLES.installations, idFrom: { key: 1, field: 'installationId' } },
        { table: OAUTH_TABLES.authorizations, idFrom: { key: 1, field: 'authorizationId' } },
      ],
      { shared: true },
    ); // only read: new records are built from them
    const [app, first] = read;
    const expected = app ? apps.secretsOf(app).clientSecret : DUMMY_SECRET;
    if (!safeEqual(input.clientSecret as string, expected) || !app) throw invalidClient();

    let stored = first;
    let withCode: Related | undefined = { user: read[2], inst: read[3], az: read[4] };
    for (let attempt = 1; ; attempt++) {
      if (!stored) throw refuse('no such code (never issued, or forgotten after its expiry)', { appId: app.id });
      if (stored.appId !== app.id) throw refuse('the code was issued to another app', { appId: app.id });
      if ('consumedAt' in stored) {
        const revoked = await revokeIssued(stored.id);
        logger.warn(reuseMessage(revoked), { appId: app.id, workspaceId: stored.workspaceId, revoked });
        throw refuse('the code was already exchanged (a reuse: what it issued is revoked)', {
          appId: app.id,
          workspaceId: stored.workspaceId,
        });
      }
      try {
        return await issue(app, stored, withCode);
      } catch (e) {
        // something read changed meanwhile: the code (consumed by another exchange: a reuse, next turn)
        // or the installation or authorization (another exchange in the workspace: issue again on fresh reads)
        if (!(e instanceof StoreConflict) || attempt >= 4) throw e;
        stored = await store.get(OAUTH_TABLES.codes, codeId);
        withCode = undefined;
      }
    }
  }

  /**
   * Issue the tokens of a live code, in named steps: mint the bot token (or keep the installation's),
   * issue the user token, merge the authorization, consume the code; then one commit that expects the
   * code, installation and authorization as read. `related`: those records as read with the code,
   * used when the code names the ids this exchange derives (a code minted before codes named them,
   * or a retry, reads them here).
   */
  async function issue(app: AppRecord, rec: CodeRecord, related: Related | undefined): Promise<TokenResponse> {
    if (rec.expiresAt <= clock.now()) {
      await store.commit(
        [{ table: OAUTH_TABLES.codes, id: rec.id, value: null }],
        [{ table: OAUTH_TABLES.codes, id: rec.id, value: rec }],
      );
      throw refuse('the code has expired', { appId: app.id, workspaceId: rec.workspaceId });
    }
    // ids as grants.installationOf/authorizationOf make them
    const azId = authorizationId(app.id, rec.workspaceUserId);
    const instId = installationId(app.id, rec.workspaceId);
    const named = related && rec.installationId === instId && rec.authorizationId === azId;
    const { user, inst: instRead, az: prevAz } = named ? related : await relatedOf(rec.workspaceUserId, instId, azId);
    if (!user)
      throw refuse('the user who granted the code no longer exists', { appId: app.id, workspaceId: rec.workspaceId });

    const now = nowIso();
    const bot = await mintBotToken(
      app,
      rec,
      user,
      instRead ?? {
        id: instId,
        appId: app.id,
        workspaceId: rec.workspaceId,
        installedBy: user.id,
        botScopes: [],
        createdAt: now,
        updatedAt: now,
      },
      !instRead,
      now,
    );
    const userToken = issueUserToken(app, rec, user, now);
    const authorization = mergeAuthorization(app, rec, user, azId, prevAz, now);
    const code = consumeCode(rec, [userToken.change.id, ...bot.issued], now);
    // exactly once: the code as read; and no lost update of the installation (its one bot) or of the authorization
    await commit(
      [...bot.changes, userToken.change, ...authorization, code],
      [
        { table: OAUTH_TABLES.codes, id: rec.id, value: rec },
        { table: OAUTH_TABLES.installations, id: instId, value: instRead },
        { table: OAUTH_TABLES.authorizations, id: azId, value: prevAz },
      ],
    );
    return {
      accessToken: userToken.accessToken,
      userId: user.id,
      workspaceId: rec.workspaceId,
      ...(bot.botToken ? { botToken: bot.botToken, botId: bot.botId } : {}),
    };
  }

  /**
   * Step 1, the installation and its bot. A `bot: true` app's first install (or a reinstall, or an
   * installation whose bot token was revoked) mints a new bot token, with the bot user made (or
   * renamed) and the old token revoked; otherwise the installation's token is handed out again.
   * `isNew`: the installation is not stored yet (it is written even for an app without a bot).
   */
  async function mintBotToken(
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    inst: InstallationRecord,
    isNew: boolean,
    now: string,
  ): Promise<{ changes: Change[]; issued: string[]; botToken?: string; botId?: string }> {
    if (!app.manifest.bot)
      return { changes: isNew ? [{ table: OAUTH_TABLES.installations, id: inst.id, value: inst }] : [], issued: [] };
    const changes: Change[] = [];
    // An installation's bot user lives as long as it does (an uninstall deletes both in one commit),
    // so only a reinstall, which renames it, reads it; an exchange in an installed workspace need not.
    let botUser: WorkspaceUserRecord | undefined =
      inst.botUserId && rec.reinstall ? await store.get(IDENTITY_TABLES.workspaceUsers, inst.botUserId) : undefined;
    const mint = !inst.botTokenId || !inst.sealedBotToken || rec.reinstall || !inst.botUserId;
    if (!inst.botUserId || rec.reinstall) {
      const m = app.manifest;
      botUser = {
        ...(botUser ?? {
          id: newId(PREFIX.bot),
          workspaceId: rec.workspaceId,
          accountId: `bot:${app.id}`,
          email: `${app.id.toLowerCase()}@bots.appreg.test`,
          createdAt: now,
        }),
        name: m.displayName,
        isBot: true,
        appId: app.id,
        ...(m.botTitle ? { title: m.botTitle } : {}),
      };
      changes.push({ table: IDENTITY_TABLES.workspaceUsers, id: botUser.id, value: botUser });
    }
    const botId = botUser?.id ?? must(inst.botUserId);
    if (!mint)
      return { changes, issued: [must(inst.botTokenId)], botToken: openBotToken(must(inst.sealedBotToken)), botId };
    const botToken = newSecret(PREFIX.botToken);
    const scopes = inst.botTokenId && !rec.reinstall ? inst.botScopes : rec.botScopes;
    const tok: TokenRecord = {
      id: sha256(botToken),
      kind: 'bot',
      appId: app.id,
      workspaceId: rec.workspaceId,
      workspaceUserId: botId,
      scopes,
      createdAt: now,
    };
    // reinstall: the old one stops working now
    if (inst.botTokenId) changes.push({ table: OAUTH_TABLES.tokens, id: inst.botTokenId, value: null });
    changes.push({ table: OAUTH_TABLES.tokens, id: tok.id, value: tok });
    const next: InstallationRecord = {
      ...inst,
      botUserId: botId,
      botScopes: scopes,
      sealedBotToken: sealer.seal(botToken),
      botTokenId: tok.id,
      installedBy: rec.reinstall ? user.id : inst.installedBy,
      updatedAt: now,
    };
    changes.push({ table: OAUTH_TABLES.installations, id: next.id, value: next });
    return { changes, issued: [tok.id], botToken, botId };
  }

  /** Step 2: a new user token with the code's user scopes (stored only as its digest). */
  function issueUserToken(
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    now: string,
  ): { accessToken: string; change: Change & { id: string } } {
    const accessToken = newSecret(PREFIX.accessToken);
    const tok: TokenRecord = {
      id: sha256(accessToken),
      kind: 'user',
      appId: app.id,
      workspaceId: rec.workspaceId,
      workspaceUserId: user.id,
      scopes: rec.userScopes,
      createdAt: now,
    };
    return { accessToken, change: { table: OAUTH_TABLES.tokens, id: tok.id, value: tok } };
  }

  /**
   * Step 3: the user's authorization of the app, made on first use, with the code's user scopes added; nothing when it
   * holds them already.
   */
  function mergeAuthorization(
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    azId: string,
    prev: AuthorizationRecord | undefined,
    now: string,
  ): Change[] {
    if (!prev) {
      const az: AuthorizationRecord = {
        id: azId,
        appId: app.id,
        workspaceId: rec.workspaceId,
        workspaceUserId: user.id,
        userScopes: rec.userScopes,
        createdAt: now,
        updatedAt: now,
      };
      return [{ table: OAUTH_TABLES.authorizations, id: az.id, value: az }];
    }
    if (rec.userScopes.every((sc) => prev.userScopes.includes(sc))) return [];
    return [
      {
        table: OAUTH_TABLES.authorizations,
        id: azId,
        value: { ...prev, userScopes: [...new Set([...prev.userScopes, ...rec.userScopes])], updatedAt: now },
      },
    ];
  }

  /** Step 4: the code, consumed: remembered with the ids of what it issued, so that a reuse revokes them. */
  function consumeCode(rec: CodeRecord, issued: string[], now: string): Change {
    const forgetAt = clock.now() + CONSUMED_CODE_MEMORY_MS;
    const consumed: ConsumedCodeRecord = {
      id: rec.id,
      appId: rec.appId,
      workspaceId: rec.workspaceId,
      expiresAt: rec.expiresAt,
      consumedAt: now,
      forgetAt,
      issuedTokenIds: issued,
      sweepMinute: sweepMinuteOf(forgetAt),
    };
    return { table: OAUTH_TABLES.codes, id: rec.id, value: consumed };
  }

  /** The last minute whose codes this daemon swept; undefined until its first sweep. */
  let sweptThrough: number | undefined;

  /**
   * Drop expired codes. A consumed code is kept for CONSUMED_CODE_MEMORY_MS after its exchange, so a
   * replay long after the code's own expiry (a leaked code tried later) is still recognised and
   * revokes what the code issued (docs/security.md §2).
   */
  async function sweep(): Promise<number> {
    const now = clock.now();
    const minute = Math.floor(now / 60_000);
    const due = (c: StoredCodeRecord) =>
      ('consumedAt' in c && c.forgetAt !== undefined ? c.forgetAt : c.expiresAt) <= now;
    const changes: Change[] = [];
    const forget = (c: StoredCodeRecord) =>
      void (due(c) && changes.push({ table: OAUTH_TABLES.codes, id: c.id, value: null }));
    // The first sweep (or one after a long gap) reads every code: records written before codes carried
    // their sweep minute have none. It scans them one at a time: read at once, the 200,000 codes of
    // the token benchmark were some 250 MB of objects alive together. Later sweeps read only the
    // minutes that ended since the last one.
    if (sweptThrough === undefined || minute - sweptThrough > MAX_MINUTES_PER_SWEEP)
      await store.scan(OAUTH_TABLES.codes, forget);
    else
      for (let m = sweptThrough + 1; m <= minute; m++)
        (await store.find(OAUTH_TABLES.codes, 'sweepMinute', String(m))).forEach(forget);
    // the current minute is read again next time: its codes are not all due yet
    sweptThrough = minute - 1;
    if (changes.length) await store.commit(changes);
    return changes.length;
  }

  /**
   * Whether the app has exchanged `code` (`appreg authorize --follow` asks, so it can say so even
   * when the app's redirect page never answers). Knowing the code is what entitles one to ask.
   */
  async function codeState(code: unknown): Promise<'exchanged' | 'waiting' | 'unknown'> {
    if (typeof code !== 'string' || !code || code.length > 512) return 'unknown';
    const rec = await store.get(OAUTH_TABLES.codes, sha256(code));
    if (!rec) return 'unknown';
    if ('consumedAt' in rec) return 'exchanged';
    return rec.expiresAt > clock.now() ? 'waiting' : 'unknown';
  }

  return { exchange, sweep, codeState };
}

export type CodeExchange = ReturnType<typeof createCodeExchange>;
