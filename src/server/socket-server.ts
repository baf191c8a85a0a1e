/**
 * Socket mode's websocket server on the daemon's own port (docs/protocol.md §6): takes the
 * HTTP upgrade of a ticket URL handed out by websocket-connection, registers the connection
 * with the socket sessions, answers text `ping` with `pong`, hands replies to the awaiting
 * deliveries, pings at the protocol level and drops connections that stop answering, closes
 * floods with 1008, and on shutdown closes every socket with 1001 so apps reconnect.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket, type RawData } from 'ws';
import { newId } from '../crypto.js';
import type { Clock, Timer } from '../clock.js';
import type { Config } from '../config.js';
import { invalidRequest, noRoute, shuttingDown, socketModeDisabled, unauthenticated } from '../errors.js';
import type { Logger } from '../logger.js';
import type { AppsService } from '../services/apps.js';
import type { SocketSessions } from '../services/socket-sessions.js';
import type { SocketConn } from '../delivery/socket-connections.js';
import { refuseUpgrade } from './respond.js';
import { SOCKET_PATH } from './routes/socket.js';
import { tickBatcher } from './socket-writes.js';

/** Close codes (RFC 6455). */
const CLOSE = { goingAway: 1001, policy: 1008, internalError: 1011 } as const;
/**
 * How long shutdown waits for closing handshakes before cutting the sockets: a bound on the stop,
 * on the runtime's timer (a daemon on a test clock must stop without the test moving time).
 */
const SHUTDOWN_GRACE_MS = 1000;

export interface SocketServerDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'socketPingIntervalMs'>;
  /** The pings' timer. */
  clock: Clock;
  logger: Logger;
  apps: AppsService;
  sessions: SocketSessions;
}

const textOf = (data: RawData) =>
  Buffer.isBuffer(data)
    ? data.toString('utf8')
    : Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data).toString('utf8');

