/** App management (docs/protocol.md §2, endpoints 1–5), mounted at MGMT_BASE. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router, type Response } from 'express';
import { forbidden, unauthenticated } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { AppsService } from '../../services/apps.js';
import type { IdentityService, Principal } from '../../services/identity.js';
import { jsonBody, logRequest, rateLimit, startAnswer, type HitCounter } from '../middleware.js';
import { errorCodeOf, sendError } from '../respond.js';
import { notActingAs, principalOf } from './auth.js';
import { mountAuthed, route } from './route-table.js';
import { schema, type Schema } from '../../validation/http-input.js';
import { checkManifest, type CheckedManifest } from '../../validation/manifest.js';
import { must } from '../../must.js';
import { routedPath } from '../request-target.js';
import { recordOr } from '../../unknown-values.js';

export interface AppsRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites' | 'allowInsecureRedirects'>;
  clock: Clock;
  store: HitCounter;
  apps: AppsService;
  /** The manifest an app's host serves at its manifest address (under the egress policy). */
  fetchManifest(appHostUrl: unknown): Promise<unknown>;
  /** Live socket-mode figures shown on an app of socket mode. */
  socketStatus(appId: string): Promise<{ connections: number; queuedEvents: number }>;
}

function sendApp(res: Response, status: number, app: unknown, checked: CheckedManifest) {
  if (checked.warnings.length) res.setHeader('x-appreg-warnings', JSON.stringify(checked.warnings));
  res.status(status).json(app);
}

/** GET …/apps/mine/{appId}'s answer: the app with its secrets; a socket-mode app with its live figures. */
async function appShown(
  deps: Pick<AppsRoutesDeps, 'apps' | 'socketStatus'>,
  p: Principal,
  appId: string,
): Promise<unknown> {
  const app = await deps.apps.get(p, appId);
  return app.socketMode === true ? Object.assign({}, app, await deps.socketStatus(app.id)) : app;
}

/**
 * The path of GET …/apps/mine/{appId} with ids of letters, digits, `_` and `-`, as express matches
 * it (request-target.ts: any case, one trailing slash or none); an id of other characters (a
 * percent-encoded one) is left to the express route.
 */
const APP_GET = /^\/workspaces\/([\w-]+)\/workspaceusers\/([\w-]+)\/apps\/mine\/([\w-]+)\/?$/i;

/** The path's workspace, user and app when `req` is a get the fast path serves (its path at index 0), else null. */
export function matchAppGet(req: Pick<IncomingMessage, 'method' | 'url'>): RegExpExecArray | null {
  if (req.method !== 'GET' || req.url === undefined) return null;
  const path = routedPath(req.url);
  return path === undefined ? null : APP_GET.exec(path);
}

export interface AppGetDeps extends Pick<AppsRoutesDeps, 'apps' | 'socketStatus'> {
  identity: IdentityService;
  logger: Logger;
}

/**
 * GET …/apps/mine/{appId}, the most frequent management call, on plain node:http: the daemon's
 * request handler sends it here before express, as it does the token endpoint (measured: express's
 * routing and middleware were most of a get's CPU). The same steps as the express route, which
 * answers the forms of the path this leaves (HEAD, percent-encoded ids): the headers of every
 * answer, the Authtoken (401), the path's user is the caller's (403), the app (404), its JSON;
 * errors through the one error path (respond.ts); one log line.
 */
export function createAppGetHandler(deps: AppGetDeps) {
  const { logger } = deps;
  return {
    match: matchAppGet,
    serve(req: IncomingMessage, res: ServerResponse, m: RegExpExecArray): void {
      const start = process.hrtime.bigint();
      const reqId = startAnswer(res);
      const path = m[0];
      const done = (status: number) =>
        logRequest(logger, {
          reqId,
          method: 'GET',
          path,
          status,
          ms: Number(process.hrtime.bigint() - start) / 1e6,
          code: errorCodeOf(res),
        });
      const header = req.headers['authtoken'];
      const token = Array.isArray(header) ? header[0] : header;
      (token ? deps.identity.authenticate(token).then(notActingAs) : Promise.reject(unauthenticated()))
        .then((p) => {
          if (m[1] !== p.workspaceId || m[2] !== p.workspaceUserId) throw forbidden();
          return deps.apps.getJson(p, must(m[3]));
        })
        .then(async ({ app, json }) =>
          app.manifest.socketMode === true
            ? JSON.stringify({ ...recordOr(JSON.parse(json)), ...(await deps.socketStatus(app.id)) })
            : json,
        )
        .then(
          (json) => {
            res.writeHead(200, {
              'content-type': 'application/json; charset=utf-8',
              'content-length': Buffer.byteLength(json),
            });
            res.end(json);
            done(200);
          },
          (e: unknown) => done(sendError(res, e, logger, { reqId, method: 'GET', path })),
        );
    },
  };
}

type AppPath = { appId: string };
const appPath = schema<AppPath>('apps#appPath');
const rotate = 'Rotate its secrets (client secret, app key, signing secret)';

/** Whether http redirect URLs to hosts other than loopback are allowed (the operator's allowInsecureRedirects). */
type RedirectPolicy = Pick<Config, 'allowInsecureRedirects'>;

