/**
 * What every platform API call passes through (docs/protocol.md §9.1): the `token` and
 * `x-app-token` headers → the token's owner; the platform's per-app and per-user rate limits;
 * then, per call, the scope it needs (403 missing_scope naming it) and its own rate limit.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Clock } from '../../clock.js';
import { missingScope } from '../../errors.js';
import type { AppTokens, TokenOwner } from '../../services/oauth/app-tokens.js';
import type { Actor } from '../../services/workspace/users.js';
import { rateLimit, type HitCounter } from '../middleware.js';
import { must } from '../../must.js';

/** The platform's documented limits, requests per minute. */
export const PLATFORM_LIMITS = {
  perApp: 3000,
  perUser: 1000,
  messages: 80,
  replies: 80,
  channels: 60,
  reactions: 60,
  scheduled: 60,
  homeViews: 20,
} as const;

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

/**
 * @param limits false switches the platform's rate limits off (platformRateLimits: load tests of an app, benchmarks)
 */
export function platformGate(deps: { appTokens: AppTokens; clock: Clock; store: HitCounter; limits?: boolean }) {
  const { appTokens, clock, store } = deps;
  const perMinute = (name: keyof typeof PLATFORM_LIMITS) => (deps.limits === false ? 0 : PLATFORM_LIMITS[name]);
  // the token's owner the gate found, by the request's response: every route after the gate has one
  const owners = new WeakMap<Response, TokenOwner>();
  const owner = (res: Response) => must(owners.get(res), 'the token owner of a platform call');
  const perApp = rateLimit({
    perMinute: perMinute('perApp'),
    clock,
    store,
    key: (_req, res) => `app|${owner(res).appId}`,
  });
  const perUser = rateLimit({
    perMinute: perMinute('perUser'),
    clock,
    store,
    key: (_req, res) => `user|${owner(res).appId}|${owner(res).workspaceUserId}`,
  });
  const gate: RequestHandler = async (req, res, next) => {
    // a rejection (401) goes to the error handler: express 5 passes it on
    owners.set(res, await appTokens.authenticate(header(req.headers['token']), header(req.headers['x-app-token'])));
    perApp(req, res, (e?: unknown) => (e ? next(e) : perUser(req, res, next)));
  };

  return {
    /** Authenticate, then the per-app and per-user limits; every platform route starts with this. */
    gate,
    /** 403 missing_scope unless the token was granted `scope`. */
    need:
      (scope: string): RequestHandler =>
      (_req, res, next) =>
        next(owner(res).scopes.includes(scope) ? undefined : missingScope(scope)),
    /**
     * A call's own limit, per app and workspace, or per app and what `by` names (a new bucket per call of this
     * function).
     */
    limit: (name: keyof typeof PLATFORM_LIMITS, by?: (req: Request) => string) =>
      rateLimit({
        perMinute: perMinute(name),
        clock,
        store,
        key: (req, res) => `${name}|${owner(res).appId}|${by ? by(req) : owner(res).workspaceId}`,
      }),
    /** The token's user (the bot user for a bot token) as the actor of a workspace call. */
    actor(res: Response): Actor {
      const o = owner(res);
      return { workspaceId: o.workspaceId, userId: o.workspaceUserId, appId: o.appId };
    },
  };
}

export type PlatformGate = ReturnType<typeof platformGate>;
