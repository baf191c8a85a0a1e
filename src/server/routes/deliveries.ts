/** Deliveries under the management base path: trigger, list, show, replay, signature probe (docs/protocol.md §5). */
import { Router, type Request } from 'express';
import { invalidRequest } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { DeliveriesService, TriggerInput } from '../../services/deliveries.js';
import type { TriggerSources } from '../../services/trigger-sources.js';
import { jsonBody, rateLimit, type HitCounter } from '../middleware.js';
import { authed, principalOf } from './auth.js';

export interface DeliveryRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites'>;
  clock: Clock;
  store: HitCounter;
  deliveries: DeliveriesService;
  /** Makes a test block interaction's message or view real before it is sent. */
  sources: TriggerSources;
}

function triggerInput(body: unknown): TriggerInput {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw invalidRequest('The body must be a JSON object with appId and kind.');
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== 'string')
    throw invalidRequest('kind is required.', [{ pointer: '/kind', message: 'is required' }]);
  if (b.view !== undefined && (typeof b.view !== 'object' || b.view === null || Array.isArray(b.view)))
    throw invalidRequest('view must be an object.');
  if (b.payload !== undefined && (typeof b.payload !== 'object' || b.payload === null || Array.isArray(b.payload)))
    throw invalidRequest('payload must be an object.');
  return b as unknown as TriggerInput;
}

export function deliveryRoutes(deps: DeliveryRoutesDeps): Router {
  const { deliveries, config } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(config.bodyLimitBytes);
  const writes = rateLimit({
    perMinute: config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `deliveries-writes|${principalOf(res).workspaceUserId}`,
  });
  const id = (req: Request) => String(req.params.deliveryId);

  r.post(
    '/deliveries',
    writes,
    body,
    authed(async (req, res, p) =>
      res.status(201).json(await deliveries.trigger(p, await deps.sources.prepare(p, triggerInput(req.body)))),
    ),
  );
  r.post(
    '/deliveries/probe-signature',
    writes,
    body,
    authed(async (req, res, p) => res.json(await deliveries.probeSignature(p, triggerInput(req.body)))),
  );
  r.get(
    '/deliveries',
    authed(async (req, res, p) => {
      const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
        throw invalidRequest('limit must be an integer from 1 to 1000.');
      const appId = typeof req.query.appId === 'string' && req.query.appId ? req.query.appId : undefined;
      res.json(
        await deliveries.list(p, { appId, failed: req.query.failed === 'true' || req.query.failed === '1', limit }),
      );
    }),
  );
  r.get(
    '/deliveries/:deliveryId',
    authed(async (req, res, p) => res.json(await deliveries.get(p, id(req)))),
  );
  r.post(
    '/deliveries/:deliveryId/replay',
    writes,
    authed(async (req, res, p) => res.json(await deliveries.replay(p, id(req)))),
  );
  r.post(
    '/deliveries/:deliveryId/cancel',
    writes,
    authed(async (req, res, p) => res.json(await deliveries.cancel(p, id(req)))),
  );
  return r;
}
