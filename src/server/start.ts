/**
 * Starts the daemon: data directory, lock, key, store, the composed parts, HTTP and websocket
 * listening, the background work; returns a handle whose close() stops it all in order.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { systemClock, type Clock } from '../clock.js';
import { openLowdbStore } from '../store/lowdb-store.js';
import type { StoreIo } from '../store/fsync.js';
import { StoreCorruptError, type Store } from '../store/types.js';
import { createHttpApp } from './app.js';
import { composeDaemon, type Daemon } from './compose.js';
import { acquireLock, ensureDataDir, loadOrCreateKey, StartupError, writeFile0600 } from './data-dir.js';
import { refreshCredentials, type LocalCredentials } from './credentials.js';
import { checkMasterKey } from './key-check.js';
import { createTokenHandler, isTokenRequest } from './routes/oauth.js';
import { createSocketServer } from './socket-server.js';
import { answerClientError, sendError } from './respond.js';
import { shuttingDown } from '../errors.js';
import { capConnections } from './connections.js';

export { StartupError };

/** How often expired codes and consent sessions are forgotten. */
const SWEEP_MS = 60_000;

export interface DaemonHandle {
  url: string;
  port: number;
  /** The composed parts (services, delivery, socket mode), for tests and benchmarks. */
  parts: Daemon;
  server: http.Server;
  /** Set on first start: the owner's credentials (also written to credentials.json). */
  bootstrapped: LocalCredentials | null;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  clock?: Clock;
  allowFresh?: boolean;
  /** The embedded store's journal file calls, for failure-injection tests only (a full disk). */
  storeIo?: Partial<StoreIo>;
}

