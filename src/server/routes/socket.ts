/**
 * GET /apps/:appId/websocket-connection?appKey=… → {url} carrying a single-use, short-lived ticket (docs/protocol.md
 * §6).
 */
import { stringOr } from '../../unknown-values.js';
import { Router } from 'express';
import { mount, route } from './route-table.js';
import { schema } from '../../validation/http-input.js';
import { socketModeDisabled } from '../../errors.js';
import type { AppsService } from '../../services/apps.js';
import type { SocketSessions } from '../../services/socket-sessions.js';

/** Path of the websocket endpoint (the ticket rides in its query). */
export const SOCKET_PATH = '/socket';

export interface SocketRouteDeps {
  apps: AppsService;
  sessions: SocketSessions;
  baseUrl: () => string;
}

/** Socket mode's connection URL (docs/protocol.md §6): the app key in the query, no token. */
export const SOCKET_ROUTES = {
  connection: route({
    method: 'get',
    path: '/apps/:appId/websocket-connection',
    summary: 'A websocket URL with a single-use, short-lived ticket, for an app of socket mode',
    params: schema<{ appId: string }>('management#socketPath'),
    query: schema<{ appKey?: unknown }>('management#socketQuery'),
    answers: { 200: '{url}' },
    auth: 'none',
  }),
};

export function socketRoutes(deps: SocketRouteDeps): Router {
  const { apps, sessions } = deps;
  const r = Router();
  mount(r, SOCKET_ROUTES.connection, [], async (_req, res, { params, query }) => {
    res.setHeader('cache-control', 'no-store');
    const app = await apps.byAppKey(params.appId, stringOr(query.appKey));
    if (app.manifest.socketMode !== true) {
      throw socketModeDisabled(
        'This app does not use socket mode: set "socketMode": true in its manifest (appreg apps update) to connect over a websocket.',
      );
    }
    const url = new URL(SOCKET_PATH, deps.baseUrl());
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('ticket', (await sessions.issueTicket(app.id)).ticket);
    res.json({ url: url.toString() });
  });
  return r;
}
