/**
 * Before a suite's tests and after them (docs/testing.md, "What a run does"): the app registered
 * from its manifest (its local URLs pointed at the port it gets) and started with its settings, or
 * the running app's registration found; the suite's users made; the app authorized by the users
 * the install names, through the app's own redirect page as a browser would; and at the end the
 * app stopped, uninstalled and deleted (an app the run registered), the act-as tokens revoked and
 * the run's folder removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError, EXIT } from '../client/exit.js';
import type { Client } from '../client/daemon-client.js';
import type { Api, AppRecord, Person } from './api.js';
import { freePort, startAppProcess, waitReady, type AppProcess } from './app-process.js';
import { appScope, type Preparing, type SuiteEnv } from './context.js';
import { resolveDeep, RefError, type Scope } from './refs.js';
import type { Suite } from './suite.js';
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';
import type { Resolved } from './steps.js';
import { appSide, daemonSide } from '../client/sdk-env.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** The manifest with every URL on this machine pointed at `port` (its path kept). */
export function pointedAt(manifest: unknown, port: number): unknown {
  const fix = (v: unknown): unknown => {
    if (typeof v === 'string' && /^https?:\/\//.test(v)) {
      try {
        const u = new URL(v);
        if (LOOPBACK.has(u.hostname)) {
          u.port = String(port);
          return u.toString().replace(/\/$/, v.endsWith('/') ? '/' : '');
        }
      } catch {
        /* not a URL: as it is */
      }
      return v;
    }
    if (Array.isArray(v)) return v.map(fix);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === '$schema' ? x : fix(x)]));
    return v;
  };
  return fix(manifest);
}

/** A name of the suite's as a display name: dev → Dev. */
const displayName = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * A setup that could not be done: the suite's tests fail with this (exit 6), unlike a refusal of the daemon (exit 4).
 */
class SetupFailed extends Error {
  constructor(
    message: string,
    public readonly appOutput?: string[],
  ) {
    super(message);
  }
}

export interface SuiteSetup {
  env: Preparing;
  /** The run, once its app is there and ready (not when the setup failed). */
  run?: SuiteEnv;
  /** What the report says about the app: how it was started and when it was ready. */
  started?: string;
  ready?: string;
  /** Why the tests cannot run, when the app could not be started, readied or installed. */
  failed?: SetupFailed;
  teardown(): Promise<void>;
}

function resolved<T>(v: T, scope: Scope, what: string): Resolved<T> {
  try {
    return resolveDeep(v, scope);
  } catch (e) {
    if (e instanceof RefError) throw new CliError(`${what}: ${e.message}`, EXIT.invalidInput);
    throw e;
  }
}

/** A field of the app that is text (its id, its URL): a reference in it must name text, not an object. */
function resolvedText(v: string, scope: Scope, what: string): string {
  const r = resolved(v, scope, what);
  if (typeof r !== 'string')
    throw new CliError(`${what}: ${v} is ${JSON.stringify(r)}, and it must be text`, EXIT.invalidInput);
  return r;
}

/** The consent screen's `scopes`: user scopes, then bot scopes prefixed bot:. */
function scopesParam(app: AppRecord, suite: Suite): string {
  const install = suite.install || undefined;
  const user = install?.userScopes ?? app.scopes.userScopes;
  const bot = app.bot === false ? [] : (install?.botScopes ?? app.scopes.botScopes);
  return [...user, ...bot.map((s) => `bot:${s}`)].join(',');
}

/**
 * Authorize the app as `client`'s user and send the code to the app's redirect page; fails unless the app exchanged it.
 */
async function authorize(api: Api, client: Client, app: AppRecord, suite: Suite, who: string): Promise<void> {
  const redirectUrl = app.redirectUrls[0];
  if (!redirectUrl)
    throw new SetupFailed(`the app has no redirect URL: ${who} cannot authorize it (or write install: false)`);
  let granted;
  try {
    granted = await api.grant(client, { clientId: app.id, scopes: scopesParam(app, suite), redirectUrl });
  } catch (e) {
    if (e instanceof CliError && e.exitCode === EXIT.rejected)
      throw new SetupFailed(`${who} could not authorize the app: ${e.message}`);
    throw e;
  }
  let page: string | undefined;
  let pageAt = 0;
  const visit = client.visitApp(granted.redirectUrl).then(
    (r) => void ((page = `${r.status}${r.body ? `: ${r.body.slice(0, 200)}` : ''}`), (pageAt = Date.now())),
    (e: unknown) => void ((page = messageOf(e)), (pageAt = Date.now())),
  );
  // the app exchanges the code while (or after) its page answers: once it has answered, 2 s more
  for (const end = Date.now() + 15_000; Date.now() < end && !(pageAt && Date.now() - pageAt > 2000);) {
    if ((await api.codeState(client, granted.code)).state === 'exchanged') return;
    const pause = new Promise((r) => setTimeout(r, 25));
    await (pageAt ? pause : Promise.race([visit, pause]));
  }
  if ((await api.codeState(client, granted.code)).state === 'exchanged') return;
  throw new SetupFailed(
    `${who} authorized the app, but it did not exchange the code sent to ${new URL(redirectUrl).origin}${new URL(redirectUrl).pathname}${page !== undefined ? ` (its page answered ${page})` : ' (its page did not answer)'}`,
  );
}

