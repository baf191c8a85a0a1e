/**
 * Unauthorize and uninstall (docs/protocol.md §4): the tokens concerned stop working in the
 * same commit that records APP_UNAUTHORIZED or APP_UNINSTALLED in the events outbox, which
 * the delivery worker drains to the app.
 */
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import type { Transaction } from '../../store/types.js';
import type { ServiceContext } from '../context.js';
import type { AppsService } from '../apps.js';
import type { IdentityService, Principal } from '../identity.js';
import { IDENTITY_TABLES } from '../../model/identity.js';
import type { TokenOwner } from './app-tokens.js';
import type { Grants } from './grants.js';
import { authorizationId, installationId } from '../../model/oauth.js';
import type { OutboxWriter } from '../outbox-writer.js';
import { OAUTH_TABLES, type TokenRecord } from '../../model/oauth.js';

export interface RevocationDeps extends ServiceContext {
  apps: AppsService;
  identity: IdentityService;
  grants: Grants;
  outbox: OutboxWriter;
}

export function createRevocation(deps: RevocationDeps) {
  const ctx: ServiceContext = deps;
  const { store, clock, logger } = ctx;
  const { apps, identity, grants, outbox } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

  /**
   * Every token the app holds in the workspace, looked at only (found by app, then narrowed to the
   * workspace): deleting one that is already gone changes nothing, so none is expected.
   */
  async function tokensIn(tx: Transaction, appId: string, workspaceId: string): Promise<TokenRecord[]> {
    return (await tx.find(OAUTH_TABLES.tokens, 'appId', appId, { peek: true })).filter(
      (t) => t.workspaceId === workspaceId,
    );
  }

  /**
   * Tokens issued by an exchange that committed while a revocation was being read are not in what
   * it read: looked up again once the revocation is committed, and deleted too. An exchange that
   * commits later expected the installation or authorization the revocation deleted, so it conflicts.
   */
  async function sweepLeftovers(appId: string, workspaceId: string, which: (t: TokenRecord) => boolean): Promise<void> {
    await store.transaction(async (tx) => {
      for (const t of (await tokensIn(tx, appId, workspaceId)).filter(which)) tx.delete(OAUTH_TABLES.tokens, t.id);
    });
  }

  /** DELETE /v1/app/authorization: the user's tokens for this app stop working now. */
  async function unauthorize(owner: TokenOwner): Promise<void> {
    if (owner.kind !== 'user') throw invalidRequest('Unauthorize needs a user access token, not a bot token.');
    const mine = (t: TokenRecord) => t.kind === 'user' && t.workspaceUserId === owner.workspaceUserId;
    const azId = authorizationId(owner.appId, owner.workspaceUserId);
    const instId = installationId(owner.appId, owner.workspaceId);
    await store.transaction(async (tx) => {
      const [toks, [az, inst]] = await Promise.all([
        tokensIn(tx, owner.appId, owner.workspaceId),
        tx.getMany([
          { table: OAUTH_TABLES.authorizations, id: azId, peek: true },
          { table: OAUTH_TABLES.installations, id: instId, peek: true },
        ]),
      ]);
      for (const t of toks.filter(mine)) tx.delete(OAUTH_TABLES.tokens, t.id);
      if (az) tx.delete(OAUTH_TABLES.authorizations, az.id);
      tx.apply(
        outbox.appEvent(owner.appId, owner.workspaceId, 'APP_UNAUTHORIZED', [owner.workspaceUserId], {
          id: az?.id ?? azId,
          app: owner.appId,
          appInstallation: inst?.id ?? instId,
          workspaceUser: owner.workspaceUserId,
          workspace: owner.workspaceId,
          grantedScopes: [],
          accessGranted: false,
        }),
      );
    });
    logger.info('app unauthorized', {
      appId: owner.appId,
      workspaceId: owner.workspaceId,
      workspaceUserId: owner.workspaceUserId,
    });
    outbox.written();
    await sweepLeftovers(owner.appId, owner.workspaceId, mine);
  }

  /**
   * Uninstall from a workspace: every token of the app there stops working now. The installation
   * is expected as read: of two uninstalls at once, one answers 404 (as one after the other would).
   */
  async function uninstall(appId: string, workspaceId: string): Promise<void> {
    await store.transaction(async (tx) => {
      const [inst, azs, toks] = await Promise.all([
        tx.get(OAUTH_TABLES.installations, installationId(appId, workspaceId)),
        tx.find(OAUTH_TABLES.authorizations, 'appId', appId, { peek: true }),
        tokensIn(tx, appId, workspaceId),
      ]);
      if (!inst) throw notFound('Installation');
      const users = azs.filter((a) => a.workspaceId === workspaceId).map((a) => a.workspaceUserId);
      for (const t of toks) tx.delete(OAUTH_TABLES.tokens, t.id);
      for (const wu of users) tx.delete(OAUTH_TABLES.authorizations, authorizationId(appId, wu));
      tx.delete(OAUTH_TABLES.installations, inst.id);
      if (inst.botUserId && (await tx.get(IDENTITY_TABLES.workspaceUsers, inst.botUserId, { peek: true })))
        tx.delete(IDENTITY_TABLES.workspaceUsers, inst.botUserId);
      tx.apply(
        outbox.appEvent(appId, workspaceId, 'APP_UNINSTALLED', users, {
          id: inst.id,
          app: appId,
          workspace: workspaceId,
          installedBy: inst.installedBy,
          botUser: inst.botUserId ?? null,
          uninstalledAt: nowIso(),
        }),
      );
    });
    logger.info('app uninstalled', { appId, workspaceId });
    outbox.written();
    await sweepLeftovers(appId, workspaceId, () => true);
  }

  /** Management: uninstall by a member of the workspace who installed it, authorized it, or owns the app. */
  async function uninstallAs(p: Principal, appId: string, workspaceId: string): Promise<void> {
    const mine = await identity.membershipIn(p, workspaceId);
    const [app, inst] = await Promise.all([apps.byId(appId), grants.installationOf(appId, workspaceId)]);
    if (!app || !inst) throw notFound('Installation');
    const [owner, az] = await Promise.all([identity.userRecord(app.ownerId), grants.authorizationOf(appId, mine.id)]);
    const allowed = inst.installedBy === mine.id || !!az || owner?.accountId === mine.accountId;
    if (!allowed) throw forbidden('Only whoever installed or authorized the app, or its owner, can uninstall it.');
    await uninstall(appId, workspaceId);
  }

  return { unauthorize, uninstall, uninstallAs };
}

export type Revocation = ReturnType<typeof createRevocation>;
