import type { ServiceContext } from '../services/context.js';
import type { IdentityService } from '../services/identity.js';
import type { AppsService } from '../services/apps.js';

/** What route modules receive (no module-level state anywhere). */
export interface ServerDeps {
  ctx: ServiceContext;
  identity: IdentityService;
  apps: AppsService;
  /** The daemon's own base URL once it is listening (for URLs it hands out). */
  baseUrl: () => string;
  /**
   * Handles that one extension publishes for another (e.g. 'delivery' for socket mode,
   * 'oauth' for delivery). Each module exports a typed getter for its own key.
   */
  shared: Map<string, unknown>;
}
