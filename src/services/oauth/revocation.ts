/**
 * Unauthorize and uninstall (docs/protocol.md §4): the tokens concerned stop working in the
 * same commit that records APP_UNAUTHORIZED or APP_UNINSTALLED in the events outbox, which
 * the delivery worker drains to the app.
 */
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import { StoreConflict, type Change } from '../../store/types.js';
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
   * Tokens issued by an exchange that committed while a revocation was being read are not in what
   * it read: looked up again once the revocation is committed, and deleted too. An exchange that
   * commits later expected the installation or authorization the revocation deleted, so it conflicts.
   */
  async function sweepLeftovers(appId: string, workspaceId: string, which: (t: TokenRecord) => boolean): Promise<void> {
    const left = (await grants.tokensOf(appId, workspaceId)).filter(which);
    if (left.length) await grants.commit(left.map((t) => ({ table: OAUTH_TABLES.tokens, id: t.id, value: null })));
  }

  /** DELETE /v1/app/authorization: the user's tokens for this app stop working now. */
  async function unauthorize(owner: TokenOwner): Promise<void> {
    if (owner.kind !== 'user') throw invalidRequest('Unauthorize needs a user access token, not a bot token.');
    const mine = (t: TokenRecord) => t.kind === 'user' && t.workspaceUserId === owner.workspaceUserId;
    const [toks, az, inst] = await Promise.all([
      grants.tokensOf(owner.appId, owner.workspaceId),
      grants.authorizationOf(owner.appId, owner.workspaceUserId),
      grants.installationOf(owner.appId, owner.workspaceId),
    ]);
    const changes: Change[] = toks.filter(mine).map((t) => ({ table: OAUTH_TABLES.tokens, id: t.id, value: null }));
    if (az) changes.push({ table: OAUTH_TABLES.authorizations, id: az.id, value: null });
    changes.push(
      outbox.appEvent(owner.appId, owner.workspaceId, 'APP_UNAUTHORIZED', [owner.workspaceUserId], {
        id: az?.id ?? authorizationId(owner.appId, owner.workspaceUserId),
        app: owner.appId,
        appInstallation: inst?.id ?? installationId(owner.appId, owner.workspaceId),
        workspaceUser: owner.workspaceUserId,
        workspace: owner.workspaceId,
        grantedScopes: [],
        accessGranted: false,
      }),
    );
    logger.info('app unauthorized', {
      appId: owner.appId,
      workspaceId: owner.workspaceId,
      workspaceUserId: owner.workspaceUserId,
    });
    await grants.commit(changes);
    outbox.written();
    await sweepLeftovers(owner.appId, owner.workspaceId, mine);
  }

  /** Uninstall from a workspace: every token of the app there stops working now. */
  async function uninstall(appId: string, workspaceId: string): Promise<void> {
    const [inst, users, toks] = await Promise.all([
      grants.installationOf(appId, workspaceId),
      grants.authorizedUsers(appId, workspaceId),
      grants.tokensOf(appId, workspaceId),
    ]);
    if (!inst) throw notFound('Installation');
    const changes: Change[] = toks.map((t) => ({ table: OAUTH_TABLES.tokens, id: t.id, value: null }));
    for (const wu of users)
      changes.push({ table: OAUTH_TABLES.authorizations, id: authorizationId(appId, wu), value: null });
    changes.push({ table: OAUTH_TABLES.installations, id: inst.id, value: null });
    if (inst.botUserId && (await store.get(IDENTITY_TABLES.workspaceUsers, inst.botUserId)))
      changes.push({ table: IDENTITY_TABLES.workspaceUsers, id: inst.botUserId, value: null });
    changes.push(
      outbox.appEvent(appId, workspaceId, 'APP_UNINSTALLED', users, {
        id: inst.id,
        app: appId,
        workspace: workspaceId,
        installedBy: inst.installedBy,
        botUser: inst.botUserId ?? null,
        uninstalledAt: nowIso(),
      }),
    );
    logger.info('app uninstalled', { appId, workspaceId });
    // expects the installation as read: of two uninstalls at once, one answers 404 (as one after the other would)
    try {
      await grants.commit(changes, [{ table: OAUTH_TABLES.installations, id: inst.id, value: inst }]);
    } catch (e) {
      if (e instanceof StoreConflict) return uninstall(appId, workspaceId);
      throw e;
    }
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
