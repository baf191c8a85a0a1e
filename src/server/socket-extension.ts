/**
 * Socket mode on the daemon's own port (wire-protocol.md §6):
 * - GET /apps/:appId/websocket-connection?appKey=… → {url} carrying a single-use, short-lived ticket;
 * - a `ws` server (noServer) that takes the HTTP upgrade of that URL, registers the connection,
 *   answers text `ping` with `pong`, hands replies to the awaiting deliveries, pings at the
 *   protocol level and drops connections that stop answering, closes floods with 1008;
 * - the socket transport handed to the delivery engine (deps.shared 'delivery');
 * - `connections` (open sockets) and `queuedEvents` (events kept until it connects) added to
 *   `GET …/apps/mine/:appId` for socket-mode apps;
 * - shutdown closes every socket with 1001 so apps reconnect to the next daemon.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { Router, type Request, type Response, type NextFunction } from 'express';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { newId, safeEqual } from '../crypto.js';
import { AppError, invalidClient } from '../errors.js';
import { createSocketSessions, type SocketConn, type SocketSessions } from '../services/socket-sessions.js';
import { createSocketTransport, type SocketTransport } from '../delivery/socket-transport.js';
import type { Transport } from '../delivery/types.js';
import type { AppRecord } from '../services/records.js';
import type { Extension } from './start.js';
import type { ServerDeps } from './deps.js';
import { MGMT_BASE } from './routes/management.js';

/** Path of the websocket endpoint (the ticket rides in its query). */
export const SOCKET_PATH = '/socket';
export const SHARED_KEY = 'socket';
/** Close codes (RFC 6455). */
export const CLOSE = { goingAway: 1001, policy: 1008 } as const;
/** How long shutdown waits for closing handshakes before cutting the sockets. */
const SHUTDOWN_GRACE_MS = 1000;

export interface SocketModeHandle {
  sessions: SocketSessions;
  transport: SocketTransport;
}

/** The socket mode handle published in deps.shared (undefined when the extension is not loaded). */
export function getSocketMode(deps: Pick<ServerDeps, 'shared'>): SocketModeHandle | undefined {
  return deps.shared.get(SHARED_KEY) as SocketModeHandle | undefined;
}

/** What socket mode needs from the delivery engine's handle (issue 4). */
interface DeliveryHook {
  setSocketTransport?(t: Transport): void;
}

const isSocketApp = (app: AppRecord | undefined): app is AppRecord => !!app && (app.manifest as { socketMode?: boolean }).socketMode === true;

/** An app key nobody holds, so an unknown app id costs the same comparison as a wrong key. */
const DUMMY_KEY = 'apk_' + 'x'.repeat(43);

