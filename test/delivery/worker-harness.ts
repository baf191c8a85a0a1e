/**
 * A delivery worker for tests that drive it in this process: its HTTP attempts answered by the test
 * (no network), no socket-mode connection anywhere, its delivery log in the store, and the apps a
 * workspace event of the outbox goes to named by the test.
 */
import type { Config } from '../../src/config.js';
import type { Logger } from '../../src/logger.js';
import type { Clock } from '../../src/clock.js';
import type { Store } from '../../src/store/types.js';
import type { AppRecord } from '../../src/model/identity.js';
import type { AppsService } from '../../src/services/apps.js';
import { createDispatcher } from '../../src/delivery/dispatcher.js';
import type { HttpTransport } from '../../src/delivery/http-transport.js';
import { openStoreDeliveryLog } from '../../src/delivery/store-log.js';
import type { SocketTransport } from '../../src/delivery/socket-transport.js';
import type { AppDirectory, AttemptResult, SendRequest } from '../../src/delivery/types.js';
import { createDeliveryWorker } from '../../src/delivery/worker.js';

/** App `n`, in HTTP mode, subscribed to NEW_MESSAGE; and a directory of such apps (each signing with 'sig'). */
export const eventApp = (n: number): AppRecord =>
  ({
    id: `app_${n}`,
    ownerId: 'wu_1',
    manifest: {
      name: `a${n}`,
      displayName: `A${n}`,
      eventSubscriptions: { url: `http://127.0.0.1:9/events/${n}`, events: ['NEW_MESSAGE'] },
    },
  }) as unknown as AppRecord;
export const directoryOf = (list: readonly AppRecord[]): AppsService =>
  ({
    byId: async (id: string) => list.find((a) => a.id === id),
    secretsOf: () => ({ signingSecret: 'sig' }),
  }) as unknown as AppsService;

/** Socket mode with no app connected, on any daemon. */
const NO_SOCKET: SocketTransport = {
  send: async () => ({ outcome: 'no_connection', latencyMs: 0 }),
  connections: async () => 0,
  queued: async () => 0,
  onKeptSettled() {},
  discard: async () => false,
  close: async () => {},
};

export interface TestWorkerOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'> & Partial<Pick<Config, 'deliveryLeaseMs'>>;
  apps: AppDirectory;
  /** The daemon's instance id. */
  name: string;
  soleDaemon: boolean;
  /** How each HTTP attempt ends. */
  send: (req: SendRequest) => Promise<AttemptResult>;
  /** The apps every workspace event of the outbox goes to, read at each drain. */
  recipients: () => Array<{ app: AppRecord; workspaceUserIds: string[] }>;
}

/** The worker (not started), its log and its dispatcher; the outbox is found by the worker's polls (no hints). */
export function testWorker(o: TestWorkerOptions) {
  const { store, clock, logger, apps } = o;
  const http = { send: o.send, post: o.send, close: async () => {} } as unknown as HttpTransport;
  const log = openStoreDeliveryLog({ store, retentionDays: 7, clock, logger });
  const dispatcher = createDispatcher({ clock, logger, apps, http, socket: NO_SOCKET, log });
  const worker = createDeliveryWorker({
    store,
    clock,
    logger,
    config: o.config,
    apps,
    dispatcher,
    socket: NO_SOCKET,
    instanceId: o.name,
    soleDaemon: o.soleDaemon,
    audience: { recipientsOf: async (evs) => evs.map(() => o.recipients()) },
    outboxWritten: () => () => {},
  });
  return { worker, log, dispatcher };
}
