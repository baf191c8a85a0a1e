/** Deliveries under the management base path: trigger, list, show, replay, signature probe; app from URL. */
import { Router, type Request } from 'express';
import { invalidRequest } from '../../errors.js';
import type { DeliveryEngine, TriggerInput } from '../../delivery/engine.js';
import type { EgressPolicy } from '../../delivery/egress.js';
import { fetchManifest } from '../../delivery/manifest-fetch.js';
import { jsonBody, rateLimit } from '../middleware.js';
import type { ServerDeps } from '../deps.js';
import { requireAuth, requireSelf } from './management.js';

function triggerInput(body: unknown): TriggerInput {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('The body must be a JSON object with appId and kind.');
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== 'string') throw invalidRequest('kind is required.', [{ pointer: '/kind', message: 'is required' }]);
  if (b.view !== undefined && (typeof b.view !== 'object' || b.view === null || Array.isArray(b.view))) throw invalidRequest('view must be an object.');
  if (b.payload !== undefined && (typeof b.payload !== 'object' || b.payload === null || Array.isArray(b.payload))) throw invalidRequest('payload must be an object.');
  return b as unknown as TriggerInput;
}

export function deliveryRoutes(deps: ServerDeps, engine: () => DeliveryEngine, egress: EgressPolicy): Router {
  const { ctx, apps } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(ctx.config.bodyLimitBytes);
  const writes = rateLimit({ perMinute: ctx.config.rateLimitManagementWrites, clock: ctx.clock, key: (req) => req.principal!.workspaceUserId });
  r.use(requireAuth(deps), requireSelf());
  const id = (req: Request) => String(req.params.deliveryId);

  r.post('/deliveries', writes, body, async (req, res) => {
    res.status(201).json(await engine().trigger(req.principal!, triggerInput(req.body)));
  });
  r.post('/deliveries/probe-signature', writes, body, async (req, res) => {
    res.json(await engine().probeSignature(req.principal!, triggerInput(req.body)));
  });
  r.get('/deliveries', (req, res) => {
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalidRequest('limit must be an integer from 1 to 1000.');
    const appId = typeof req.query.appId === 'string' && req.query.appId ? req.query.appId : undefined;
    res.json(engine().list(req.principal!, { appId, failed: req.query.failed === 'true' || req.query.failed === '1', limit }));
  });
  r.get('/deliveries/:deliveryId', (req, res) => {
    res.json(engine().get(req.principal!, id(req)));
  });
  r.post('/deliveries/:deliveryId/replay', writes, async (req, res) => {
    res.json(await engine().replay(req.principal!, id(req)));
  });

  // Create or update an app from the manifest its own host serves (wire-protocol.md §7).
  r.post('/apps/from-url', writes, body, async (req, res) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const manifest = await fetchManifest(b.url, egress);
    if (b.appId !== undefined) {
      if (typeof b.appId !== 'string') throw invalidRequest('appId must be a string.');
      const { app, warnings } = await apps.update(req.principal!, b.appId, manifest);
      if (warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(warnings));
      res.json(app);
      return;
    }
    const { app, warnings } = await apps.create(req.principal!, manifest);
    if (warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(warnings));
    res.status(201).json(app);
  });
  return r;
}
