/** The express app: every route of the daemon, mounted from the composed parts; no I/O of its own. */
import express from 'express';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/types.js';
import type { EgressPolicy } from '../delivery/egress.js';
import type { DeliveryLog } from '../delivery/log.js';
import { fetchManifest } from '../delivery/manifest-fetch.js';
import type { AppsService } from '../services/apps.js';
import type { DeliveriesService } from '../services/deliveries.js';
import type { IdentityService } from '../services/identity.js';
import type { LeadLogin } from '../services/lead-login.js';
import type { AppTokens } from '../services/oauth/app-tokens.js';
import type { AuthorizationRequests } from '../services/oauth/authorization-request.js';
import type { CodeSweep } from '../services/oauth/code-sweep.js';
import type { Grants } from '../services/oauth/grants.js';
import type { Revocation } from '../services/oauth/revocation.js';
import type { WebSessions } from '../services/oauth/web-sessions.js';
import type { SocketSessions } from '../services/socket-sessions.js';
import type { TriggerSources } from '../services/trigger-sources.js';
import type { createWorkspace } from '../services/workspace/workspace.js';
import { accessLog, errorHandler, notFoundHandler, requestId } from './middleware.js';
import { appsRoutes, type AppsRoutesDeps } from './routes/apps.js';
import { MGMT_BASE, requireAuth, requireSelf } from './routes/auth.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { actAsRoutes, identityRoutes } from './routes/identity.js';
import { leadRoutes, loginCodeRoutes } from './routes/lead.js';
import { appCallRoutes } from './routes/app-calls.js';
import { oauthConsentRoutes } from './routes/oauth-consent.js';
import { oauthManagementRoutes } from './routes/oauth-management.js';
import { socketRoutes } from './routes/socket.js';
import { peopleRoutes } from './routes/people.js';
import { peopleManageRoutes } from './routes/people-manage.js';
import { platformGate } from './routes/platform-gate.js';
import { platformCallRoutes } from './routes/platform-calls.js';
import { platformChannelRoutes } from './routes/platform-channels.js';
import { platformFileRoutes } from './routes/platform-files.js';
import { platformMessageRoutes } from './routes/platform-messages.js';
import { platformScheduledRoutes } from './routes/platform-scheduled.js';
import { platformUserRoutes } from './routes/platform-users.js';
import { signInLinkRoutes, webRoutes } from './routes/web.js';
import { consoleRoutes } from './routes/console/index.js';
import { createRecordings } from './recordings.js';
import { recordingRoutes } from './routes/recordings.js';

/** The composed parts the routes are mounted from (compose.ts builds them, and this app with them). */
export interface HttpAppParts {
  config: Config;
  clock: Clock;
  logger: Logger;
  store: Store;
  identity: IdentityService;
  apps: AppsService;
  leads: LeadLogin;
  oauth: {
    grants: Grants;
    requests: AuthorizationRequests;
    codes: Pick<CodeSweep, 'codeState'>;
    appTokens: AppTokens;
    revocation: Revocation;
    webSessions: WebSessions;
  };
  egress: EgressPolicy;
  delivery: { log: Pick<DeliveryLog, 'onChange'> };
  deliveries: DeliveriesService;
  triggerSources: TriggerSources;
  socket: { sessions: SocketSessions; status: AppsRoutesDeps['socketStatus'] };
  workspace: ReturnType<typeof createWorkspace>;
}