export async function startDaemon(config: Config, opts: StartOptions = {}): Promise<DaemonHandle> {
  const logger = opts.logger ?? createLogger({ level: config.logLevel });
  const clock = opts.clock ?? systemClock;
  process.umask(0o077); // every file we (and lowdb) create is 0600
  ensureDataDir(config.dataDir);
  const releaseLock = acquireLock(config.dataDir);
  /** Who this daemon is among those sharing a database (leases, socket-mode holders); new on every start. */
  const instanceId = `${os.hostname().slice(0, 32)}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  let store: Store | undefined;
  try {
    const dataExists = fs.existsSync(path.join(config.dataDir, 'appreg.json')) || fs.readdirSync(config.dataDir).some((f) => f.startsWith('appreg.journal'));
    const keyFile = config.keyFile ?? path.join(config.dataDir, 'secret.key');
    const keyExisted = fs.existsSync(keyFile); // before this start: a key beside a lost data file betrays it
    const masterKey = loadOrCreateKey(keyFile, dataExists);
    store = await openStore(config, logger, instanceId, { allowFresh: opts.allowFresh, stateFiles: keyExisted ? [keyFile] : [], io: opts.storeIo });
    const keyCheck = await checkMasterKey(store, masterKey, { keyFile, credentialsFile: path.join(config.dataDir, 'credentials.json') });
    if (keyCheck.how === 'trust-on-first-use') logger.warn('recorded a key-check value for the key file by trust on first use: nothing in the data directory could verify it', { keyFile });
    else if (keyCheck.how !== 'matched' && keyCheck.how !== 'new') logger.info('recorded a key-check value for the key file', { keyFile, verifiedBy: keyCheck.how });
    let baseUrl = '';
    const parts = composeDaemon({ config, logger, clock, store, masterKey, instanceId, baseUrl: () => baseUrl });
    const bootstrapped = await refreshCredentials(parts.identity, path.join(config.dataDir, 'credentials.json'), logger);

    let closing: Promise<void> | undefined;
    const app = createHttpApp(parts, () => baseUrl);
    const tokenEndpoint = createTokenHandler({ config, clock, logger, store, exchange: parts.oauth.exchange });
    // One request handler: the token endpoint is served ahead of express (measured: express's
    // per-request cost is most of an exchange's CPU), everything else by express.
    const server = http.createServer(
      // timeouts are checked every second rather than Node's 30 s, so a slow request ends near requestTimeoutMs
      { requestTimeout: config.requestTimeoutMs, headersTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
      (req, res) => {
        requests.started(res);
        if (closing) {
          // a kept-alive connection asking again while the daemon stops
          res.setHeader('connection', 'close');
          sendError(res, shuttingDown('The daemon is shutting down; try again in a moment.'), logger, { method: req.method, path: '(any)' });
        } else if (isTokenRequest(req)) tokenEndpoint(req, res);
        else app(req, res);
      },
    );
    const requests = inFlight();
    server.keepAliveTimeout = 65_000;
    server.on('clientError', answerClientError(logger));
    capConnections(server, { max: config.maxConnections, perAddress: config.maxConnectionsPerAddress }, logger);
    const sockets = createSocketServer({ config, logger, apps: parts.apps, sessions: parts.socket.sessions });
    server.on('upgrade', sockets.handleUpgrade);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new StartupError(`port ${config.port} on ${config.host} is already in use; pick another with --port (0 picks a free one)`, 'port_in_use') : e),
      );
      server.listen(config.port, config.host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    baseUrl = (config.publicUrl ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(/\/+$/, '');

    sockets.start();
    parts.delivery.worker.start();
    parts.workspace.scheduled.start();
    const sweeper = setInterval(() => {
      parts.oauth.consentSessions.sweep().catch((e) => logger.error('sweeping used sign-in tokens failed', { error: String(e) }));
      parts.oauth.exchange.sweep().catch((e) => logger.error('sweeping expired codes failed', { error: String(e) }));
    }, SWEEP_MS);
    sweeper.unref();

    const daemonFile = path.join(config.dataDir, 'daemon.json');
    writeFile0600(daemonFile, JSON.stringify({ url: baseUrl, pid: process.pid, startedAt: new Date(clock.now()).toISOString() }, null, 2) + '\n');

    /**
     * The stop order: take nothing new; let attempts and HTTP requests in flight finish; make
     * everything durable and let go of the data directory; only then close the websockets.
     * Socket-mode apps (the official SDK) reconnect once, two seconds after the close, and give up
     * for good if that fails, so their sockets are the last thing to go and a restart must be quick.
     */
    const close = () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        sockets.stopAccepting();
        app.endLiveStreams();
        server.closeIdleConnections();
        clearInterval(sweeper);
        await parts.workspace.scheduled.stop();
        await parts.delivery.worker.stop();
        await parts.socket.transport.close(); // this daemon no longer holds any app's websockets for the others
        await requests.drained(5000);
        server.closeIdleConnections();
        await parts.delivery.log.close();
        await parts.delivery.http.close();
        await store!.close();
        fs.rmSync(daemonFile, { force: true });
        releaseLock();
        await sockets.close();
        server.closeAllConnections();
        await stopped;
      })());
    return { url: baseUrl, port, parts, server, bootstrapped, close };
  } catch (e) {
    await store?.close().catch(() => {});
    releaseLock();
    throw e;
  }
}

/**
 * The store of record: PostgreSQL when a database URL is configured (loaded only then), else the
 * embedded store in the data dir. A damaged embedded store, or a database that cannot be reached or
 * migrated, refuses the start with one line (never the URL's password).
 */
async function openStore(config: Config, logger: Logger, instanceId: string, o: { allowFresh?: boolean; stateFiles: string[]; io?: Partial<StoreIo> }): Promise<Store> {
  if (config.databaseUrl) {
    const { openPostgresStore, redactUrl } = await import('../store/postgres/index.js');
    try {
      return await openPostgresStore({ url: config.databaseUrl, logger, instanceId, poolSize: config.databasePoolSize });
    } catch (e) {
      throw new StartupError(`refusing to start: the database at ${redactUrl(config.databaseUrl)} cannot be used: ${(e as Error).message}`, 'data');
    }
  }
  try {
    return await openLowdbStore({ dir: config.dataDir, fsync: config.fsync, logger, allowFresh: o.allowFresh, stateFiles: o.stateFiles, io: o.io });
  } catch (e) {
    if (e instanceof StoreCorruptError) throw new StartupError(`refusing to start: ${e.message} (the file was left unchanged)`);
    throw e;
  }
}

/** HTTP requests under way, so shutdown can wait for them (websockets are not requests once upgraded). */
function inFlight() {
  let open = 0;
  let idle: (() => void) | undefined;
  return {
    started(res: http.ServerResponse): void {
      open++;
      res.once('close', () => {
        if (--open === 0) idle?.();
      });
    },
    /** Resolves when none is under way, or after `maxMs` at the most. */
    drained(maxMs: number): Promise<void> {
      if (open === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const cut = setTimeout(resolve, maxMs);
        idle = () => {
          clearTimeout(cut);
          resolve();
        };
      });
    },
  };
}