export function socketExtension(): Extension {
  let handle: SocketModeHandle | undefined;
  let wss: WebSocketServer | undefined;
  let server: http.Server | undefined;
  let pingTimer: NodeJS.Timeout | undefined;
  let stopping = false;
  let onUpgrade: ((req: http.IncomingMessage, socket: Duplex, head: Buffer) => void) | undefined;
  /** Whether each socket showed a sign of life (pong or any frame) since the last protocol ping. */
  const alive = new Map<WebSocket, { alive: boolean; appId: string }>();

  function init(deps: ServerDeps): SocketModeHandle {
    if (!handle) {
      const sessions = createSocketSessions(deps.ctx);
      const { store, clock, logger, config } = deps.ctx;
      handle = { sessions, transport: createSocketTransport(sessions, { store, clock, logger, config }) };
      deps.shared.set(SHARED_KEY, handle);
    }
    return handle;
  }

  function connectionRoute(deps: ServerDeps) {
    const { sessions } = init(deps);
    return (req: Request, res: Response) => {
      res.setHeader('cache-control', 'no-store');
      const appId = String(req.params.appId);
      const appKey = typeof req.query.appKey === 'string' ? req.query.appKey : '';
      const app = deps.apps.byId(appId);
      const expected = app ? deps.apps.secretsOf(app).appKey : DUMMY_KEY;
      // Constant-time, and the same answer for an unknown app as for a wrong key.
      const ok = safeEqual(appKey, expected) && !!app && appKey !== '';
      if (!ok) throw invalidClient('The appKey does not match this app.');
      if (!isSocketApp(app)) {
        throw new AppError(400, 'socket_mode_disabled', 'This app does not use socket mode: set "socketMode": true in its manifest (appreg apps update) to connect over a websocket.');
      }
      const { ticket } = sessions.issueTicket(app.id);
      const base = new URL(deps.baseUrl());
      base.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
      const url = new URL(SOCKET_PATH, base);
      url.searchParams.set('ticket', ticket);
      res.json({ url: url.toString() });
    };
  }

  /** `connections` on GET …/apps/mine/:appId: decorates the core route's JSON without replacing it. */
  function decorateGet(deps: ServerDeps) {
    const { sessions, transport } = init(deps);
    return (req: Request, res: Response, next: NextFunction) => {
      const appId = String(req.params.appId);
      const json = res.json.bind(res);
      res.json = (body: unknown) => {
        if (res.statusCode === 200 && body && typeof body === 'object' && (body as { id?: unknown }).id === appId && isSocketApp(deps.apps.byId(appId))) {
          return json({ ...(body as object), connections: sessions.count(appId), queuedEvents: transport.queued(appId) });
        }
        return json(body);
      };
      next();
    };
  }

  function refuseUpgrade(socket: Duplex, status: number, code: string, message: string) {
    const body = JSON.stringify({ code, message });
    const reason = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' }[status] ?? 'Error';
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.destroy();
  }

  function attach(deps: ServerDeps, ws: WebSocket, appId: string) {
    const { sessions } = init(deps);
    const log = deps.ctx.logger.child({ component: 'socket' });
    const conn: SocketConn = {
      id: newId('sck', 9),
      appId,
      send: (text, cb) => ws.send(text, cb),
      close: (code, reason) => ws.close(code, reason),
      isOpen: () => ws.readyState === ws.OPEN,
    };
    const added = sessions.add(conn);
    if (!added.ok) {
      ws.close(added.code, added.reason);
      return;
    }
    const life = { alive: true, appId };
    alive.set(ws, life);
    ws.on('pong', () => (life.alive = true));
    // Replies may come binary (the SDK) or text; both are UTF-8 JSON.
    ws.on('message', (data: RawData) => {
      life.alive = true;
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data).toString('utf8');
      const v = sessions.handleFrame(conn, text);
      if (v.kind === 'pong') ws.send('pong');
      else if (v.kind === 'flood') ws.close(CLOSE.policy, 'too many malformed or unknown frames');
    });
    ws.on('close', (code: number) => {
      alive.delete(ws);
      sessions.remove(conn);
      log.debug('socket closed', { appId, connId: conn.id, code });
    });
    ws.on('error', (e: Error) => log.warn('socket error', { appId, connId: conn.id, error: e.message }));
  }

  return {
    routes(deps) {
      const r = Router();
      r.get('/apps/:appId/websocket-connection', connectionRoute(deps));
      const m = Router();
      m.get('/apps/mine/:appId', decorateGet(deps));
      return [{ path: '/', router: r }, { path: MGMT_BASE, router: m }];
    },

    start(deps, httpServer) {
      const { sessions, transport } = init(deps);
      const cfg = deps.ctx.config;
      server = httpServer;
      wss = new WebSocketServer({ noServer: true, maxPayload: cfg.bodyLimitBytes, clientTracking: true, perMessageDeflate: false });
      onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
        let url: URL;
        try {
          url = new URL(req.url ?? '/', 'http://localhost');
        } catch {
          return refuseUpgrade(socket, 400, 'invalid_request', 'Bad request target.');
        }
        if (url.pathname !== SOCKET_PATH) {
          // Another extension may own this path; answer only when nobody else listens.
          if (httpServer.listenerCount('upgrade') === 1) refuseUpgrade(socket, 404, 'not_found', 'No websocket endpoint here.');
          return;
        }
        if (stopping) return refuseUpgrade(socket, 503, 'shutting_down', 'The daemon is shutting down; fetch a new URL and reconnect.');
        const appId = sessions.redeemTicket(url.searchParams.get('ticket'));
        if (!appId) return refuseUpgrade(socket, 401, 'unauthenticated', 'The ticket is unknown, expired or already used; fetch a new URL from websocket-connection.');
        const app = deps.apps.byId(appId);
        if (!isSocketApp(app)) return refuseUpgrade(socket, 400, 'socket_mode_disabled', 'This app does not use socket mode.');
        wss!.handleUpgrade(req, socket, head, (ws) => attach(deps, ws, appId));
      };
      httpServer.on('upgrade', onUpgrade);
      const interval = cfg.socketPingIntervalMs;
      if (interval > 0) {
        pingTimer = setInterval(() => {
          for (const [ws, life] of alive) {
            if (!isSocketApp(deps.apps.byId(life.appId))) {
              // Deleted, or switched to HTTP mode: its socket is of no further use (the SDK's
              // reconnect then gets a 401/400 from websocket-connection and stops).
              ws.close(CLOSE.policy, 'the app was deleted or no longer uses socket mode');
              continue;
            }
            if (!life.alive) {
              deps.ctx.logger.info('socket dropped: no pong within the ping interval', { component: 'socket', intervalMs: interval });
              ws.terminate();
              continue;
            }
            life.alive = false;
            try {
              ws.ping();
            } catch {
              /* closing */
            }
          }
        }, interval);
        pingTimer.unref();
      }
      (deps.shared.get('delivery') as DeliveryHook | undefined)?.setSocketTransport?.(transport);
    },

    async stop() {
      stopping = true;
      if (pingTimer) clearInterval(pingTimer);
      const w = wss;
      if (!w) return;
      const open = [...w.clients];
      await Promise.all(
        open.map(
          (ws) =>
            new Promise<void>((resolve) => {
              if (ws.readyState === ws.CLOSED) return resolve();
              const cut = setTimeout(() => {
                ws.terminate();
                resolve();
              }, SHUTDOWN_GRACE_MS);
              ws.once('close', () => {
                clearTimeout(cut);
                resolve();
              });
              ws.close(CLOSE.goingAway, 'daemon shutting down; reconnect shortly');
            }),
        ),
      );
      await new Promise<void>((resolve) => w.close(() => resolve()));
      if (onUpgrade) server?.off('upgrade', onUpgrade);
    },
  };
}