/** Everything a suite's tests need; a setup that the app failed comes back as `failed`, not thrown. */
export async function setUpSuite(o: {
  api: Api;
  suite: Suite;
  daemonUrl: string;
  runId: string;
  env: SuiteEnv['env'];
  ownDaemon: boolean;
}): Promise<SuiteSetup> {
  const { api, suite } = o;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-test-run-'));
  const me = await api.whoami();
  const users = new Map<string, Person>([['owner', { id: me.id, name: me.name, email: me.email }]]);
  const env: Preparing = {
    api,
    suite,
    users,
    run: { dir, id: o.runId },
    daemonUrl: o.daemonUrl,
    env: o.env,
  };
  let proc: AppProcess | undefined;
  let registered: string | undefined;
  const installedBy: string[] = [];
  const teardown = async () => {
    await proc?.stop();
    // an app this run registered goes, with its installation; one already running stays as it was
    if (registered && !o.ownDaemon) {
      if (installedBy.length) await api.uninstall(registered).catch(() => undefined);
      await api.deleteApp(registered).catch(() => undefined);
    }
    // the run's own daemon goes with its store: its tokens need no revoking
    if (!o.ownDaemon) await api.release();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const result: SuiteSetup = { env, teardown };
  try {
    const scope = appScope(env);
    // the suite's users are made while the app starts (a password hash each: not nothing)
    const made = Promise.all(
      Object.entries(suite.users).map(async ([name, u]) =>
        users.set(name, await api.ensureUser(`${name}.appreg-test@appreg.test`, u.name ?? displayName(name))),
      ),
    );
    made.catch(() => undefined);
    // the channels the tests use besides their own: one of that name may be there already (a daemon given)
    for (const name of suite.channels)
      await api.createChannel(name).catch((e: unknown) => {
        if (!(e instanceof CliError && /already exists/.test(e.message))) throw e;
      });

    if (suite.app.start) {
      const start = suite.app.start;
      const port = start.port ?? (await freePort());
      const app = await api.createApp(pointedAt(suite.manifest, port));
      registered = app.id;
      const url = `http://127.0.0.1:${port}`;
      env.app = { ...(await api.getApp(app.id)), url, port };
      // every variable the official SDK reads, so an app on it starts unchanged (PUMBLE_ADDON_PORT is its PORT)
      const settings: Record<string, string> = {
        ...daemonSide(o.daemonUrl, {
          id: app.id,
          appKey: must(app.appKey),
          clientSecret: must(app.clientSecret),
          signingSecret: must(app.signingSecret),
        }),
        ...appSide({ host: `http://127.0.0.1:${port}`, port, manifestPath: must(suite.manifestFile) }),
        PORT: String(port),
      };
      if (JSON.stringify(start.env ?? {}).includes('${users.')) await made;
      // a variable is text: a reference naming something else is written in as Node writes an environment (String)
      const own = Object.fromEntries(
        Object.entries(resolved(start.env ?? {}, scope, `${suite.file}: app.start.env`)).map(([k, v]) => [
          k,
          String(v),
        ]),
      );
      const cwd = path.resolve(suite.dir, start.cwd ?? '.');
      const base = Object.fromEntries(Object.entries(o.env).filter((e): e is [string, string] => e[1] !== undefined));
      proc = startAppProcess({
        command: start.command,
        cwd,
        env: { ...base, ...settings, ...own },
        stopTimeoutMs: start.stopTimeoutMs ?? 5000,
      });
      env.proc = proc;
      result.started = `${start.command} (port ${port})`;
      const t0 = Date.now();
      const notReady = await waitReady(proc, {
        ready: start.ready,
        port,
        appUrl: url,
        connected: app.socketMode ? async () => ((await api.getApp(app.id)).connections ?? 0) > 0 : undefined,
      });
      if (notReady) {
        await made.catch(() => undefined);
        throw new SetupFailed(`the app did not start: ${notReady}`, proc.lines().slice(-20));
      }
      result.ready = `${Date.now() - t0} ms`;
    } else {
      const id = resolvedText(must(suite.app.id), scope, `${suite.file}: app.id`);
      const url = resolvedText(must(suite.app.url), scope, `${suite.file}: app.url`);
      const from =
        typeof suite.app.manifest === 'object'
          ? resolvedText(suite.app.manifest.fromUrl, scope, `${suite.file}: app.manifest.fromUrl`)
          : undefined;
      if (from) await api.syncFromUrl(id, from);
      env.app = { ...(await api.getApp(id)), url: url.replace(/\/+$/, '') };
      result.started = `already running at ${env.app.url}`;
    }
    await made;
    const app = must(env.app, "the suite's app");

    if (suite.install) {
      // each user authorizes on their own, as people would: at the same time
      await Promise.all(
        suite.install.users.map(async (name) => {
          await authorize(api, await api.clientOf(must(users.get(name)).id), app, suite, name);
          installedBy.push(name);
        }),
      );
      const first = must(users.get(must(suite.install.users[0])));
      const auth = (await api.authorizations(await api.clientOf(first.id))).find((a) => a.app.id === app.id);
      app.botId = auth?.botId;
    }
    result.run = { ...env, app };
  } catch (e) {
    if (!(e instanceof SetupFailed)) {
      await teardown();
      throw e;
    }
    if (e.appOutput || !proc) result.failed = e;
    else {
      // an app that ended after it was ready (a crash, a signal) may have printed nothing about it: say so
      const ended = proc.exit();
      const why = ended === undefined ? e.message : `${e.message}; the app has ended (${ended})`;
      result.failed = new SetupFailed(why, proc.lines().slice(-20));
    }
  }
  return result;
}
