/**
 * The token endpoint's use-case (docs/protocol.md §3, endpoint 6; docs/security.md §2):
 * authenticate the client in constant time, consume the code exactly once, issue a user
 * token (and a bot token, new on first install or reinstall), and revoke everything a
 * reused code issued. Also the sweep that forgets expired codes.
 */
import { expectedSecret, matchesSecret, newSecret, PREFIX, sha256 } from '../../crypto.js';
import { invalidClient, invalidGrant, type AppError } from '../../errors.js';
import type { Transaction } from '../../store/types.js';
import type { ServiceContext } from '../context.js';
import type { AppsService } from '../apps.js';
import { IDENTITY_TABLES, type AppRecord } from '../../model/identity.js';
import type { Grants } from './grants.js';
import { isoTime } from '../../iso-time.js';
import { authorizationId, installationId, OAUTH_TABLES, type CodeRecord } from '../../model/oauth.js';
import { issue, revokeIssued, type IssueDeps, type Related, type Revoked, type TokenResponse } from './token-issue.js';

/** The token request's form: its three parts, checked. */
interface ExchangeForm {
  clientId: string;
  clientSecret: string;
  code: string;
}

/**
 * How an exchange ended, decided inside its transaction and acted on after it: tokens issued, or a
 * refusal (`reason` for the log; `revoked`: the code was reused and what it issued is revoked).
 */
type Outcome = { issued: TokenResponse } | { refused: string; appId: string; workspaceId?: string; revoked?: Revoked };

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

export interface CodeExchangeDeps extends ServiceContext {
  apps: AppsService;
  grants: Grants;
}

export function createCodeExchange(deps: CodeExchangeDeps) {
  const ctx: ServiceContext = deps;
  const { store, sealer, clock, logger } = ctx;
  const { apps } = deps;
  const nowIso = () => isoTime(clock.now());
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
  const issueDeps: IssueDeps = { sealer, clock, openBotToken };

  const DUMMY_SECRET = expectedSecret(newSecret(PREFIX.clientSecret));

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
    const expected = app ? apps.clientSecretOf(app) : DUMMY_SECRET;
    if (!matchesSecret(form.clientSecret, expected) || !app) throw invalidClient();
    const appId = app.id;
    if (!stored) return { refused: 'no such code (never issued, or forgotten after its expiry)', appId };
    if (stored.appId !== app.id) return { refused: 'the code was issued to another app', appId };
    const workspaceId = stored.workspaceId;
    if ('consumedAt' in stored)
      return {
        refused: 'the code was already exchanged (a reuse: what it issued is revoked)',
        appId,
        workspaceId,
        revoked: await revokeIssued(tx, stored, nowIso()),
      };
    if (stored.expiresAt <= clock.now()) {
      tx.delete(OAUTH_TABLES.codes, stored.id);
      return { refused: 'the code has expired', appId, workspaceId };
    }
    const withCode = relatedOf(tx, app, stored, { user: read[2], inst: read[3], az: read[4] });
    const related = withCode instanceof Promise ? await withCode : withCode;
    if (!related.user) return { refused: 'the user who granted the code no longer exists', appId, workspaceId };
    return { issued: await issue(tx, issueDeps, app, stored, related.user, related) };
  }

  /**
   * The user, installation and authorization of a code: as read with it when the code names the ids
   * this exchange derives (as grants.installationOf/authorizationOf make them), else read here (a code
   * minted before codes named them). Answered at once in the first case, without a promise to wait for.
   */
  function relatedOf(
    tx: Transaction,
    app: AppRecord,
    rec: CodeRecord,
    withCode: Pick<Related, 'user' | 'inst' | 'az'>,
  ): Related | Promise<Related> {
    const azId = authorizationId(app.id, rec.workspaceUserId);
    const instId = installationId(app.id, rec.workspaceId);
    if (rec.installationId === instId && rec.authorizationId === azId)
      return { user: withCode.user, inst: withCode.inst, az: withCode.az, instId, azId };
    return readRelated(tx, rec, instId, azId);
  }

  async function readRelated(tx: Transaction, rec: CodeRecord, instId: string, azId: string): Promise<Related> {
    const [user, inst, az] = await tx.getMany(
      [
        { table: IDENTITY_TABLES.workspaceUsers, id: rec.workspaceUserId, peek: true },
        { table: OAUTH_TABLES.installations, id: instId },
        { table: OAUTH_TABLES.authorizations, id: azId },
      ],
      { shared: true },
    );
    return { user, inst, az, instId, azId };
  }

  return { exchange };
}

export type CodeExchange = ReturnType<typeof createCodeExchange>;
