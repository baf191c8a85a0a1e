/**
 * Starts the daemon: data directory, lock, key, store, the composed parts, HTTP and websocket
 * listening, the background work; returns a handle whose close() stops it all in order.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import type { Config } from '../config.js';
import { createLogger, type Logger } from '../logger.js';
import { systemClock, type Clock } from '../clock.js';
import { APPREG_VERSION } from '../version.js';
import { openEmbeddedStore } from '../store/embedded-store.js';
import type { StoreIo } from '../store/fsync.js';
import { StoreCorruptError, type Store, type StoreReads } from '../store/types.js';
import { composeDaemon, type Daemon } from './compose.js';
import {
  acquireLock,
  checkDataDirStamp,
  stampDataDir,
  ensureDataDir,
  readOrMakeKey,
  removeIfEmpty,
  StartupError,
  writeFile0600,
  writeKey,
} from './data-dir.js';
import { refreshCredentials, type LocalCredentials } from './credentials.js';
import { recordMasterKey, verifyMasterKey, type KeyVerdict } from './key-check.js';
import { bindServer, type BoundServer } from './http-server.js';
import { isTokenRequest } from './routes/oauth-token.js';
import { HANDOVER_PROTOCOL } from './handover.js';
import { sendError } from './respond.js';
import { shuttingDown } from '../errors.js';
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';

export { StartupError };
/** For `appreg serve`, which loads the server through this module only. */
export { limitHeapGrowth } from './heap-growth.js';
export { handOver, signalQueue, takeOver, whoTakesOver } from './handover.js';

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
  /**
   * The first part of a stop, for a hand-over (`serve --takeover`): everything close() does but
   * closing the app websockets; the lock, the port and the store are let go of. close() then ends it.
   */
  letGo(opts?: { compact?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export interface StartOptions {
  logger?: Logger;
  clock?: Clock;
  allowFresh?: boolean;
  /** The embedded store's journal file calls, for failure-injection tests only (a full disk). */
  storeIo?: Partial<StoreIo>;
  /** How long the stop waits for HTTP requests in flight before it closes their connections (default 5000 ms). */
  stopWaitMs?: number;
}

export async function startDaemon(config: Config, opts: StartOptions = {}): Promise<DaemonHandle> {
  const logger = opts.logger ?? createLogger({ level: config.logLevel });
  const clock = opts.clock ?? systemClock;
  process.umask(0o077); // every file we create is 0600
  /** Who this daemon is among those sharing a database (leases, socket-mode holders); new on every start. */
  const instanceId = `${os.hostname().slice(0, 32)}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  const credentialsFile = path.join(config.dataDir, 'credentials.json');

  // 1. Everything that can refuse the start, before anything is written: the lock (given back on a
  //    refusal), the key file (read; a new one is made in memory only), the port (bound), the store
  //    (its files read and checked, or the database reached) and the key against what it holds. A
  //    refused start leaves every file as it found it, and takes a data directory it made away again.
  const createdDir = ensureDataDir(config.dataDir);
  let releaseLock: (() => void) | undefined;
  let bound: BoundServer | undefined;
  let store: Store | undefined;
  let writing = false;
  try {
    releaseLock = acquireLock(config.dataDir);
    checkDataDirStamp(config.dataDir, APPREG_VERSION);
    const dataExists =
      fs.existsSync(path.join(config.dataDir, 'appreg.json')) ||
      fs.readdirSync(config.dataDir).some((f) => f.startsWith('appreg.journal'));
    const keyFile = config.keyFile ?? path.join(config.dataDir, 'secret.key');
    const keyExisted = fs.existsSync(keyFile); // before this start: a key beside a lost data file betrays it
    const { key: masterKey, made: keyMade } = readOrMakeKey(keyFile, dataExists);
    bound = await bindServer(config, logger, clock);
    const { server, port } = bound;
    let verdict: KeyVerdict | undefined;
    const keyOpts = {
      keyFile,
      credentialsFile,
      now: () => new Date(clock.now()),
      where: config.databaseUrl ? ('the database' as const) : ('this data directory' as const),
    };
    store = await openStore(config, logger, instanceId, {
      clock,
      allowFresh: opts.allowFresh,
      stateFiles: keyExisted ? [keyFile] : [],
      io: opts.storeIo,
      beforeWrite: async (reads) => void (verdict = await verifyMasterKey(reads, masterKey, keyOpts)),
    });

    // 2. Accepted: the writes of a start — the key (first start), the key-check value, the owner's
    //    credentials (first start: the workspace too), then serving, then daemon.json.
    writing = true;
    stampDataDir(config.dataDir, APPREG_VERSION);
    if (keyMade) writeKey(keyFile, masterKey);
    const keyCheck = await recordMasterKey(store, must(verdict), masterKey, keyOpts);
    if (keyCheck.how === 'trust-on-first-use')
      logger.warn(
        'recorded a key-check value for the key file by trust on first use: nothing in the data directory could verify it',
        { keyFile },
      );
    else if (keyCheck.how !== 'matched' && keyCheck.how !== 'new')
      logger.info('recorded a key-check value for the key file', { keyFile, verifiedBy: keyCheck.how });
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const baseUrl = (config.publicUrl ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(
      /\/+$/,
      '',
    );
    const parts = composeDaemon({ config, logger, clock, store, masterKey, instanceId, baseUrl: () => baseUrl });
    const bootstrapped = await refreshCredentials(parts.identity, credentialsFile, logger);

    let closing: Promise<void> | undefined;
    let lettingGo: Promise<void> | undefined;
    const { app, tokenEndpoint, appGet, sockets } = parts.front;
    const requests = inFlight();
    // One request handler: the token endpoint and the app get are served ahead of express
    // (measured: express's per-request cost is most of their CPU), everything else by express.
    bound.serve((req, res) => {
      requests.started(res);
      let get: RegExpExecArray | null;
      if (lettingGo) {
        // a kept-alive connection asking again while the daemon stops
        res.setHeader('connection', 'close');
        sendError(res, shuttingDown('The daemon is shutting down; try again in a moment.'), logger, {
          method: req.method,
          path: '(any)',
        });
      } else if (isTokenRequest(req)) tokenEndpoint(req, res);
      else if ((get = appGet.match(req))) appGet.serve(req, res, get);
      else app(req, res);
    }, sockets.handleUpgrade);

    sockets.start();
    parts.delivery.worker.start();
    parts.workspace.scheduled.start();
    const sweeper = clock.setInterval(
      () =>
        Promise.all([
          parts.oauth.webSessions
            .sweep()
            .catch((e) => logger.error('sweeping used sign-in tokens failed', { error: String(e) })),
          parts.oauth.codes.sweep().catch((e) => logger.error('sweeping expired codes failed', { error: String(e) })),
        ]),
      SWEEP_MS,
    );

    const daemonFile = path.join(config.dataDir, 'daemon.json');
    writeFile0600(
      daemonFile,
      JSON.stringify(
        {
          url: baseUrl,
          pid: process.pid,
          startedAt: new Date(clock.now()).toISOString(),
          handover: HANDOVER_PROTOCOL,
        },
        null,
        2,
      ) + '\n',
    );

    /**
     * The stop order: take nothing new; let attempts and HTTP requests in flight finish; make
     * everything durable and let go of the data directory; only then close the websockets.
     * Socket-mode apps (the official SDK) reconnect once, two seconds after the close, and give up
     * for good if that fails, so their sockets are the last thing to go and a restart must be quick.
     */
    const unlock = releaseLock;
    let stopped: Promise<void> | undefined;
    const letGo = (o: { compact?: boolean } = {}) =>
      (lettingGo ??= (async () => {
        // the port is free from here; the connections still open (websockets too) end below
        stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        sockets.stopAccepting();
        app.endLiveStreams();
        server.closeIdleConnections();
        clock.clear(sweeper);
        await parts.workspace.scheduled.stop();
        await parts.delivery.worker.stop();
        await parts.socket.transport.close(); // this daemon no longer holds any app's websockets for the others
        await requests.drained(opts.stopWaitMs ?? 5000);
        server.closeIdleConnections();
        await parts.delivery.log.close();
        await parts.delivery.http.close();
        await must(store).close(o);
        fs.rmSync(daemonFile, { force: true });
        unlock();
      })());
    const close = () =>
      (closing ??= (async () => {
        await letGo();
        await sockets.close();
        server.closeAllConnections();
        await stopped;
      })());
    return { url: baseUrl, port, parts, server, bootstrapped, letGo, close };
  } catch (e) {
    // refused before anything was written: the store was never opened for writing (nothing to close)
    // and the files are as they were; a failure after that closes the store as a stop does
    if (writing) await store?.close().catch(() => {});
    await bound?.abandon();
    releaseLock?.();
    if (createdDir && !writing) removeIfEmpty(config.dataDir, createdDir);
    throw e;
  }
}

/**
 * The store of record: PostgreSQL when a database URL is configured (loaded only then), else the
 * embedded store in the data dir. A damaged embedded store, or a database that cannot be reached or
 * migrated, refuses the start with one line (never the URL's password).
 */
async function openStore(
  config: Config,
  logger: Logger,
  instanceId: string,
  o: {
    clock: Clock;
    allowFresh?: boolean;
    stateFiles: string[];
    io?: Partial<StoreIo>;
    beforeWrite: (reads: StoreReads) => Promise<void>;
  },
): Promise<Store> {
  if (config.databaseUrl) {
    const { openPostgresStore, redactUrl } = await import('../store/postgres/index.js');
    try {
      return await openPostgresStore({
        url: config.databaseUrl,
        logger,
        clock: o.clock,
        instanceId,
        poolSize: config.databasePoolSize,
        beforeWrite: o.beforeWrite,
      });
    } catch (e) {
      if (e instanceof StartupError) throw e; // the key check's own refusal
      throw new StartupError(
        `refusing to start: the database at ${redactUrl(config.databaseUrl)} cannot be used: ${messageOf(e)}`,
        'data',
      );
    }
  }
  try {
    return await openEmbeddedStore({
      dir: config.dataDir,
      fsync: config.fsync,
      logger,
      clock: o.clock,
      allowFresh: o.allowFresh,
      stateFiles: o.stateFiles,
      io: o.io,
      beforeWrite: o.beforeWrite,
    });
  } catch (e) {
    if (e instanceof StoreCorruptError)
      throw new StartupError(`refusing to start: ${e.message} (the file was left unchanged)`);
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
    /**
     * Resolves when none is under way, or after `maxMs` at the most. A bound on the stop, not a
     * time the daemon keeps: the runtime's timer, so a daemon on a test clock stops without one.
     */
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
