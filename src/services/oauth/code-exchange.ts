/**
 * The token endpoint's use-case (docs/protocol.md §3, endpoint 6; docs/security.md §2):
 * authenticate the client in constant time, consume the code exactly once, issue a user
 * token (and a bot token, new on first install or reinstall), and revoke everything a
 * reused code issued. Also the sweep that forgets expired codes.
 */
import { newId, newSecret, PREFIX, safeEqual, sha256 } from '../../crypto.js';
import { invalidClient, invalidGrant, type AppError } from '../../errors.js';
import type { Transaction } from '../../store/types.js';
import type { ServiceContext } from '../context.js';
import type { AppsService } from '../apps.js';
import { IDENTITY_TABLES, type AppRecord, type WorkspaceUserRecord } from '../../model/identity.js';
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

/** The token request's form: its three parts, checked. */
interface ExchangeForm {
  clientId: string;
  clientSecret: string;
  code: string;
}

/** What a reuse revoked. */
interface Revoked {
  accessTokens: number;
  botToken: boolean;
}

/**
 * How an exchange ended, decided inside its transaction and acted on after it: tokens issued, or a
 * refusal (`reason` for the log; `revoked`: the code was reused and what it issued is revoked).
 */
type Outcome = { issued: TokenResponse } | { refused: string; appId: string; workspaceId?: string; revoked?: Revoked };

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
  const { apps } = deps;
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
   * access token and, when the code's exchange got it, the installation's current bot token. The
   * code is kept (consumed) so that further reuses are recognised too, but forgets what it issued.
   * Answers what was revoked (nothing when an earlier reuse already did).
   */
  async function revokeIssued(tx: Transaction, code: ConsumedCodeRecord): Promise<Revoked> {
    const revoked = { accessTokens: 0, botToken: false };
    const ids = code.issuedTokenIds ?? [];
    const toks = ids.length ? await tx.getMany(ids.map((id) => ({ table: OAUTH_TABLES.tokens, id }))) : [];
    for (const tok of toks) {
      if (!tok) continue;
      tx.delete(OAUTH_TABLES.tokens, tok.id);
      if (tok.kind !== 'bot') {
        revoked.accessTokens++;
        continue;
      }
      revoked.botToken = true;
      const inst = await tx.get(OAUTH_TABLES.installations, installationId(tok.appId, tok.workspaceId));
      if (inst && inst.botTokenId === tok.id) {
        const { sealedBotToken: _s, botTokenId: _b, ...rest } = inst;
        tx.put(OAUTH_TABLES.installations, inst.id, { ...rest, updatedAt: nowIso() });
      }
    }
    tx.put(OAUTH_TABLES.codes, code.id, { ...code, issuedTokenIds: [] });
    return revoked;
  }

  const DUMMY_SECRET = newSecret(PREFIX.clientSecret);

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
   * Endpoint 6, as named steps over one transaction (its form's three parts were checked at the
   * edge, schemas/http/oauth.schema.json): authenticate the client (constant time), then decide on
   * the code (consume it and issue, or refuse, or revoke what a reused code issued). The code is
   * consumed exactly once across every daemon of the store: the transaction expects the code as
   * read, so of two exchanges of one code only one commits; the other runs again, finds the code
   * consumed and is a reuse. Logs and throws once the transaction is over (it may run more than
   * once). Resolves once the exchange is durable.
   */
  async function exchange(form: ExchangeForm): Promise<TokenResponse> {
    const outcome = await store.transaction((tx) => decide(tx, form), { attempts: 4 });
    if ('issued' in outcome) return outcome.issued;
    if (outcome.revoked)
      logger.warn(reuseMessage(outcome.revoked), {
        appId: outcome.appId,
        workspaceId: outcome.workspaceId,
        revoked: outcome.revoked,
      });
    throw refuse(outcome.refused, {
      appId: outcome.appId,
      ...(outcome.workspaceId ? { workspaceId: outcome.workspaceId } : {}),
    });
  }

  /**
   * Step 1, inside the transaction: read every record the exchange needs in one read (one round
   * trip on PostgreSQL, one snapshot): the app, the code, and what the code names (its user, the
   * installation and authorization it would update). The app and the user are only looked at (no
   * expectation: every exchange of the app would otherwise lock its record); the code, installation
   * and authorization are what the commit expects. The code is only looked at once the client is
   * authenticated.
   */
  async function decide(tx: Transaction, form: ExchangeForm): Promise<Outcome> {
    const read = await tx.getMany(
      [
        { table: IDENTITY_TABLES.apps, id: form.clientId, peek: true },
        { table: OAUTH_TABLES.codes, id: sha256(form.code) },
        { table: IDENTITY_TABLES.workspaceUsers, idFrom: { key: 1, field: 'workspaceUserId' }, peek: true },
        { table: OAUTH_TABLES.installations, idFrom: { key: 1, field: 'installationId' } },
        { table: OAUTH_TABLES.authorizations, idFrom: { key: 1, field: 'authorizationId' } },
      ],
      { shared: true },
    ); // only read: new records are built from them
    const [app, stored] = read;
    const expected = app ? apps.secretsOf(app).clientSecret : DUMMY_SECRET;
    if (!safeEqual(form.clientSecret, expected) || !app) throw invalidClient();
    const appId = app.id;
    if (!stored) return { refused: 'no such code (never issued, or forgotten after its expiry)', appId };
    if (stored.appId !== app.id) return { refused: 'the code was issued to another app', appId };
    const workspaceId = stored.workspaceId;
    if ('consumedAt' in stored)
      return {
        refused: 'the code was already exchanged (a reuse: what it issued is revoked)',
        appId,
        workspaceId,
        revoked: await revokeIssued(tx, stored),
      };
    if (stored.expiresAt <= clock.now()) {
      tx.delete(OAUTH_TABLES.codes, stored.id);
      return { refused: 'the code has expired', appId, workspaceId };
    }
    const related = await relatedOf(tx, app, stored, { user: read[2], inst: read[3], az: read[4] });
    if (!related.user) return { refused: 'the user who granted the code no longer exists', appId, workspaceId };
    return { issued: await issue(tx, app, stored, related.user, related) };
  }

  /**
   * The user, installation and authorization of a code: as read with it when the code names the ids
   * this exchange derives (as grants.installationOf/authorizationOf make them), else read here (a code
   * minted before codes named them).
   */
  async function relatedOf(tx: Transaction, app: AppRecord, rec: CodeRecord, withCode: Related): Promise<Related> {
    const azId = authorizationId(app.id, rec.workspaceUserId);
    const instId = installationId(app.id, rec.workspaceId);
    if (rec.installationId === instId && rec.authorizationId === azId) return withCode;
    const [user, inst, az] = await tx.getMany(
      [
        { table: IDENTITY_TABLES.workspaceUsers, id: rec.workspaceUserId, peek: true },
        { table: OAUTH_TABLES.installations, id: instId },
        { table: OAUTH_TABLES.authorizations, id: azId },
      ],
      { shared: true },
    );
    return { user, inst, az };
  }

  /**
   * Step 3, issue the tokens of a live code: mint the bot token (or keep the installation's), issue
   * the user token, merge the authorization, consume the code. The transaction commits them.
   */
  async function issue(
    tx: Transaction,
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    related: Related,
  ): Promise<TokenResponse> {
    const now = nowIso();
    const instRead = related.inst;
    const inst: InstallationRecord = instRead ?? {
      id: installationId(app.id, rec.workspaceId),
      appId: app.id,
      workspaceId: rec.workspaceId,
      installedBy: user.id,
      botScopes: [],
      createdAt: now,
      updatedAt: now,
    };
    const bot = await mintBotToken(tx, app, rec, user, inst, !instRead, now);
    const accessToken = issueUserToken(tx, app, rec, user, now);
    mergeAuthorization(tx, app, rec, user, related.az, now);
    consumeCode(tx, rec, [sha256(accessToken), ...bot.issued], now);
    return {
      accessToken,
      userId: user.id,
      workspaceId: rec.workspaceId,
      ...(bot.botToken ? { botToken: bot.botToken, botId: bot.botId } : {}),
    };
  }

  /**
   * The installation and its bot. A `bot: true` app's first install (or a reinstall, or an
   * installation whose bot token was revoked) mints a new bot token, with the bot user made (or
   * renamed) and the old token revoked; otherwise the installation's token is handed out again.
   * `isNew`: the installation is not stored yet (it is written even for an app without a bot). An
   * installation's bot user lives as long as it does (an uninstall deletes both in one commit).
   */
  async function mintBotToken(
    tx: Transaction,
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    inst: InstallationRecord,
    isNew: boolean,
    now: string,
  ): Promise<{ issued: string[]; botToken?: string; botId?: string }> {
    if (!app.manifest.bot) {
      if (isNew) tx.put(OAUTH_TABLES.installations, inst.id, inst);
      return { issued: [] };
    }
    // only a reinstall, which renames the bot user, reads it; an exchange in an installed workspace need not
    let botUser =
      inst.botUserId && rec.reinstall ? await tx.get(IDENTITY_TABLES.workspaceUsers, inst.botUserId) : undefined;
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
      tx.put(IDENTITY_TABLES.workspaceUsers, botUser.id, botUser);
    }
    const botId = botUser?.id ?? must(inst.botUserId);
    if (!mint) return { issued: [must(inst.botTokenId)], botToken: openBotToken(must(inst.sealedBotToken)), botId };
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
    if (inst.botTokenId) tx.delete(OAUTH_TABLES.tokens, inst.botTokenId);
    tx.put(OAUTH_TABLES.tokens, tok.id, tok);
    tx.put(OAUTH_TABLES.installations, inst.id, {
      ...inst,
      botUserId: botId,
      botScopes: scopes,
      sealedBotToken: sealer.seal(botToken),
      botTokenId: tok.id,
      installedBy: rec.reinstall ? user.id : inst.installedBy,
      updatedAt: now,
    });
    return { issued: [tok.id], botToken, botId };
  }

  /** A new user token with the code's user scopes (stored only as its digest); answers the token. */
  function issueUserToken(
    tx: Transaction,
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    now: string,
  ): string {
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
    tx.put(OAUTH_TABLES.tokens, tok.id, tok);
    return accessToken;
  }

  /**
   * The user's authorization of the app, made on first use, with the code's user scopes added; left
   * as it is when it holds them already.
   */
  function mergeAuthorization(
    tx: Transaction,
    app: AppRecord,
    rec: CodeRecord,
    user: WorkspaceUserRecord,
    prev: AuthorizationRecord | undefined,
    now: string,
  ): void {
    const id = authorizationId(app.id, user.id);
    if (!prev)
      tx.put(OAUTH_TABLES.authorizations, id, {
        id,
        appId: app.id,
        workspaceId: rec.workspaceId,
        workspaceUserId: user.id,
        userScopes: rec.userScopes,
        createdAt: now,
        updatedAt: now,
      });
    else if (!rec.userScopes.every((sc) => prev.userScopes.includes(sc)))
      tx.put(OAUTH_TABLES.authorizations, id, {
        ...prev,
        userScopes: [...new Set([...prev.userScopes, ...rec.userScopes])],
        updatedAt: now,
      });
  }

  /** The code, consumed: remembered with the ids of what it issued, so that a reuse revokes them. */
  function consumeCode(tx: Transaction, rec: CodeRecord, issued: string[], now: string): void {
    const forgetAt = clock.now() + CONSUMED_CODE_MEMORY_MS;
    tx.put(OAUTH_TABLES.codes, rec.id, {
      id: rec.id,
      appId: rec.appId,
      workspaceId: rec.workspaceId,
      expiresAt: rec.expiresAt,
      consumedAt: now,
      forgetAt,
      issuedTokenIds: issued,
      sweepMinute: sweepMinuteOf(forgetAt),
    });
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
    const gone: string[] = [];
    const forget = (c: StoredCodeRecord) => void (due(c) && gone.push(c.id));
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
    // deleted as found: an exchange of one of them meanwhile expected it, so it runs again and finds none
    if (gone.length)
      await store.transaction(async (tx) => {
        for (const id of gone) tx.delete(OAUTH_TABLES.codes, id);
      });
    return gone.length;
  }

  /**
   * Whether the app has exchanged `code` (`appreg authorize --follow` asks, so it can say so even
   * when the app's redirect page never answers). Knowing the code is what entitles one to ask.
   */
  async function codeState(code: string | undefined): Promise<'exchanged' | 'waiting' | 'unknown'> {
    if (!code || code.length > 512) return 'unknown';
    const rec = await store.get(OAUTH_TABLES.codes, sha256(code));
    if (!rec) return 'unknown';
    if ('consumedAt' in rec) return 'exchanged';
    return rec.expiresAt > clock.now() ? 'waiting' : 'unknown';
  }

  return { exchange, sweep, codeState };
}

export type CodeExchange = ReturnType<typeof createCodeExchange>;
