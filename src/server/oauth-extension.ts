/** Issue 3 as a daemon extension: consent screen, token endpoint, app-token calls, grant API. */
import type { Extension } from './start.js';
import { MGMT_BASE } from './routes/management.js';
import { createOAuthService, OAUTH_SHARED_KEY, type OAuthService } from '../services/oauth.js';
import { createWebSessions, type WebSessions } from '../services/oauth-sessions.js';
import { createTokenHandler, installTokenFastPath, oauthTokenRoutes } from './routes/oauth.js';
import { oauthConsentRoutes } from './routes/oauth-consent.js';
import { oauthManagementRoutes } from './routes/oauth-management.js';

const SWEEP_MS = 60_000;

export function oauthExtension(): Extension {
  let oauth: OAuthService | undefined;
  let sessions: WebSessions | undefined;
  let timer: NodeJS.Timeout | undefined;
  let tokenHandler: ReturnType<typeof createTokenHandler> | undefined;
  return {
    routes(deps) {
      oauth = createOAuthService(deps.ctx, { identity: deps.identity, apps: deps.apps });
      sessions = createWebSessions(deps.ctx.clock);
      deps.shared.set(OAUTH_SHARED_KEY, oauth);
      return [
        { router: oauthTokenRoutes(deps, oauth, (tokenHandler = createTokenHandler(deps, oauth))) },
        { router: oauthConsentRoutes(deps, oauth, sessions) },
        { path: MGMT_BASE, router: oauthManagementRoutes(deps, oauth) },
      ];
    },
    start(deps, server) {
      // the token endpoint is served ahead of express: same handler, without express's per-request cost
      if (tokenHandler) installTokenFastPath(server, tokenHandler);
      timer = setInterval(() => {
        sessions?.sweep();
        oauth?.sweep().catch((e) => deps.ctx.logger.error('sweeping expired codes failed', { error: String(e) }));
      }, SWEEP_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
