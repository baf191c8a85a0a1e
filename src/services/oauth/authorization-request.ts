/**
 * The authorization request (docs/protocol.md §3, docs/security.md §1 and §3): validation
 * shared by the consent screen and the grant call, what the consent page must say, and the
 * decision — Allow mints a code bound to app, user, workspace, scopes and redirect URL;
 * Cancel sends the user back with `error=access_denied`. Never redirects an error.
 */
import { stringOr } from '../../unknown-values.js';
import { newSecret, PREFIX, sha256 } from '../../crypto.js';
import { forbidden, invalidRedirectUrl, invalidRequest, invalidScope, unknownClient } from '../../errors.js';
import { matchRedirect, withParams } from '../../oauth/redirect-urls.js';
import type { ServiceContext } from '../context.js';
import type { AppsService } from '../apps.js';
import type { IdentityService } from '../identity.js';
import type { AppRecord, WorkspaceUserRecord } from '../../model/identity.js';
import type { Grants } from './grants.js';
import { authorizationId, installationId } from '../../model/oauth.js';
import { OAUTH_TABLES, sweepMinuteOf, type CodeRecord } from '../../model/oauth.js';

/** Codes never live longer than this, whatever the configuration says (docs/security.md §2). */
const MAX_CODE_TTL_SECONDS = 600;

/**
 * A query parameter as it arrives: its value, or its values when the key is repeated. A repeated key is
 * refused as that parameter missing or malformed, in the order the parameters are checked (validate).
 */
export type QueryValue = string | string[];

/** The authorization request's parameters, as the consent link's query (or the grant call's) gives them. */
export interface AuthRequestParams {
  clientId?: QueryValue;
  redirectUrl?: QueryValue;
  scopes?: QueryValue;
  isReinstall?: QueryValue;
  state?: QueryValue;
  defaultWorkspaceId?: QueryValue;
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
  params: {
    clientId: string;
    redirectUrl: string;
    scopes: string;
    isReinstall?: string;
    state?: string;
    defaultWorkspaceId?: string;
  };
}

const STATE_RE = /^[\x21-\x7e]{1,512}$/;
const ID_RE = /^[A-Za-z0-9_-]{1,100}$/;

/** "users:read,bot:chat:write" → user and bot scopes, each in the app's manifest, user scopes first. */
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
    } else if (inBot) problems.push(`user scope "${s}" comes after the bot scopes (list user scopes first)`);
    else if (!m.scopes.userScopes.includes(s)) problems.push(`user scope "${s}" is not in the app's manifest`);
    else if (!userScopes.includes(s)) userScopes.push(s);
  }
  if (problems.length) throw invalidScope(`The scopes are not acceptable: ${problems.slice(0, 3).join('; ')}.`);
  // An app without a bot has no bot to grant scopes to; the SDK still lists them, so they are ignored.
  return { userScopes, botScopes: m.bot ? botScopes : [] };
}

export interface AuthorizationRequestsDeps extends ServiceContext {
  apps: AppsService;
  identity: IdentityService;
  grants: Grants;
}

export function createAuthorizationRequests(deps: AuthorizationRequestsDeps) {
  const ctx: ServiceContext = deps;
  const { store, clock, logger } = ctx;
  const { apps, identity, grants } = deps;
  const codeTtlMs = () => Math.min(Math.max(ctx.config.codeTtlSeconds, 1), MAX_CODE_TTL_SECONDS) * 1000;

  /** clientId, then redirectUrl (docs/security.md §1 M1–M6), then scopes; throws, never redirects. */
  async function validate(q: AuthRequestParams): Promise<AuthRequest> {
    // each parameter's one value: a repeated one arrives as a list and reads as absent
    const clientId = stringOr(q.clientId);
    if (!clientId) throw invalidRequest('The clientId parameter is required.');
    const app = await apps.byId(clientId);
    if (!app) throw unknownClient();
    const requested = stringOr(q.redirectUrl);
    if (!requested) throw invalidRedirectUrl('The redirectUrl parameter is required.');
    const match = matchRedirect(requested, app.manifest.redirectUrls ?? []);
    if (!match.ok) throw invalidRedirectUrl(`The redirectUrl is not acceptable: ${match.reason}.`);
    const scopes = stringOr(q.scopes);
    if (scopes === undefined) throw invalidScope('The scopes parameter is required.');
    const { userScopes, botScopes } = parseScopes(app, scopes);
    const isReinstall = stringOr(q.isReinstall);
    if (q.isReinstall !== undefined && isReinstall !== 'true' && isReinstall !== 'false')
      throw invalidRequest('isReinstall must be true or false.');
    const state = stringOr(q.state);
    if (q.state !== undefined && (state === undefined || !STATE_RE.test(state)))
      throw invalidRequest('state must be 1 to 512 printable ASCII characters.');
    const dws = stringOr(q.defaultWorkspaceId);
    if (q.defaultWorkspaceId !== undefined && (dws === undefined || !ID_RE.test(dws)))
      throw invalidRequest('defaultWorkspaceId is not a workspace id.');
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

  /** A socket-mode app can only be authorized by its owner (it is a development set-up). */
  async function assertMayAuthorize(app: AppRecord, user: WorkspaceUserRecord): Promise<void> {
    if (!app.manifest.socketMode) return;
    const owner = await identity.userRecord(app.ownerId);
    if (!owner || owner.accountId !== user.accountId)
      throw forbidden('This app runs in socket mode (development only); only its owner can authorize it.');
  }

  /** What the consent page must tell the user beyond the requested scopes. */
  async function consentContext(req: AuthRequest, workspaceId: string) {
    const inst = await grants.installationOf(req.app.id, workspaceId);
    const installedBot = inst?.botTokenId ? inst.botScopes : undefined;
    return {
      installed: !!inst,
      /** Bot scopes this grant adds; without isReinstall an existing bot keeps its scopes and these are not granted. */
      newBotScopes: installedBot ? req.botScopes.filter((s) => !installedBot.includes(s)) : req.botScopes,
      botScopesGranted: !installedBot || req.reinstall,
    };
  }

  /** Allow: mint a code bound to app, user, workspace, scopes and redirect URL. */
  async function grant(req: AuthRequest, user: WorkspaceUserRecord): Promise<{ code: string; redirectUrl: string }> {
    await assertMayAuthorize(req.app, user);
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
      createdAt: new Date(clock.now()).toISOString(),
    };
    rec.sweepMinute = sweepMinuteOf(rec.expiresAt);
    rec.installationId = installationId(req.app.id, user.workspaceId);
    rec.authorizationId = authorizationId(req.app.id, user.id);
    await store.transaction(async (tx) => tx.put(OAUTH_TABLES.codes, rec.id, rec));
    logger.info('authorization granted', {
      appId: req.app.id,
      workspaceId: user.workspaceId,
      workspaceUserId: user.id,
      reinstall: req.reinstall,
    });
    return { code, redirectUrl: withParams(req.redirectUrl, { code, state: req.state }) };
  }

  /** Cancel: where the user goes back to. */
  const denyLocation = (req: AuthRequest): string =>
    withParams(req.redirectUrl, { error: 'access_denied', state: req.state });

  return { validate, assertMayAuthorize, consentContext, grant, denyLocation };
}

export type AuthorizationRequests = ReturnType<typeof createAuthorizationRequests>;
