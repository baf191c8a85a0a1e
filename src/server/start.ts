/** Starts the daemon: lock, key, store, services, HTTP; returns a handle with close(). */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { systemClock, type Clock } from '../clock.js';
import { createSealer, deriveKey } from '../crypto.js';
import { openLowdbStore } from '../store/lowdb-store.js';
import { StoreCorruptError, type Store } from '../store/types.js';
import { createIdentityService } from '../services/identity.js';
import { createAppsService } from '../services/apps.js';
import type { ServiceContext } from '../services/context.js';
import { createHttpApp, type RouteModule } from './app.js';
import type { ServerDeps } from './deps.js';
import { acquireLock, ensureDataDir, loadOrCreateKey, StartupError, writeFile0600 } from './data-dir.js';

export { StartupError };

export interface DaemonHandle {
  url: string;
  port: number;
  deps: ServerDeps;
  server: http.Server;
  /** Set on first start: the owner's credentials (also written to credentials.json). */
  bootstrapped: { workspaceId: string; workspaceUserId: string; email: string; authToken: string } | null;
  close(): Promise<void>;
}

/** Hooks for what later layers add (OAuth, delivery, sockets) without touching this file's core. */
export interface Extension {
  routes?: RouteModule;
  /** Called once the server listens (e.g. attach a websocket server, start a worker). */
  start?(deps: ServerDeps, server: http.Server): void | Promise<void>;
  /** Called on shutdown before the store closes. */
  stop?(): void | Promise<void>;
}

export async function startDaemon(config: Config, opts: { logger?: Logger; clock?: Clock; extensions?: Extension[] } = {}): Promise<DaemonHandle> {
  const logger = opts.logger ?? createLogger({ level: config.logLevel });
  const clock = opts.clock ?? systemClock;
  process.umask(0o077); // every file we (and lowdb) create is 0600
  ensureDataDir(config.dataDir);
  const releaseLock = acquireLock(config.dataDir);
  let store: Store | undefined;
  try {
    const dataFile = path.join(config.dataDir, 'appreg.json');
    const dataExists = fs.existsSync(dataFile) || fs.readdirSync(config.dataDir).some((f) => f.startsWith('appreg.journal'));
    const master = loadOrCreateKey(config.keyFile ?? path.join(config.dataDir, 'secret.key'), dataExists);
    try {
      store = await openLowdbStore({ dir: config.dataDir, fsync: config.fsync });
    } catch (e) {
      if (e instanceof StoreCorruptError) throw new StartupError(`refusing to start: ${e.message} (the file was left unchanged)`);
      throw e;
    }
    const ctx: ServiceContext = { store: store!, sealer: createSealer(deriveKey(master, 'seal')), jwtKey: deriveKey(master, 'jwt'), clock, logger, config };
    let baseUrl = '';
    const deps: ServerDeps = { ctx, identity: createIdentityService(ctx), apps: createAppsService(ctx), baseUrl: () => baseUrl, shared: new Map() };
    const extensions = opts.extensions ?? [];
    const app = createHttpApp(deps, extensions.flatMap((x) => (x.routes ? [x.routes] : [])));

    const credFile = path.join(config.dataDir, 'credentials.json');
    const bootstrapped = await deps.identity.bootstrap();
    if (bootstrapped) writeFile0600(credFile, JSON.stringify(bootstrapped, null, 2) + '\n');
    else if (fs.existsSync(credFile)) {
      // The local owner's token runs out (managementTokenTtlSeconds): renew it so the CLI keeps working with no login.
      let cur: unknown;
      try {
        cur = JSON.parse(fs.readFileSync(credFile, 'utf8'));
      } catch (e) {
        logger.warn('credentials.json is unreadable; left as it is', { file: credFile, error: (e as Error).message });
      }
      const renewed = cur === undefined ? undefined : await deps.identity.renewLocalCredentials(cur);
      if (renewed) {
        writeFile0600(credFile, JSON.stringify(renewed, null, 2) + '\n');
        logger.info('renewed the management token in credentials.json (it had expired, was revoked or was close to expiry)', { file: credFile });
      }
    }

    const server = http.createServer(app);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(e.code === 'EADDRINUSE' ? new StartupError(`port ${config.port} on ${config.host} is already in use; pick another with --port (0 picks a free one)`) : e),
      );
      server.listen(config.port, config.host, () => resolve());
    });
    const port = (server.address() as AddressInfo).port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    baseUrl = (config.publicUrl ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(/\/+$/, '');
    for (const x of extensions) await x.start?.(deps, server);
    const daemonFile = path.join(config.dataDir, 'daemon.json');
    writeFile0600(daemonFile, JSON.stringify({ url: baseUrl, pid: process.pid, startedAt: new Date(clock.now()).toISOString() }, null, 2) + '\n');

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        for (const x of [...extensions].reverse()) await x.stop?.();
        // In-flight requests finish (their writes are awaited by the handlers); then idle sockets go.
        const forceAfter = setTimeout(() => server.closeAllConnections(), 5000);
        await stopped;
        clearTimeout(forceAfter);
        await store!.close();
        fs.rmSync(daemonFile, { force: true });
        releaseLock();
      })());
    return { url: baseUrl, port, deps, server, bootstrapped, close };
  } catch (e) {
    await store?.close().catch(() => {});
    releaseLock();
    throw e;
  }
}
