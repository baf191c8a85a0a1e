/**
 * The writes of a code exchange, as steps over its transaction (services/oauth/code-exchange.ts decides
 * which): issuing the tokens of a live code (the bot token minted or handed out again, the user token,
 * the authorization merged, the code consumed), and revoking what a reused code issued. Each step only
 * reads and writes through the transaction it is given; the exchange commits them together.
 */
import { newId, newSecret, PREFIX, sha256, type Sealer } from '../../crypto.js';
import type { Clock } from '../../clock.js';
import type { Transaction } from '../../store/types.js';
import { IDENTITY_TABLES, type AppRecord, type WorkspaceUserRecord } from '../../model/identity.js';
import { installationId } from '../../model/oauth.js';
import {
  OAUTH_TABLES,
  sweepMinuteOf,
  type AuthorizationRecord,
  type CodeRecord,
  type ConsumedCodeRecord,
  type InstallationRecord,
  type TokenRecord,
} from '../../model/oauth.js';
import { must } from '../../must.js';
import { isoTime } from '../../iso-time.js';

export interface TokenResponse {
  accessToken: string;
  botToken?: string;
  userId: string;
  botId?: string;
  workspaceId: string;
}

/** What a reuse revoked. */
export interface Revoked {
  accessTokens: number;
  botToken: boolean;
}

/** The records a code names besides its app, as the exchange read them, and the ids it read them by. */
export interface Related {
  user: WorkspaceUserRecord | undefined;
  inst: InstallationRecord | undefined;
  az: AuthorizationRecord | undefined;
  /** installationId(app, the code's workspace), authorizationId(app, the code's user): digests, made once. */
  instId: string;
  azId: string;
}

/** What issuing needs besides the transaction. */
export interface IssueDeps {
  sealer: Sealer;
  clock: Clock;
  /** The plain bot token of a sealed one (the exchange keeps a cache: opening is a cipher call per exchange). */
  openBotToken(sealed: string): string;
}

/** How long a consumed code is remembered so that its reuse revokes what it issued. */
const CONSUMED_CODE_MEMORY_MS = 24 * 3600_000;

/**
 * Revoke whatever a reused code handed out (RFC 6749 §4.1.2, docs/security.md §2): the user's
 * access token and, when the code's exchange got it, the installation's current bot token. The
 * code is kept (consumed) so that further reuses are recognised too, but forgets what it issued.
 * Answers what was revoked (nothing when an earlier reuse already did).
 */
export async function revokeIssued(tx: Transaction, code: ConsumedCodeRecord, now: string): Promise<Revoked> {
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
      tx.put(OAUTH_TABLES.installations, inst.id, { ...rest, updatedAt: now });
    }
  }
  tx.put(OAUTH_TABLES.codes, code.id, { ...code, issuedTokenIds: [] });
  return revoked;
}

/**
 * Step 3, issue the tokens of a live code: mint the bot token (or keep the installation's), issue
 * the user token, merge the authorization, consume the code. The transaction commits them.
 */
export async function issue(
  tx: Transaction,
  deps: IssueDeps,
  app: AppRecord,
  rec: CodeRecord,
  user: WorkspaceUserRecord,
  related: Related,
): Promise<TokenResponse> {
  const now = isoTime(deps.clock.now());
  const instRead = related.inst;
  const inst: InstallationRecord = instRead ?? {
    id: related.instId,
    appId: app.id,
    workspaceId: rec.workspaceId,
    installedBy: user.id,
    botScopes: [],
    createdAt: now,
    updatedAt: now,
  };
  // only a reinstall, which renames the bot user, reads it; an exchange in an installed workspace need not
  const botUser =
    app.manifest.bot && inst.botUserId && rec.reinstall
      ? await tx.get(IDENTITY_TABLES.workspaceUsers, inst.botUserId)
      : undefined;
  const bot = mintBotToken(tx, deps, app, rec, user, inst, !instRead, now, botUser);
  const { accessToken, tokenId } = issueUserToken(tx, app, rec, user, now);
  mergeAuthorization(tx, app, rec, user, related.azId, related.az, now);
  consumeCode(tx, deps.clock, rec, [tokenId, ...bot.issued], now);
  const out: TokenResponse = { accessToken, userId: user.id, workspaceId: rec.workspaceId };
  if (bot.botToken) {
    out.botToken = bot.botToken;
    out.botId = bot.botId;
  }
  return out;
}

/**
 * The installation and its bot. A `bot: true` app's first install (or a reinstall, or an
 * installation whose bot token was revoked) mints a new bot token, with the bot user made (or
 * renamed) and the old token revoked; otherwise the installation's token is handed out again.
 * `isNew`: the installation is not stored yet (it is written even for an app without a bot). An
 * installation's bot user lives as long as it does (an uninstall deletes both in one commit).
 * `botUserRead`: the installation's bot user, read by the caller on a reinstall only (it is renamed).
 */
function mintBotToken(
  tx: Transaction,
  deps: IssueDeps,
  app: AppRecord,
  rec: CodeRecord,
  user: WorkspaceUserRecord,
  inst: InstallationRecord,
  isNew: boolean,
  now: string,
  botUserRead: WorkspaceUserRecord | undefined,
): { issued: string[]; botToken?: string; botId?: string } {
  if (!app.manifest.bot) {
    if (isNew) tx.put(OAUTH_TABLES.installations, inst.id, inst);
    return { issued: [] };
  }
  let botUser = botUserRead;
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
  if (!mint) return { issued: [must(inst.botTokenId)], botToken: deps.openBotToken(must(inst.sealedBotToken)), botId };
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
    sealedBotToken: deps.sealer.seal(botToken),
    botTokenId: tok.id,
    installedBy: rec.reinstall ? user.id : inst.installedBy,
    updatedAt: now,
  });
  return { issued: [tok.id], botToken, botId };
}

/** A new user token with the code's user scopes (stored only as its digest); answers the token and its record's id. */
function issueUserToken(
  tx: Transaction,
  app: AppRecord,
  rec: CodeRecord,
  user: WorkspaceUserRecord,
  now: string,
): { accessToken: string; tokenId: string } {
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
  return { accessToken, tokenId: tok.id };
}

/**
 * The user's authorization of the app (`id`: authorizationId(app, user)), made on first use, with the
 * code's user scopes added; left as it is when it holds them already.
 */
function mergeAuthorization(
  tx: Transaction,
  app: AppRecord,
  rec: CodeRecord,
  user: WorkspaceUserRecord,
  id: string,
  prev: AuthorizationRecord | undefined,
  now: string,
): void {
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
function consumeCode(tx: Transaction, clock: Clock, rec: CodeRecord, issued: string[], now: string): void {
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
