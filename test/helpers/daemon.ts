/** Start a real daemon in-process on port 0 in a temporary data dir, capture its log, stop it. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startDaemon, type DaemonHandle, type StartOptions } from '../../src/server/start.js';
import type { Clock } from '../../src/clock.js';
import { createSchemaDatabase } from './pg.js';
import { until } from './until.js';
import { EVENTS_OUTBOX } from '../../src/model/events.js';
import { PENDING_TABLE } from '../../src/delivery/pending.js';

/** Whether this test process runs in the store matrix's PostgreSQL pass (APPREG_TEST_STORE=postgres). */
export const onPostgres = () => process.env.APPREG_TEST_STORE === 'postgres';
const databaseOf = new Map<string, string>();

export interface TestDaemon extends DaemonHandle {
  dataDir: string;
  /** Everything the daemon logged so far. */
  logs(): string;
  /** Management token of the bootstrapped owner and the base path of their apps. */
  token: string;
  workspaceId: string;
  workspaceUserId: string;
  mgmt: string;
  /** fetch against the daemon, with the owner's Authtoken unless headers override it. */
  api(pathname: string, init?: RequestInit & { json?: unknown; noAuth?: boolean }): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * fetch against a daemon at `url`, with `authToken` unless the headers name another or `noAuth`; `json` sends a JSON
 * body.
 */
export function apiOf(url: string, authToken: string): TestDaemon['api'] {
  return (pathname, init = {}) => {
    const headers = new Headers(init.headers);
    if (!init.noAuth && !headers.has('authtoken')) headers.set('authtoken', authToken);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return fetch(url + pathname, { ...init, headers, body, redirect: 'manual' });
  };
}

/** The temp dirs this test process made: removed when it exits, whatever its tests did with them. */
const made: string[] = [];
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'appreg-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export async function startTestDaemon(
  opts: {
    dataDir?: string;
    config?: Partial<Config>;
    clock?: Clock;
    keep?: boolean;
    storeIo?: StartOptions['storeIo'];
    stopWaitMs?: number;
  } = {},
): Promise<TestDaemon> {
  const dataDir = opts.dataDir ?? tempDir();
  const config = { ...loadConfig({ dataDir, port: 0 }, {}), logLevel: 'debug' as const, ...opts.config };
  // The store matrix (test/run.mjs): the same test files again, each daemon on a fresh PostgreSQL database.
  // A restart on the same data dir finds the same database, as an install would. The database holds the schema
  // already (a copy of the run's template: createSchemaDatabase).
  if (onPostgres() && config.databaseUrl === undefined) {
    let url = databaseOf.get(dataDir);
    if (!url) databaseOf.set(dataDir, (url = await createSchemaDatabase()));
    config.databaseUrl = url;
  }
  let logText = '';
  const logger = createLogger({ level: 'debug', stream: { write: (s: string) => (logText += s) } });
  const handle = await startDaemon(config, {
    logger,
    clock: opts.clock,
    storeIo: opts.storeIo,
    stopWaitMs: opts.stopWaitMs,
  });
  const creds = handle.bootstrapped ?? JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
  const mgmt = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
  const api = apiOf(handle.url, creds.authToken);
  return {
    ...handle,
    dataDir,
    logs: () => logText,
    token: creds.authToken,
    workspaceId: creds.workspaceId,
    workspaceUserId: creds.workspaceUserId,
    mgmt,
    api,
    async stop() {
      await handle.close();
      if (!opts.keep && !opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A small valid manifest; override any field. */
/**
 * Everything the daemon's store holds, as text: the embedded store's files in the data dir, or
 * PostgreSQL's records table. For "is it stored, and stored only as a digest" checks on both stores.
 */
export async function storedText(d: { dataDir: string; parts: { config: Config } }): Promise<string> {
  const url = d.parts.config.databaseUrl;
  if (!url) {
    return fs
      .readdirSync(d.dataDir)
      .filter((f) => f.startsWith('appreg.'))
      .map((f) => fs.readFileSync(path.join(d.dataDir, f), 'utf8'))
      .join('\n');
  }
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ line: string }>(
      `SELECT tbl || ' ' || id || ' ' || data::text AS line FROM appreg_records`,
    );
    return r.rows.map((x) => x.line).join('\n');
  } finally {
    await c.end();
  }
}

export function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'test-app',
    displayName: 'Test App',
    bot: true,
    botTitle: 'Helps with tests',
    scopes: { botScopes: ['messages:read', 'messages:write'], userScopes: ['messages:read'] },
    shortcuts: [{ shortcutType: 'GLOBAL', url: 'http://127.0.0.1:9/shortcut', name: 'do_it', displayName: 'Do it' }],
    slashCommands: [{ command: '/test', url: 'http://127.0.0.1:9/slash', description: 'Test', usageHint: '[text]' }],
    eventSubscriptions: { url: 'http://127.0.0.1:9/events', events: ['NEW_MESSAGE'] },
    redirectUrls: ['http://localhost:9/redirect'],
    offlineMessage: 'Test App is offline',
    ...overrides,
  };
}

/**
 * Resolves once the daemon's events are all sent: none left in the outbox, none pending, no attempt
 * under way (an event is pending from the commit that takes it out of the outbox until its attempt
 * ends). For "this change sent nothing to that app" checks; only while no event waits for a retry.
 */
export async function eventsSent(d: Pick<TestDaemon, 'parts'>): Promise<void> {
  const { store } = d.parts;
  await until(async () => (await store.count(EVENTS_OUTBOX)) + (await store.count(PENDING_TABLE)) === 0);
  await d.parts.delivery.dispatcher.idle();
}
