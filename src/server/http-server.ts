/**
 * The daemon's HTTP server, bound before the daemon is built: a start refused because the port is
 * taken must be refused before anything is written (start.ts). Requests and websocket upgrades
 * that arrive between the bind and `serve` (nobody knows the URL yet: daemon.json is written after)
 * wait for it; if the start is refused instead, they are dropped with the server.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { capConnections } from './connections.js';
import { StartupError } from './data-dir.js';
import { answerClientError } from './respond.js';
import { must } from '../must.js';

type RequestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
type UpgradeHandler = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface BoundServer {
  server: http.Server;
  port: number;
  /** Hand requests and upgrades to these from now on (and those that waited). */
  serve(onRequest: RequestHandler, onUpgrade: UpgradeHandler): void;
  /** The start was refused: close the server and drop whatever waited. */
  abandon(): Promise<void>;
}

export async function bindServer(
  config: Pick<Config, 'port' | 'host' | 'requestTimeoutMs' | 'maxConnections' | 'maxConnectionsPerAddress'>,
  logger: Logger,
  clock: Pick<Clock, 'now'>,
): Promise<BoundServer> {
  let onRequest: RequestHandler | undefined;
  let onUpgrade: UpgradeHandler | undefined;
  /** What arrived before `serve`: how to hand it on, and how to drop it. */
  const waiting: Array<{ go(): void; drop(): void }> = [];
  const server = http.createServer(
    // timeouts are checked every second rather than Node's 30 s, so a slow request ends near requestTimeoutMs
    {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    (req, res) =>
      onRequest
        ? onRequest(req, res)
        : waiting.push({ go: () => must(onRequest)(req, res), drop: () => res.destroy() }),
  );
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError(logger));
  capConnections(server, { max: config.maxConnections, perAddress: config.maxConnectionsPerAddress }, logger, clock);
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) =>
    onUpgrade
      ? onUpgrade(req, socket, head)
      : waiting.push({ go: () => must(onUpgrade)(req, socket, head), drop: () => socket.destroy() }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE'
          ? new StartupError(
              `port ${config.port} on ${config.host} is already in use; pick another with --port (0 picks a free one)`,
              'port_in_use',
            )
          : e,
      ),
    );
    server.listen(config.port, config.host, () => resolve());
  });
  // listening on a host and port (not a pipe), its address is an AddressInfo
  const address = server.address();
  if (!address || typeof address === 'string') {
    server.close();
    throw new StartupError('the server listens on no port');
  }
  return {
    server,
    port: address.port,
    serve(request, upgrade) {
      onRequest = request;
      onUpgrade = upgrade;
      for (const w of waiting.splice(0)) w.go();
    },
    abandon: () =>
      new Promise<void>((resolve) => {
        for (const w of waiting.splice(0)) w.drop();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