export function createHttpApp(daemon: HttpAppParts, baseUrl: () => string) {
  const { config, clock, logger, identity, apps, oauth, store } = daemon;
  const socketStatus = daemon.socket.status;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(logger));
  app.get('/healthz', (_req, res) => {
    const health = daemon.store.health();
    if (!health.ok) res.status(503).json({ ok: false, reason: health.reason });
    else res.json({ ok: true });
  });

  const web = { config, identity, apps, webSessions: oauth.webSessions, baseUrl };
  // recordings of conversations made into suites (docs/testing.md): the console's and the API's
  const recordings = createRecordings({
    store,
    clock,
    onMessageChange: daemon.workspace.onMessageChange,
    onDeliveryChange: daemon.delivery.log.onChange,
    ownerOf: identity.ownerOf,
    appName: async (appId) => (await apps.byId(appId))?.manifest.displayName,
  });
  // Who the caller is (login, workspaces, users: the two info calls answer without an Authtoken), then
  // the management calls, the most frequent, ahead of the routers for other paths.
  app.use(identityRoutes({ config, clock, store, identity }));
  // Management calls: the caller's own workspace user, authenticated once for every router below.
  app.use(
    MGMT_BASE,
    requireAuth(identity),
    requireSelf(),
    appsRoutes({
      config,
      clock,
      store,
      apps,
      fetchManifest: (url) => fetchManifest(url, daemon.egress),
      socketStatus,
    }),
    deliveryRoutes({ config, clock, store, deliveries: daemon.deliveries, sources: daemon.triggerSources }),
    signInLinkRoutes(web),
    loginCodeRoutes({ leads: daemon.leads }),
    actAsRoutes({ config, clock, store, identity, logger }),
    oauthManagementRoutes({
      identity,
      requests: oauth.requests,
      grants: oauth.grants,
      revocation: oauth.revocation,
      appUrl: () => (config.appUrl ?? baseUrl()).replace(/\/+$/, ''),
      codeState: oauth.codes.codeState,
      bodyLimitBytes: config.bodyLimitBytes,
    }),
    peopleRoutes({ config, clock, store, workspace: daemon.workspace, deliveries: daemon.deliveries }),
    peopleManageRoutes({ config, clock, store, workspace: daemon.workspace }),
    recordingRoutes({ recordings, baseUrl: () => config.publicUrl ?? baseUrl() }),
  );
  app.use(appCallRoutes({ appTokens: oauth.appTokens, revocation: oauth.revocation, logger }));
  // The platform API apps call with their tokens: one gate (auth, per-app and per-user limits) for all of it.
  const platform = platformGate({ appTokens: oauth.appTokens, clock, store, limits: config.platformRateLimits });
  const ws = daemon.workspace;
  app.use(platformScheduledRoutes({ platform, scheduled: ws.scheduled, bodyLimitBytes: config.bodyLimitBytes }));
  app.use(
    platformMessageRoutes({
      platform,
      messages: ws.messages,
      reactions: ws.reactions,
      search: ws.search,
      bodyLimitBytes: config.bodyLimitBytes,
    }),
  );
  app.use(platformChannelRoutes({ platform, channels: ws.channels, bodyLimitBytes: config.bodyLimitBytes }));
  app.use(platformFileRoutes({ platform, files: ws.files, identity, bodyLimitBytes: config.bodyLimitBytes }));
  app.use(
    platformUserRoutes({ platform, users: ws.users, profiles: ws.profiles, bodyLimitBytes: config.bodyLimitBytes }),
  );
  app.use(platformCallRoutes({ platform, calls: ws.calls }));
  app.use(
    oauthConsentRoutes({
      config,
      clock,
      store,
      logger,
      identity,
      requests: oauth.requests,
      webSessions: oauth.webSessions,
    }),
  );
  app.use(socketRoutes({ apps, sessions: daemon.socket.sessions, baseUrl }));
  app.use(webRoutes(web));
  // The official CLI's login (no Authtoken; its paths are not under the management base path).
  app.use(leadRoutes({ config, clock, store, leads: daemon.leads }));
  // The web console (GET / and /console/…), for browsers signed in with the session cookie.
  const webConsole = consoleRoutes({
    config,
    clock,
    logger,
    store,
    identity,
    webSessions: oauth.webSessions,
    apps,
    grants: oauth.grants,
    revocation: oauth.revocation,
    deliveries: daemon.deliveries,
    onDeliveryChange: daemon.delivery.log.onChange,
    socketStatus,
    bodyLimitBytes: config.bodyLimitBytes,
    allowInsecureRedirects: config.allowInsecureRedirects,
    workspace: daemon.workspace,
    recordings,
  });
  app.use(webConsole.router);
  app.use(notFoundHandler());
  app.use(errorHandler(logger));
  // shutdown ends the console's live streams first: an open page must not hold the stop
  return Object.assign(app, {
    endLiveStreams: () => {
      webConsole.endStreams();
      recordings.close();
    },
  });
}
