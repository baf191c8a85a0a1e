/**
 * Every route the daemon serves, read from the express app's own router (so a route added later is
 * listed without touching a test), plus the one route served ahead of express: the token endpoint.
 */
import type { Router } from 'express';
import type { Config } from '../../src/config.js';
import { createHttpApp } from '../../src/server/app.js';
import type { DaemonHandle } from '../../src/server/start.js';

export interface Route {
  method: string;
  /** The express path, parameters as `:name`. */
  path: string;
}

/** What express 5's router keeps of a mounted layer and of a route (not part of its typed API). */
interface Layer {
  rawPath?: string;
  slash?: boolean;
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** A daemon's configuration for calling every route many times: no rate limit answers 429 in between. */
export const NO_RATE_LIMITS: Partial<Config> = {
  platformRateLimits: false,
  rateLimitManagementWrites: 0,
  rateLimitConsent: 0,
  rateLimitLogin: 0,
  rateLimitTokenEndpoint: 0,
};

/** Routes served outside express (start.ts sends them elsewhere first). */
const AHEAD_OF_EXPRESS: Route[] = [{ method: 'POST', path: '/oauth2/access' }];

export function routesOf(d: Pick<DaemonHandle, 'parts' | 'url'>): Route[] {
  const app = createHttpApp(d.parts, () => d.url) as unknown as { router: Router & { stack: Layer[] } };
  const out: Route[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const m of Object.keys(layer.route.methods))
          if (m !== '_all') out.push({ method: m.toUpperCase(), path: prefix + layer.route.path });
      } else if (layer.handle?.stack) {
        if (layer.rawPath === undefined)
          throw new Error('cannot read the mount path of a router: express changed its Layer');
        walk(layer.handle.stack, prefix + (layer.slash ? '' : layer.rawPath));
      }
    }
  };
  walk(app.router.stack, '');
  const seen = new Set<string>();
  return [...out, ...AHEAD_OF_EXPRESS].filter((r) => {
    const k = `${r.method} ${r.path}`;
    return !seen.has(k) && seen.add(k);
  });
}
