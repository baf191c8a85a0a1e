/**
 * The composition root: every part of the daemon, built once, in dependency order —
 * identity → apps → OAuth → delivery log and transports → socket sessions → delivery worker →
 * workspace → the front (the express app, the two fast paths served ahead of it, the websocket
 * server) — each with one call shape, `createX(deps)`, handed exactly what it uses. No I/O beyond
 * what the parts do when built (the delivery log and the file blobs open their directories);
 * start.ts owns the data directory, the lock, listening, timers, signals and the stop order.
 */
import path from 'node:path';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { createSealer, deriveKey } from '../crypto.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/types.js';
import { createOutboxWriter } from '../services/outbox-writer.js';
import {
  createAccounts,
  createActAs,
  createIdentityService,
  createLocalOwner,
  createManagementTokens,
  createMembers,
  createPasswordLogin,
  createWorkspaces,
} from '../services/identity.js';
import { createAppsService } from '../services/apps.js';
import { createLeadLogin } from '../services/lead-login.js';
import type { ServiceContext } from '../services/context.js';
import { createGrants } from '../services/oauth/grants.js';
import { createAuthorizationRequests } from '../services/oauth/authorization-request.js';
import { createCodeExchange } from '../services/oauth/code-exchange.js';
import { createCodeSweep } from '../services/oauth/code-sweep.js';
import { createAppTokens } from '../services/oauth/app-tokens.js';
import { createRevocation } from '../services/oauth/revocation.js';
import { createWebSessions } from '../services/oauth/web-sessions.js';
import { createSocketSessions } from '../services/socket-sessions.js';
import { createDeliveriesService } from '../services/deliveries.js';
import { createEgressPolicy } from '../delivery/egress.js';
import { createHttpTransport } from '../delivery/http-transport.js';
import { openFileDeliveryLog } from '../delivery/file-log.js';
import { openStoreDeliveryLog } from '../delivery/store-log.js';
import { createSocketTransport } from '../delivery/socket-transport.js';
import { createDispatcher } from '../delivery/dispatcher.js';
import { createDeliveryWorker } from '../delivery/worker.js';
import { createWorkspace } from '../services/workspace/workspace.js';
import { createEventRecipients } from '../services/workspace/events.js';
import { createTriggerSources } from '../services/trigger-sources.js';
import { openFileBlobs } from '../files/blob-store.js';
import { storeFileBlobs } from '../files/store-blobs.js';
import { createHttpApp } from './app.js';
import { createAppGetHandler } from './routes/apps.js';
import { createTokenHandler } from './routes/oauth-token.js';
import { createSocketServer } from './socket-server.js';

export interface Foundation {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: Store;
  /** The master key (secret.key): sealing keys and the token-signing key are derived from it. */
  masterKey: Buffer;
  /** This daemon among those sharing one database (delivery leases, socket-mode holders). */
  instanceId: string;
  /** The daemon's URL once it listens (the files it serves are handed out as absolute URLs). */
  baseUrl: () => string;
}

