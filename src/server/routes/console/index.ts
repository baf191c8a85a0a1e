/**
 * The web console, served by the daemon to signed-in browsers: the Apps pages
 * at / and /console/apps/…, the delivery inspector at /console/deliveries/…, its live stream at
 * /console/events, the workspace at /console/channels/…, the script at /console/console.js,
 * the workspace switcher and sign-out; and what a browser gets on a console path that is no page.
 */
import { Router } from 'express';
import type { Clock } from '../../../clock.js';
import type { Config } from '../../../config.js';
import type { Logger } from '../../../logger.js';
import type { AppsService } from '../../../services/apps.js';
import type { DeliveriesService, DeliveryRecord } from '../../../services/deliveries.js';
import type { IdentityService } from '../../../services/identity.js';
import type { WebSessions } from '../../../services/oauth/web-sessions.js';
import type { Grants } from '../../../services/oauth/grants.js';
import type { Revocation } from '../../../services/oauth/revocation.js';
import { consoleAppsRoutes } from './apps.js';
import { consoleBase, type Signed } from './common.js';
import { consoleDeliveryRoutes } from './deliveries.js';
import { consoleStaticFiles } from './static.js';
import { SCRIPT_PATH } from '../../pages/console/layout.js';
import { createPersonState, type PersonStateStore } from '../../person-state.js';
import { consoleWorkspaceRoutes, type ConsoleWorkspaceDeps } from './workspace.js';
import { consoleWorkspaceAppsRoutes } from './workspace-apps.js';
import { consoleManageRoutes } from './workspace-manage.js';
import { consoleNotFound } from './not-found.js';
import { consoleReactionRoutes } from './workspace-reactions.js';
import { consoleRecordingRoutes } from './recordings.js';
import type { Recordings } from '../../recordings.js';

export interface ConsoleRoutesDeps {
  config: Pick<Config, 'appUrl' | 'publicUrl'>;
  /** The live lists' cursors are moments of this clock. */
  clock: Clock;
  logger: Logger;
  /** Where the console keeps a person's notes and open views (any daemon may serve their next page). */
  store: PersonStateStore;
  identity: IdentityService;
  webSessions: WebSessions;
  apps: AppsService;
  grants: Pick<Grants, 'installationOf'>;
  revocation: Pick<Revocation, 'uninstallAs'>;
  deliveries: DeliveriesService;
  onDeliveryChange(listener: (rec: DeliveryRecord) => void): () => void;
  socketStatus(appId: string): Promise<{ connections: number; queuedEvents: number }>;
  bodyLimitBytes: number;
  allowInsecureRedirects: boolean;
  /** The local workspace, as the signed-in person uses it. */
  workspace: ConsoleWorkspaceDeps['workspace'];
  /** Recordings of conversations made into suites (docs/testing.md). */
  recordings?: Recordings;
}

export function consoleRoutes(deps: ConsoleRoutesDeps): { router: Router; endStreams(): void } {
  const { recordings } = deps;
  const member = async (id: string) => {
    const u = await deps.workspace.users.byId(id);
    return u && { id: u.id, name: u.name, workspaceId: u.workspaceId, ...(u.isBot ? { isBot: true } : {}) };
  };
  const base = consoleBase({
    ...deps,
    ...(recordings
      ? {
          recorder: {
            actingAs: (userId: string) => recordings.actingAs(userId),
            async shell(me: { id: string; workspaceId: string; name: string }, returnTo: string) {
              const on = await recordings.activeOf(me.id);
              const people = on
                ? (await deps.workspace.users.list({ workspaceId: me.workspaceId, userId: me.id }))
                    .filter((u) => !u.isAddonBot && u.id !== me.id)
                    .map((u) => ({ id: u.id, name: u.name }))
                : [];
              return {
                returnTo,
                people: [{ id: me.id, name: me.name }, ...people],
                ...(on
                  ? { on: { id: on.id, events: on.events, ...(on.actingAs ? { actingAs: on.actingAs.name } : {}) } }
                  : {}),
              };
            },
          },
        }
      : {}),
  });
  const r = Router();
  r.get(SCRIPT_PATH, consoleStaticFiles());
  const parsed = base.form('2kb', 5);
  r.post('/console/workspace', base.signedIn, parsed, base.csrf, base.chooseWorkspace);
  r.post('/console/sign-out', base.signedIn, parsed, base.csrf, base.signOut(false));
  r.post('/console/sign-out-everywhere', base.signedIn, parsed, base.csrf, base.signOut(true));
  r.use(
    consoleAppsRoutes({
      base,
      apps: deps.apps,
      grants: deps.grants,
      revocation: deps.revocation,
      socketStatus: deps.socketStatus,
      bodyLimitBytes: deps.bodyLimitBytes,
      allowInsecureRedirects: deps.allowInsecureRedirects,
    }),
  );
  const live = consoleDeliveryRoutes({
    base,
    clock: deps.clock,
    apps: deps.apps,
    deliveries: deps.deliveries,
    onDeliveryChange: deps.onDeliveryChange,
  });
  r.use(live.router);
  const state = createPersonState(deps.store, deps.clock);
  const people = consoleWorkspaceRoutes({
    base,
    workspace: deps.workspace,
    deliveries: deps.deliveries,
    state,
    clock: deps.clock,
    ...(recordings
      ? { onViewClosed: (s: Signed) => recordings.viewClosed(s.personId, s.principal.workspaceUserId) }
      : {}),
  });
  r.use(people.router);
  r.use(consoleWorkspaceAppsRoutes({ base, workspace: deps.workspace, deliveries: deps.deliveries, state }));
  r.use(consoleManageRoutes({ base, workspace: deps.workspace }));
  r.use(consoleReactionRoutes({ base, workspace: deps.workspace }));
  if (recordings) r.use(consoleRecordingRoutes({ base, recordings, member }));
  r.use(consoleNotFound());
  return {
    router: r,
    endStreams() {
      live.endStreams();
      people.endStreams();
    },
  };
}