/**
 * The body of a create or an update: a manifest (schemas/app-manifest.schema.json), checked by its own check:
 * the schema's problems in the manifest's words and the rules beyond it, under the operator's redirect policy,
 * every one in one 400 invalid_manifest.
 */
const manifestBody = (policy: RedirectPolicy): Schema<CheckedManifest> => ({
  ref: 'apps#manifestBody',
  check: (value) => checkManifest(value, policy),
});

/** The management routes of apps (docs/protocol.md §2, §7), relative to MGMT_BASE, under a redirect policy. */
const appRoutes = (policy: RedirectPolicy) => ({
  create: route({
    method: 'post',
    path: '/apps',
    summary: 'Register an app from its manifest',
    body: manifestBody(policy),
    answers: { 201: 'The app, with its secrets' },
    auth: 'authtoken',
  }),
  list: route({
    method: 'get',
    path: '/apps/mine',
    summary: "The caller's apps",
    answers: { 200: 'The apps' },
    auth: 'authtoken',
  }),
  get: route({
    method: 'get',
    path: '/apps/mine/:appId',
    summary: 'One app with its secrets (a socket-mode app with its live figures)',
    params: appPath,
    answers: { 200: 'The app' },
    auth: 'authtoken',
  }),
  rotate: route({
    method: 'put',
    path: '/apps/:appId/secrets/rotate',
    summary: rotate,
    params: appPath,
    answers: { 200: 'The app with its new secrets' },
    auth: 'authtoken',
  }),
  publish: route({
    method: 'post',
    path: '/apps/:appId/publish',
    summary: 'Publish the app',
    params: appPath,
    answers: { 200: 'The app' },
    auth: 'authtoken',
  }),
  unpublish: route({
    method: 'post',
    path: '/apps/:appId/unpublish',
    summary: 'Unpublish the app',
    params: appPath,
    answers: { 200: 'The app' },
    auth: 'authtoken',
  }),
  update: route({
    method: 'put',
    path: '/apps/:appId',
    summary: 'Replace the manifest of an unpublished app',
    params: appPath,
    body: manifestBody(policy),
    answers: { 200: 'The app' },
    auth: 'authtoken',
  }),
  remove: route({
    method: 'delete',
    path: '/apps/:appId',
    summary: 'Delete the app',
    params: appPath,
    answers: { 204: 'Deleted' },
    auth: 'authtoken',
  }),
  fromUrl: route({
    method: 'post',
    path: '/apps/from-url',
    summary: "Create, or update with appId, from the manifest the app's own host serves",
    body: schema<{ url: string; appId?: string }>('apps#fromUrlBody'),
    messages: {
      '': { text: 'url (the app host URL) is required.', details: false },
      '/url': { text: 'url (the app host URL) is required.', details: false },
      '/appId': { text: 'appId must be a string.', details: false },
    },
    answers: { 200: 'The updated app', 201: 'The new app' },
    auth: 'authtoken',
  }),
});

/** The routes as the description shows them: the redirect policy changes what is accepted, not what is described. */
export const APP_ROUTES = appRoutes({ allowInsecureRedirects: false });

export function appsRoutes(deps: AppsRoutesDeps): Router {
  const { apps, config } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(config.bodyLimitBytes);
  const writes = rateLimit({
    perMinute: config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `apps-writes|${principalOf(res).workspaceUserId}`,
  });
  const A = appRoutes(config);

  mountAuthed(r, A.create, [writes, body], async (_req, res, p, { body: checked }) =>
    sendApp(res, 201, await apps.create(p, checked.manifest), checked),
  );
  mountAuthed(r, A.list, [], async (_req, res, p) => res.json(await apps.list(p)));
  mountAuthed(r, A.get, [], async (_req, res, p, { params }) => {
    res.setHeader('cache-control', 'no-store');
    res.json(await appShown(deps, p, params.appId));
  });
  mountAuthed(r, A.rotate, [writes, body], async (_req, res, p, { params }) => {
    res.setHeader('cache-control', 'no-store');
    res.json(await apps.rotateSecrets(p, params.appId));
  });
  mountAuthed(r, A.publish, [writes, body], async (_req, res, p, { params }) =>
    res.json(await apps.setPublished(p, params.appId, true)),
  );
  mountAuthed(r, A.unpublish, [writes, body], async (_req, res, p, { params }) =>
    res.json(await apps.setPublished(p, params.appId, false)),
  );
  mountAuthed(r, A.update, [writes, body], async (_req, res, p, { params, body: checked }) =>
    sendApp(res, 200, await apps.update(p, params.appId, checked.manifest), checked),
  );
  mountAuthed(r, A.remove, [writes], async (_req, res, p, { params }) => {
    await apps.remove(p, params.appId);
    res.status(204).end();
  });
  mountAuthed(r, A.fromUrl, [writes, body], async (_req, res, p, { body: b }) => {
    const checked = checkManifest(await deps.fetchManifest(b.url), config);
    if (b.appId !== undefined) sendApp(res, 200, await apps.update(p, b.appId, checked.manifest), checked);
    else sendApp(res, 201, await apps.create(p, checked.manifest), checked);
  });
  return r;
}
