/**
 * The tokens apps hold (docs/protocol.md §4): a call is the app's when its `token` header is
 * a live user or bot token and its `x-app-token` is the same app's appKey.
 */
import { safeEqual, sha256 } from '../../crypto.js';
import { unauthenticated } from '../../errors.js';
import type { Store } from '../../store/types.js';
import type { AppsService } from '../apps.js';
import type { IdentityService } from '../identity.js';
import { OAUTH_TABLES } from '../../model/oauth.js';

export interface TokenOwner {
  appId: string;
  workspaceId: string;
  workspaceUserId: string;
  kind: 'user' | 'bot';
  scopes: string[];
}

export interface AppTokensDeps {
  store: Store;
  apps: AppsService;
  identity: IdentityService;
}

export function createAppTokens(deps: AppTokensDeps) {
  const { store, apps, identity } = deps;

  /**
   * The token's owner; 401 unless `appKey` is the key of the app the token belongs to. Reads the
   * store on every call (no cache): a token revoked on any daemon is refused by all at once.
   */
  async function authenticate(token: string | undefined, appKey: string | undefined): Promise<TokenOwner> {
    const rec = token && token.length <= 512 ? await store.get(OAUTH_TABLES.tokens, sha256(token)) : undefined;
    const app = rec ? await apps.byId(rec.appId) : undefined;
    if (!rec || !app || !appKey || !safeEqual(appKey, apps.secretsOf(app).appKey)) {
      throw unauthenticated('A valid token header and the x-app-token of the same app are required.');
    }
    return {
      appId: rec.appId,
      workspaceId: rec.workspaceId,
      workspaceUserId: rec.workspaceUserId,
      kind: rec.kind,
      scopes: rec.scopes,
    };
  }

  /** GET /oauth2/me: who the token acts as. */
  async function me(owner: TokenOwner) {
    const [ws, wu] = await Promise.all([
      identity.workspaceInfo(owner.workspaceId),
      identity.userInfo(owner.workspaceId, owner.workspaceUserId),
    ]);
    return { workspaceId: ws.id, workspaceName: ws.name, workspaceUserId: wu.id, workspaceUserName: wu.name };
  }

  return { authenticate, me };
}

export type AppTokens = ReturnType<typeof createAppTokens>;