export function composeDaemon(base: Foundation) {
  const { config, logger, clock, store } = base;
  // The one place that knows which store runs. The embedded store has one daemon: its delivery log
  // and uploaded files live in the data dir, leases of its earlier run are void at start, nobody
  // else holds socket-mode connections, and counting a channel is cheap. PostgreSQL is shared by
  // several daemons: the log and the bytes live in the database, a lease runs out, a socket-mode
  // attempt is relayed to the daemon holding the app's connection, and a count reads rows.
  const shared = store.kind === 'postgres';
  const ctx: ServiceContext = {
    store,
    sealer: createSealer(deriveKey(base.masterKey, 'seal')),
    jwtKey: deriveKey(base.masterKey, 'jwt'),
    clock,
    logger,
    config,
  };

  // every event caused by a change is written to the outbox in the change's commit; the worker drains it
  const outbox = createOutboxWriter({ store, clock, instanceId: base.instanceId });
  // identity by concern: who belongs where, workspaces, accounts, management tokens, act-as, passwords, the local owner
  const members = createMembers({ store });
  const mgmtTokens = createManagementTokens({ store, clock, jwtKey: ctx.jwtKey, config });
  const workspaces = createWorkspaces({ store, clock, members });
  const accounts = createAccounts({ store, clock, outbox });
  const identity = createIdentityService({
    members,
    workspaces,
    accounts,
    tokens: mgmtTokens,
    actAs: createActAs({ store, members, tokens: mgmtTokens }),
    passwords: createPasswordLogin({ store, members, tokens: mgmtTokens }),
    localOwner: createLocalOwner({
      store,
      clock,
      jwtKey: ctx.jwtKey,
      config,
      workspaces,
      accounts,
      tokens: mgmtTokens,
    }),
  });
  const apps = createAppsService(ctx);
  const leads = createLeadLogin({ ...ctx, identity });

  const grants = createGrants({ store, apps });
  const oauth = {
    grants,
    requests: createAuthorizationRequests({ ...ctx, apps, identity, grants }),
    exchange: createCodeExchange({ ...ctx, apps, grants }),
    codes: createCodeSweep(ctx),
    appTokens: createAppTokens({ store, apps, identity }),
    revocation: createRevocation({ ...ctx, apps, identity, grants, outbox }),
    webSessions: createWebSessions({ clock, key: deriveKey(base.masterKey, 'consent-forms'), store }),
  };

  const egress = createEgressPolicy(config);
  const http = createHttpTransport({ clock, egress, maxResponseBytes: config.deliveryMaxResponseBytes });
  const log = shared
    ? openStoreDeliveryLog({ store, retentionDays: config.deliveryLogRetentionDays, clock, logger })
    : openFileDeliveryLog({
        dir: path.join(config.dataDir, 'deliveries'),
        maxBytes: config.deliveryLogMaxBytes,
        retentionDays: config.deliveryLogRetentionDays,
        clock,
        logger,
      });

  const socketSessions = createSocketSessions(ctx);
  const socketTransport = createSocketTransport({
    sessions: socketSessions,
    clock,
    queue: { store, logger, config, instanceId: base.instanceId, relay: shared },
  });
  /** What an app's page and its get say of its socket-mode connections (on PostgreSQL: in every daemon). */
  const socketStatus = async (appId: string) => ({
    connections: await socketTransport.connections(appId),
    queuedEvents: await socketTransport.queued(appId),
  });

  const dispatcher = createDispatcher({ clock, logger, apps, http, socket: socketTransport, log });
  const worker = createDeliveryWorker({
    store,
    clock,
    logger,
    config,
    apps,
    dispatcher,
    socket: socketTransport,
    instanceId: base.instanceId,
    soleDaemon: !shared,
    audience: createEventRecipients({ store }),
    outboxWritten: outbox.onWritten,
  });
  const deliveries = createDeliveriesService({ config, clock, apps, grants, dispatcher, worker, http });

  // the local workspace (channels, messages) the platform API works on; its changes write their events to the outbox
  // uploaded files: records in the store, bytes under <dataDir>/files (the workspace sees only FileBlobs)
  // on PostgreSQL the bytes are in the database too, so that every daemon serves every file
  const blobs = shared
    ? storeFileBlobs({ store })
    : openFileBlobs({ dir: path.join(config.dataDir, 'files'), fsync: config.fsync });
  const fileUrl = (fileId: string) => `${base.baseUrl()}/files/${fileId}`;
  const callUrl = (code: string) => `${base.baseUrl()}/calls/${code}`;
  const workspace = createWorkspace({
    store,
    clock,
    logger,
    config,
    events: outbox,
    blobs,
    fileUrl,
    callUrl,
    instanceId: base.instanceId,
    countEveryPost: !shared,
  });
  // a test block interaction's message or view, made real before it is sent (it needs the workspace)
  const triggerSources = createTriggerSources({ workspace, grants, apps });

  const parts = {
    config,
    logger,
    clock,
    store,
    identity,
    leads,
    apps,
    oauth,
    egress,
    delivery: { http, log, dispatcher, worker },
    deliveries,
    triggerSources,
    socket: { sessions: socketSessions, transport: socketTransport, status: socketStatus },
    workspace,
  };

  // The front: one request handler (start.ts) sends the token endpoint and the app get, the two
  // most frequent calls, to their fast paths on plain node:http (express's per-request cost was
  // most of their CPU), everything else to the express app; upgrades go to the websocket server.
  const front = {
    app: createHttpApp(parts, base.baseUrl),
    tokenEndpoint: createTokenHandler({ config, clock, logger, store, exchange: oauth.exchange }),
    appGet: createAppGetHandler({ identity, apps, socketStatus, logger }),
    sockets: createSocketServer({ config, clock, logger, apps, sessions: socketSessions }),
  };
  return { ...parts, front };
}

export type Daemon = ReturnType<typeof composeDaemon>;
