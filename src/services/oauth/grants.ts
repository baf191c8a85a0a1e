/**
 * What the OAuth records say about an app in a workspace: its installation, who authorized
 * it, which tokens it holds. Tokens and codes are keyed by the sha256 digest of their value,
 * so the store's own map is the digest → record index; the two secondary indexes here
 * (tokens and authorized users per app+workspace) live in memory, are rebuilt from the
 * store on start, and are kept in step by `commit`.
 */
import { PREFIX, sha256 } from '../../crypto.js';
import type { Change, Store } from '../../store/types.js';
import type { AppsService } from '../apps.js';
import { OT, type AuthorizationRecord, type InstallationRecord, type TokenRecord } from './records.js';

export const installationId = (appId: string, workspaceId: string) => `${PREFIX.installation}_${sha256(`${appId}|${workspaceId}`).slice(0, 27)}`;
export const authorizationId = (appId: string, workspaceUserId: string) => `${PREFIX.authorization}_${sha256(`${appId}|${workspaceUserId}`).slice(0, 27)}`;
const pairKey = (appId: string, workspaceId: string) => `${appId}|${workspaceId}`;

const indexed = (table: string) => table === OT.tokens || table === OT.authorizations;

export function createGrants(store: Store, apps: AppsService) {
  const tokensByPair = new Map<string, Set<string>>();
  const usersByPair = new Map<string, Set<string>>();

  function index(table: string, rec: object, add: boolean) {
    const [m, k, v] =
      table === OT.tokens
        ? [tokensByPair, pairKey((rec as TokenRecord).appId, (rec as TokenRecord).workspaceId), (rec as TokenRecord).id]
        : [usersByPair, pairKey((rec as AuthorizationRecord).appId, (rec as AuthorizationRecord).workspaceId), (rec as AuthorizationRecord).workspaceUserId];
    let s = m.get(k);
    if (add) {
      if (!s) m.set(k, (s = new Set()));
      s.add(v);
    } else if (s && s.delete(v) && s.size === 0) m.delete(k);
  }
  for (const t of store.values<TokenRecord>(OT.tokens)) index(OT.tokens, t, true);
  for (const a of store.values<AuthorizationRecord>(OT.authorizations)) index(OT.authorizations, a, true);
  // every change applied to memory, the rollback of a commit that could not be written included
  store.observe((table, _id, before, after) => {
    if (!indexed(table)) return;
    if (before) index(table, before, false);
    if (after) index(table, after, true);
  });

  function installationOf(appId: string, workspaceId: string): InstallationRecord | undefined {
    return store.get<InstallationRecord>(OT.installations, installationId(appId, workspaceId));
  }

  return {
    installationOf,
    /** store.commit; memory and the indexes (kept through store.observe) change before the returned promise is made. */
    commit: (changes: Change[]): Promise<void> => store.commit(changes),
    authorizationOf(appId: string, workspaceUserId: string): AuthorizationRecord | undefined {
      return store.get<AuthorizationRecord>(OT.authorizations, authorizationId(appId, workspaceUserId));
    },
    /** Ids of the apps installed in the workspace. */
    installedApps(workspaceId: string): string[] {
      const out: string[] = [];
      for (const inst of store.values<InstallationRecord>(OT.installations)) if (inst.workspaceId === workspaceId) out.push(inst.appId);
      return out;
    },
    /** Workspace users who authorized the app in the workspace (delivery uses it for events). */
    authorizedUsers(appId: string, workspaceId: string): string[] {
      return [...(usersByPair.get(pairKey(appId, workspaceId)) ?? [])];
    },
    /** Ids of every token the app holds in the workspace. */
    tokenIds(appId: string, workspaceId: string): string[] {
      return [...(tokensByPair.get(pairKey(appId, workspaceId)) ?? [])];
    },
    /** GET …/apps/authorizations: the apps a user has authorized. */
    authorizationsOf(workspaceUserId: string) {
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
    },
  };
}

export type Grants = ReturnType<typeof createGrants>;
