/**
 * A build's daemon run in this process, from that build's own compiled modules
 * (<root>/dist/src/…, imported by path), for the benchmarks that measure in-process paths
 * (a delivery trigger through the engine, a socket-mode round trip). Two generations of the
 * daemon's start-up are known: the composition root (`startDaemon` returns `parts`, since
 * b1783e1) and the one before it (`extensions` passed in, services found in `deps`, as at
 * db61b8d). Only what the benchmarks call is exposed, the same for both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

interface Principal {
  workspaceId: string;
  workspaceUserId: string;
  jti: string;
}
/** What a benchmark gives engine.trigger (a slash command here). */
interface Trigger {
  appId: string;
  kind: 'slash-command';
  command: string;
  text?: string;
}
interface AppRecordLike {
  id: string;
  appKey?: unknown;
  signingSecret?: unknown;
}

export interface InProcessDaemon {
  url: string;
  principal: Principal;
  createApp(manifest: Record<string, unknown>): Promise<{ id: string; appKey: string; signingSecret: string }>;
  /** The app's record as the store holds it (what the socket transport is given). */
  appById(id: string): Promise<AppRecordLike>;
  trigger(t: Trigger): Promise<{ outcome: string; ephemeralMessage?: string }>;
  /** The socket-mode transport (its send() signature is the build's own). */
  socketTransport(): { send(input: Record<string, unknown>): Promise<{ outcome: string }> };
  close(): Promise<void>;
}

type Module = Record<string, unknown>;
interface Handle {
  url: string;
  bootstrapped: { workspaceId: string; workspaceUserId: string } | null;
  close(): Promise<void>;
  parts?: Parts;
  deps?: Deps;
}
interface AppsService {
  /** The app made: wrapped with its warnings up to 49b33d9, the app itself once manifests are checked at the edge. */
  create(p: Principal, m: Record<string, unknown>): Promise<{ app: AppRecordLike } | AppRecordLike>;
  byId(id: string): AppRecordLike | undefined | Promise<AppRecordLike | undefined>;
}
interface Engine {
  trigger(p: Principal, t: Trigger): Promise<{ outcome: string; ephemeralMessage?: string }>;
}
interface SocketHandle {
  transport: { send(input: Record<string, unknown>): Promise<{ outcome: string }> };
}
interface Parts {
  apps: AppsService;
  deliveries: Engine;
  socket: SocketHandle;
}
interface Deps {
  apps: AppsService;
}

/** Start the daemon of the build at `root` on `dataDir` (bootstrapping it), with these settings over the defaults. */
export async function startInProcess(
  root: string,
  dataDir: string,
  settings: Record<string, unknown>,
): Promise<InProcessDaemon> {
  const dist = path.join(root, 'dist/src');
  if (!fs.existsSync(path.join(dist, 'server/start.js')))
    throw new Error(`${root} is not built: no dist/src/server/start.js`);
  const mod = (p: string): Promise<Module> => import(pathToFileURL(path.join(dist, p)).href) as Promise<Module>;
  const { loadConfig } = (await mod('config.js')) as {
    loadConfig(flags: Record<string, unknown>, env: Record<string, string>): Record<string, unknown>;
  };
  const { createLogger } = (await mod('logger.js')) as { createLogger(o: { level: string }): unknown };
  const { startDaemon } = (await mod('server/start.js')) as {
    startDaemon(config: unknown, opts: Record<string, unknown>): Promise<Handle>;
  };
  // BENCH_DAEMON_LOG=info: the daemon logs as `serve` does by default, on this process's stderr (which
  // BENCH_DAEMON_LOG_FILE sends to a file, bench/host.ts): the cost of logging, measured with the build's own logger
  const level = process.env.BENCH_DAEMON_LOG ?? 'warn';
  const config = { ...loadConfig({ dataDir, port: 0 }, {}), logLevel: level, ...settings };
  const opts: Record<string, unknown> = { logger: createLogger({ level }) };
  // the generation before the composition root mounted OAuth, delivery and socket mode as extensions
  const extensionsFile = path.join(dist, 'server/extensions.js');
  const older = fs.existsSync(extensionsFile);
  if (older)
    opts.extensions = (
      (await mod('server/extensions.js')) as { defaultExtensions(c: unknown): unknown }
    ).defaultExtensions(config);
  const handle = await startDaemon(config, opts);
  try {
    const b = handle.bootstrapped;
    if (!b) throw new Error('the daemon did not bootstrap (the data directory was not empty)');
    let apps: AppsService;
    let engine: Engine;
    let socket: () => SocketHandle;
    if (handle.parts) {
      const parts = handle.parts;
      apps = parts.apps;
      engine = parts.deliveries;
      socket = () => parts.socket;
    } else if (handle.deps && older) {
      const deps = handle.deps;
      apps = deps.apps;
      const { getDelivery } = (await mod('delivery/engine.js')) as { getDelivery(d: unknown): Engine | undefined };
      const found = getDelivery(deps);
      if (!found) throw new Error('the build published no delivery engine');
      engine = found;
      const { getSocketMode } = (await mod('server/socket-extension.js')) as {
        getSocketMode(d: unknown): SocketHandle | undefined;
      };
      socket = () =>
        getSocketMode(deps) ??
        (() => {
          throw new Error('the build published no socket mode');
        })();
    } else {
      throw new Error(
        `the benchmarks do not know this build's daemon: startDaemon returned neither parts nor deps (${root})`,
      );
    }
    const principal = { workspaceId: b.workspaceId, workspaceUserId: b.workspaceUserId, jti: 'bench' };
    return {
      url: handle.url,
      principal,
      async createApp(manifest) {
        const made = await apps.create(principal, manifest);
        const app = 'app' in made ? made.app : made;
        return { id: app.id, appKey: String(app.appKey), signingSecret: String(app.signingSecret) };
      },
      async appById(id) {
        const app = await apps.byId(id);
        if (!app) throw new Error(`no app ${id}`);
        return app;
      },
      trigger: (t) => engine.trigger(principal, t),
      socketTransport: () => socket().transport,
      close: () => handle.close(),
    };
  } catch (e) {
    await handle.close();
    throw e;
  }
}
