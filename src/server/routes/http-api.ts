/**
 * The JSON API's routes, every router's table with where it is mounted: what tools/openapi.mjs
 * describes in schemas/openapi.json, and what test/unit/openapi.test.ts compares with express's
 * real router stack. The console's HTML pages (routes/console/**) are not part of it.
 */
import { APP_ROUTES } from './apps.js';
import { MGMT_BASE } from './auth.js';
import { DELIVERY_ROUTES } from './deliveries.js';
import { APP_CALL_ROUTES } from './app-calls.js';
import { TOKEN_ROUTE } from './oauth-token.js';
import { CALL_ROUTES } from './platform-calls.js';
import { CHANNEL_ROUTES } from './platform-channels.js';
import { FILE_ROUTES } from './platform-files.js';
import { MESSAGE_ROUTES } from './platform-messages.js';
import { SCHEDULED_ROUTES } from './platform-scheduled.js';
import { USER_ROUTES } from './platform-users.js';
import { ACT_AS_ROUTES, IDENTITY_ROUTES } from './identity.js';
import { LEAD_ROUTES, LOGIN_CODE_ROUTES } from './lead.js';
import { OAUTH_MANAGEMENT_ROUTES } from './oauth-management.js';
import { PEOPLE_ROUTES } from './people.js';
import { PEOPLE_MANAGE_ROUTES } from './people-manage.js';
import { RECORDING_ROUTES } from './recordings.js';
import { route, type RouteSpec } from './route-table.js';
import { SOCKET_ROUTES } from './socket.js';
import { SIGN_IN_LINK_ROUTES } from './web.js';

/** GET /healthz, mounted by app.ts itself. */
const HEALTH_ROUTES = {
  health: route({
    method: 'get',
    path: '/healthz',
    summary: 'Whether the daemon can use its store: {ok: true}, or 503 with the reason',
    answers: { 200: '{ok: true}', 503: '{ok: false, reason}' },
    auth: 'none',
  }),
};

export interface RouterEntry {
  /** The group the description files its operations under. */
  tag: string;
  description: string;
  /** Where the router is mounted ('' at the root). */
  base: string;
  routes: Record<string, RouteSpec<unknown, unknown, unknown>>;
}

export const HTTP_API: RouterEntry[] = [
  { tag: 'health', description: 'The daemon itself', base: '', routes: HEALTH_ROUTES },
  {
    tag: 'identity',
    description: 'Login, workspaces and users (docs/protocol.md §2)',
    base: '',
    routes: IDENTITY_ROUTES,
  },
  { tag: 'lead-login', description: "The official CLI's login (docs/protocol.md §2.7)", base: '', routes: LEAD_ROUTES },
  { tag: 'identity', description: '', base: MGMT_BASE, routes: { ...ACT_AS_ROUTES, ...SIGN_IN_LINK_ROUTES } },
  { tag: 'lead-login', description: '', base: MGMT_BASE, routes: LOGIN_CODE_ROUTES },
  {
    tag: 'oauth-management',
    description: 'Grants, consent links, authorizations (docs/protocol.md §2–§3)',
    base: MGMT_BASE,
    routes: OAUTH_MANAGEMENT_ROUTES,
  },
  {
    tag: 'people',
    description: 'The workspace as a person uses it (docs/protocol.md §2.8)',
    base: MGMT_BASE,
    routes: { ...PEOPLE_ROUTES, ...PEOPLE_MANAGE_ROUTES },
  },
  {
    tag: 'recordings',
    description: 'Recordings made into suites for appreg test (docs/protocol.md §2.9)',
    base: MGMT_BASE,
    routes: RECORDING_ROUTES,
  },
  {
    tag: 'socket-mode',
    description: "Socket mode's connection URL (docs/protocol.md §6)",
    base: '',
    routes: SOCKET_ROUTES,
  },
  { tag: 'apps', description: 'App management (docs/protocol.md §2, §7)', base: MGMT_BASE, routes: APP_ROUTES },
  { tag: 'deliveries', description: 'Test deliveries (docs/protocol.md §5)', base: MGMT_BASE, routes: DELIVERY_ROUTES },
  {
    tag: 'oauth',
    description: 'The token endpoint (docs/protocol.md §3), served ahead of express',
    base: '',
    routes: { token: TOKEN_ROUTE },
  },
  {
    tag: 'app-calls',
    description: 'Calls apps make with their tokens (docs/protocol.md §4)',
    base: '',
    routes: APP_CALL_ROUTES,
  },
  {
    tag: 'platform-messages',
    description: 'The platform API: messages (docs/protocol.md §9.2)',
    base: '',
    routes: MESSAGE_ROUTES,
  },
  {
    tag: 'platform-scheduled',
    description: 'The platform API: scheduled messages (docs/protocol.md §9.2)',
    base: '',
    routes: SCHEDULED_ROUTES,
  },
  {
    tag: 'platform-channels',
    description: 'The platform API: channels (docs/protocol.md §9.3)',
    base: '',
    routes: CHANNEL_ROUTES,
  },
  {
    tag: 'platform-users',
    description: 'The platform API: the workspace, users, status, home views (docs/protocol.md §9.4)',
    base: '',
    routes: USER_ROUTES,
  },
  {
    tag: 'platform-calls',
    description: 'The platform API: calls (docs/protocol.md §9.4)',
    base: '',
    routes: CALL_ROUTES,
  },
  {
    tag: 'platform-files',
    description: 'The platform API: files (docs/protocol.md §9.7)',
    base: '',
    routes: FILE_ROUTES,
  },
];
