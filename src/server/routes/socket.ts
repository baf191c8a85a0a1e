/**
 * GET /apps/:appId/websocket-connection?appKey=… → {url} carrying a single-use, short-lived ticket (docs/protocol.md
 * §6).
 */
import { Router } from 'express';
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

export function socketRoutes(deps: SocketRouteDeps): Router {
  const { apps, sessions } = deps;
  const r = Router();
  r.get('/apps/:appId/websocket-connection', async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    const app = await apps.byAppKey(String(req.params.appId), req.query.appKey);
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
