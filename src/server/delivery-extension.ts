/** Issue 4 as a daemon extension: the delivery engine, its log, its routes and its worker. */
import path from 'node:path';
import type { Extension } from './start.js';
import { MGMT_BASE } from './routes/management.js';
import { deliveryRoutes } from './routes/deliveries.js';
import { createEgressPolicy } from '../delivery/egress.js';
import { createHttpTransport } from '../delivery/http-transport.js';
import { openDeliveryLog } from '../delivery/log.js';
import { createDeliveryEngine, DELIVERY_SHARED_KEY, type DeliveryEngine } from '../delivery/engine.js';
import { getOAuth } from '../services/oauth.js';

export function deliveryExtension(): Extension {
  let engine: DeliveryEngine | undefined;
  return {
    routes(deps) {
      const { ctx } = deps;
      const egress = createEgressPolicy(ctx.config);
      const http = createHttpTransport({ clock: ctx.clock, egress, maxResponseBytes: ctx.config.deliveryMaxResponseBytes });
      const log = openDeliveryLog({ dir: path.join(ctx.config.dataDir, 'deliveries'), maxBytes: ctx.config.deliveryLogMaxBytes, retentionDays: ctx.config.deliveryLogRetentionDays, clock: ctx.clock, logger: ctx.logger });
      const created = createDeliveryEngine({ ctx, apps: deps.apps, http, log, oauth: () => (deps.shared.has('oauth') ? getOAuth(deps) : undefined) });
      engine = created;
      deps.shared.set(DELIVERY_SHARED_KEY, created);
      return { path: MGMT_BASE, router: deliveryRoutes(deps, () => created, egress) };
    },
    start() {
      engine?.start();
    },
    async stop() {
      await engine?.stop();
    },
  };
}
