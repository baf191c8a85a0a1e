/**
 * What the OAuth records say about an app in a workspace: its installation, who authorized
 * it, which tokens it holds. Tokens and codes are keyed by the sha256 digest of their value;
 * installations and authorizations by ids derived from (app, workspace) and (app, user), so
 * those are single gets. The rest are store.find on indexed fields (src/store/indexes.ts):
 * nothing is kept in memory, so every daemon sharing the store sees the same grants.
 */
import type { Store } from '../../store/types.js';
import type { AppsService } from '../apps.js';
import {
  OAUTH_TABLES,
  authorizationId,
  installationId,
  type AuthorizationRecord,
  type InstallationRecord,
  type TokenRecord,
} from '../../model/oauth.js';

export interface GrantsDeps {
  store: Store;
  apps: AppsService;
}

export function createGrants(deps: GrantsDeps) {
  const { store, apps } = deps;
  function installationOf(appId: string, workspaceId: string): Promise<InstallationRecord | undefined> {
    return store.get(OAUTH_TABLES.installations, installationId(appId, workspaceId));
  }

  /** Every token the app holds in the workspace (found by app, then narrowed to the workspace). */
  async function tokensOf(appId: string, workspaceId: string): Promise<TokenRecord[]> {
    return (await store.find(OAUTH_TABLES.tokens, 'appId', appId)).filter((t) => t.workspaceId === workspaceId);
  }

  return {
    installationOf,
    tokensOf,
    authorizationOf(appId: string, workspaceUserId: string): Promise<AuthorizationRecord | undefined> {
      return store.get(OAUTH_TABLES.authorizations, authorizationId(appId, workspaceUserId));
    },
    /** Ids of the apps installed in the workspace. */
    async installedApps(workspaceId: string): Promise<string[]> {
      return (await store.find(OAUTH_TABLES.installations, 'workspaceId', workspaceId)).map((inst) => inst.appId);
    },
    /** Workspace users who authorized the app in the workspace (delivery uses it for events). */
    async authorizedUsers(appId: string, workspaceId: string): Promise<string[]> {
      return (await store.find(OAUTH_TABLES.authorizations, 'appId', appId))
        .filter((a) => a.workspaceId === workspaceId)
        .map((a) => a.workspaceUserId);
    },
    /** Ids of every token the app holds in the workspace. */
    async tokenIds(appId: string, workspaceId: string): Promise<string[]> {
      return (await tokensOf(appId, workspaceId)).map((t) => t.id);
    },
    /** GET …/apps/authorizations: the apps a user has authorized. */
    async authorizationsOf(workspaceUserId: string) {
      // find answers in no order: oldest first, as before
      const azs = (await store.find(OAUTH_TABLES.authorizations, 'workspaceUserId', workspaceUserId)).sort((a, b) =>
        a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0,
      );
      const rows = await Promise.all(
        azs.map(async (az) => {
          const [app, inst] = await Promise.all([apps.byId(az.appId), installationOf(az.appId, az.workspaceId)]);
          if (!app) return undefined;
          return {
            app: { id: app.id, name: app.manifest.name, displayName: app.manifest.displayName },
            workspaceId: az.workspaceId,
            workspaceUserId: az.workspaceUserId,
            userScopes: az.userScopes,
            botScopes: inst?.botTokenId ? inst.botScopes : [],
            ...(inst?.botUserId ? { botId: inst.botUserId } : {}),
            createdAt: az.createdAt,
            updatedAt: az.updatedAt,
          };
        }),
      );
      return rows.filter((r) => r !== undefined);
    },
  };
}

export type Grants = ReturnType<typeof createGrants>;
