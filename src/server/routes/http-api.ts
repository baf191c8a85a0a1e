/**
 * The JSON API's routes, every router's table with where it is mounted: what tools/openapi.mjs
 * describes in schemas/openapi.json, and what test/unit/openapi.test.ts compares with express's
 * real router stack. The console's HTML pages (routes/console/**) are not part of it.
 */
import { APP_ROUTES } from './apps.js';
import { MGMT_BASE } from './auth.js';
import { DELIVERY_ROUTES } from './deliveries.js';
import { APP_CALL_ROUTES, TOKEN_ROUTE } from './oauth.js';
import type { RouteSpec } from './route-table.js';

export interface RouterEntry {
  /** The group the description files its operations under. */
  tag: string;
  description: string;
  /** Where the router is mounted ('' at the root). */
  base: string;
  routes: Record<string, RouteSpec<unknown, unknown, unknown>>;
}

export const HTTP_API: RouterEntry[] = [
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
];