export function createSocketServer(deps: SocketServerDeps) {
  const { config, clock, apps, sessions } = deps;
  const log = deps.logger.child({ component: 'socket' });
  const isSocketApp = async (appId: string) => (await apps.byId(appId))?.manifest.socketMode === true;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.bodyLimitBytes,
    clientTracking: true,
    perMessageDeflate: false,
  });
  /** Whether each socket showed a sign of life (pong or any frame) since the last protocol ping. */
  const alive = new Map<WebSocket, { alive: boolean; appId: string }>();
  let stopping = false;
  let pingTimer: Timer | undefined;

  function attach(ws: WebSocket, appId: string, socket: Duplex) {
    const batch = tickBatcher(socket);
    const conn: SocketConn = {
      id: newId('sck', 9),
      appId,
      send: (text, cb) => {
        batch();
        ws.send(text, cb);
      },
      close: (code, reason) => ws.close(code, reason),
      isOpen: () => ws.readyState === ws.OPEN,
    };
    const life = { alive: true, appId };
    // Registering may go to the store (which daemon holds the app's sockets): the listeners are
    // set at once, so no frame is lost meanwhile. Once registered, frames and the close are
    // handled as they come, in the same turn (what the socket queue's order relies on).
    let ok: boolean | undefined;
    const registered: Promise<boolean> = (async () => {
      const added = await sessions.add(conn);
      if (!added.ok) ws.close(added.code, added.reason);
      else alive.set(ws, life);
      return (ok = added.ok);
    })().catch((e: unknown) => {
      log.warn('socket refused: it could not be registered', { appId, connId: conn.id, error: String(e) });
      ws.close(CLOSE.internalError, 'the daemon could not register the connection; reconnect');
      return (ok = false);
    });
    const failed = (what: string) => (e: unknown) =>
      log.warn(`socket ${what} failed`, { appId, connId: conn.id, error: String(e) });
    // handled in the turn it came in (no promise per reply)
    const frame = (text: string) => {
      const v = sessions.handleFrame(conn, text);
      if (v.kind === 'pong') conn.send('pong');
      else if (v.kind === 'flood') ws.close(CLOSE.policy, 'too many malformed or unknown frames');
    };
    ws.on('pong', () => (life.alive = true));
    // Replies may come binary (the SDK) or text; both are UTF-8 JSON.
    ws.on('message', (data: RawData) => {
      life.alive = true;
      const text = textOf(data);
      if (ok) {
        try {
          frame(text);
        } catch (e) {
          failed('frame')(e);
        }
      } else void registered.then((yes) => (yes ? frame(text) : undefined)).catch(failed('frame'));
    });
    ws.on('close', (code: number) => {
      alive.delete(ws);
      const remove = async () => {
        if (ok ?? (await registered)) await sessions.remove(conn);
      };
      remove().catch(failed('removal'));
      log.debug('socket closed', { appId, connId: conn.id, code });
    });
    ws.on('error', (e: Error) => log.warn('socket error', { appId, connId: conn.id, error: e.message }));
  }

  /** The server's 'upgrade' listener. */
  function handleUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    upgrade(req, socket, head).catch((e: unknown) =>
      refuseUpgrade(socket, e, deps.logger, { method: 'GET', path: SOCKET_PATH }),
    );
  }

  async function upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const refuse = (err: unknown, path: string) => refuseUpgrade(socket, err, deps.logger, { method: 'GET', path });
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return refuse(invalidRequest('Bad request target.'), '/');
    }
    if (url.pathname !== SOCKET_PATH) return refuse(noRoute('GET (websocket)', url.pathname), url.pathname);
    if (stopping)
      return refuse(shuttingDown('The daemon is shutting down; fetch a new URL and reconnect.'), SOCKET_PATH);
    const appId = await sessions.redeemTicket(url.searchParams.get('ticket'));
    if (!appId)
      return refuse(
        unauthenticated('The ticket is unknown, expired or already used; fetch a new URL from websocket-connection.'),
        SOCKET_PATH,
      );
    if (!(await isSocketApp(appId))) return refuse(socketModeDisabled(), SOCKET_PATH);
    await sessions.prepare(appId); // the app is reachable through every daemon once the upgrade is answered
    if (stopping || socket.destroyed)
      return refuse(shuttingDown('The daemon is shutting down; fetch a new URL and reconnect.'), SOCKET_PATH);
    wss.handleUpgrade(req, socket, head, (ws) => attach(ws, appId, socket));
  }

  /** Protocol-level pings; a socket that missed one pong is dropped, and so is one whose app left socket mode. */
  async function pingAll() {
    const asked = new Set([...alive.values()].map((l) => l.appId));
    const appIds = [...asked];
    const socketApps = new Set(
      (await Promise.all(appIds.map(async (id) => ((await isSocketApp(id)) ? id : undefined)))).filter(
        (id) => id !== undefined,
      ),
    );
    for (const [ws, life] of alive) {
      if (!asked.has(life.appId)) continue; // connected while the apps were read: next round
      if (!socketApps.has(life.appId)) {
        // Deleted, or switched to HTTP mode: its socket is of no further use (the SDK's
        // reconnect then gets a 401/400 from websocket-connection and stops).
        ws.close(CLOSE.policy, 'the app was deleted or no longer uses socket mode');
        continue;
      }
      if (!life.alive) {
        log.info('socket dropped: no pong within the ping interval', { intervalMs: config.socketPingIntervalMs });
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
  }

  return {
    handleUpgrade,
    start() {
      if (config.socketPingIntervalMs > 0) {
        pingTimer = clock.setInterval(
          () => pingAll().catch((e: unknown) => log.warn('socket ping round failed', { error: String(e) })),
          config.socketPingIntervalMs,
        );
      }
    },
    /** Refuse new sockets (the open ones keep working until close). */
    stopAccepting(): void {
      stopping = true;
      clock.clear(pingTimer);
    },
    /** Close the open sockets with 1001 (cut after a grace period): apps reconnect to the next daemon. */
    async close(): Promise<void> {
      stopping = true;
      clock.clear(pingTimer);
      await Promise.all(
        [...wss.clients].map(
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
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
