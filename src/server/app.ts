/** The express app: a pure factory of its dependencies; start.ts does all I/O. */
import express, { type Router } from 'express';
import { accessLog, errorHandler, notFoundHandler, requestId } from './middleware.js';
import { identityRoutes } from './routes/identity.js';
import { managementRoutes, MGMT_BASE } from './routes/management.js';
import type { ServerDeps } from './deps.js';

/** A route module: given the dependencies, a router mounted at `path` (default '/'). */
export type RouteModule = (deps: ServerDeps) => { path?: string; router: Router } | Array<{ path?: string; router: Router }>;

export function createHttpApp(deps: ServerDeps, modules: RouteModule[] = []) {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(deps.ctx.logger));
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  // Extra modules first: they own their own specific paths (OAuth, deliveries, sockets).
  for (const m of modules) {
    const out = m(deps);
    for (const { path, router } of Array.isArray(out) ? out : [out]) app.use(path ?? '/', router);
  }
  app.use(identityRoutes(deps));
  app.use(MGMT_BASE, managementRoutes(deps));
  app.use(notFoundHandler());
  app.use(errorHandler(deps.ctx.logger));
  return app;
}
