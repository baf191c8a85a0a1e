/** App management (docs/protocol.md §2, endpoints 1–5), mounted at MGMT_BASE. */
import { Router, type Request, type Response } from 'express';
import { invalidRequest } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { AppsService } from '../../services/apps.js';
import { jsonBody, rateLimit, type HitCounter } from '../middleware.js';
import { authed, principalOf } from './auth.js';

export interface AppsRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites'>;
  clock: Clock;
  store: HitCounter;
  apps: AppsService;
  /** The manifest an app's host serves at its manifest address (under the egress policy). */
  fetchManifest(appHostUrl: unknown): Promise<unknown>;
  /** Live socket-mode figures shown on an app of socket mode. */
  socketStatus(appId: string): Promise<{ connections: number; queuedEvents: number }>;
}

const param = (req: Request, name: string) => String(req.params[name]);

function sendApp(res: Response, status: number, out: { app: unknown; warnings: unknown[] }) {
  if (out.warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(out.warnings));
  res.status(status).json(out.app);
}

export function appsRoutes(deps: AppsRoutesDeps): Router {
  const { apps, config } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(config.bodyLimitBytes);
  const writes = rateLimit({ perMinute: config.rateLimitManagementWrites, clock: deps.clock, store: deps.store, key: (_req, res) => `apps-writes|${principalOf(res).workspaceUserId}` });

  r.post('/apps', writes, body, authed(async (req, res, p) => sendApp(res, 201, await apps.create(p, req.body))));
  r.get('/apps/mine', authed(async (_req, res, p) => res.json(await apps.list(p))));
  r.get(
    '/apps/mine/:appId',
    authed(async (req, res, p) => {
      res.setHeader('cache-control', 'no-store');
      const app = await apps.get(p, param(req, 'appId'));
      res.json(app.socketMode === true ? { ...app, ...(await deps.socketStatus(app.id)) } : app);
    }),
  );
  r.put(
    '/apps/:appId/secrets/rotate',
    writes,
    body,
    authed(async (req, res, p) => {
      res.setHeader('cache-control', 'no-store');
      res.json(await apps.rotateSecrets(p, param(req, 'appId')));
    }),
  );
  r.post('/apps/:appId/publish', writes, body, authed(async (req, res, p) => res.json(await apps.setPublished(p, param(req, 'appId'), true))));
  r.post('/apps/:appId/unpublish', writes, body, authed(async (req, res, p) => res.json(await apps.setPublished(p, param(req, 'appId'), false))));
  r.put('/apps/:appId', writes, body, authed(async (req, res, p) => sendApp(res, 200, await apps.update(p, param(req, 'appId'), req.body))));
  r.delete(
    '/apps/:appId',
    writes,
    authed(async (req, res, p) => {
      await apps.remove(p, param(req, 'appId'));
      res.status(204).end();
    }),
  );

  // Create, or update with appId, from the manifest the app's own host serves (docs/protocol.md §7).
  r.post(
    '/apps/from-url',
    writes,
    body,
    authed(async (req, res, p) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      if (b.appId !== undefined && typeof b.appId !== 'string') throw invalidRequest('appId must be a string.');
      const manifest = await deps.fetchManifest(b.url);
      if (typeof b.appId === 'string') sendApp(res, 200, await apps.update(p, b.appId, manifest));
      else sendApp(res, 201, await apps.create(p, manifest));
    }),
  );
  return r;
}
