/** The calls apps make with their tokens (docs/protocol.md §4): me, unauthorize, uninstall, interaction complete. */
import { Router, type RequestHandler, type Response } from 'express';
import { invalidRequest } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AppTokens, TokenOwner } from '../../services/oauth/app-tokens.js';
import type { Revocation } from '../../services/oauth/revocation.js';
import { jsonBody } from '../middleware.js';
import { must } from '../../must.js';
import { schema } from '../../validation/http-input.js';
import { mount, route } from './route-table.js';

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('cache-control', 'no-store');
  res.setHeader('pragma', 'no-cache');
  next();
};

const header = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
/** The app token's owner appAuth found, by the request's response (typed, where res.locals holds anything). */
const appOwners = new WeakMap<Response, TokenOwner>();
const ownerOf = (res: Response) => must(appOwners.get(res), 'the token owner of an app call');

export interface AppCallDeps {
  appTokens: AppTokens;
  revocation: Revocation;
  logger: Logger;
}

const COMPLETE_PARTS = ['sourceId', 'sourceType', 'triggerId'] as const;
type InteractionComplete = { channelId?: string; sourceId: string; sourceType: string; triggerId: string };

/** The calls an app makes with its `token` and `x-app-token` headers (docs/protocol.md §4). */
export const APP_CALL_ROUTES = {
  me: route({
    method: 'get',
    path: '/oauth2/me',
    summary: "Who the token is: the app, the workspace and the user (or the app's bot)",
    answers: { 200: 'The token owner' },
    auth: 'app-token',
  }),
  unauthorize: route({
    method: 'delete',
    path: '/v1/app/authorization',
    summary: "Revoke the user's authorization of the app",
    answers: { 204: 'Revoked' },
    auth: 'app-token',
  }),
  uninstall: route({
    method: 'delete',
    path: '/v1/app/installation',
    summary: 'Uninstall the app from the workspace',
    answers: { 204: 'Uninstalled' },
    auth: 'app-token',
  }),
  interactionComplete: route({
    method: 'post',
    path: '/v1/interactions/complete',
    summary: 'The app finished handling an interaction (checked and logged; there is no loading state to clear)',
    body: schema<InteractionComplete>('oauth#interactionComplete'),
    refuse: (problems) => {
      // not an object at all: every part is missing
      const bad = COMPLETE_PARTS.filter((k) => problems.some((v) => v.pointer === `/${k}` || v.pointer === ''));
      return invalidRequest(
        'Send {channelId, sourceId, sourceType, triggerId} as JSON.',
        bad.map((k) => ({ pointer: `/${k}`, message: 'is required' })),
      );
    },
    answers: { 200: 'An empty object' },
    auth: 'app-token',
  }),
};

/** Calls an app makes with its `token` and `x-app-token` headers. */
export function appCallRoutes(deps: AppCallDeps): Router {
  const { appTokens, revocation } = deps;
  const r = Router();
  const appAuth: RequestHandler = async (req, res, next) => {
    appOwners.set(res, await appTokens.authenticate(header(req.headers['token']), header(req.headers['x-app-token'])));
    next();
  };
  const A = APP_CALL_ROUTES;

  mount(r, A.me, [noStore, appAuth], async (_req, res) => {
    res.json(await appTokens.me(ownerOf(res)));
  });
  mount(r, A.unauthorize, [appAuth], async (_req, res) => {
    await revocation.unauthorize(ownerOf(res));
    res.status(204).end();
  });
  mount(r, A.uninstall, [appAuth], async (_req, res) => {
    const o = ownerOf(res);
    await revocation.uninstall(o.appId, o.workspaceId);
    res.status(204).end();
  });
  mount(r, A.interactionComplete, [appAuth, jsonBody(16 * 1024)], (_req, res, { body: b }) => {
    deps.logger.debug('interaction complete', {
      appId: ownerOf(res).appId,
      sourceType: b.sourceType,
      triggerId: b.triggerId,
    });
    res.status(200).json({});
  });
  return r;
}
