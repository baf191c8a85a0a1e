/**
 * A throwaway PostgreSQL cluster for tests: initdb into a temp dir, trust auth, fsync off, on
 * 127.0.0.1 at a free port (and a unix socket in the temp dir). One cluster per process, made at
 * the first use, stopped and removed at its stop() or at process exit. As root, initdb and
 * postgres run as the `postgres` user (they refuse to run as root).
 *
 * APPREG_TEST_PG_URL (an existing cluster's admin URL, e.g. from the CI runner) is used instead
 * when set: databases are created there, nothing is started.
 *
 * APPREG_TEST_PG_SHARED (set by test/run.mjs for the test files it runs: the admin URL of the one
 * cluster it started for the whole run) is where the databases a test only uses are made
 * (createTestDatabase: every daemon's, every testWithPg's), so that test files do not each start a
 * cluster; a test that stops its cluster (an outage) or needs one of its own still starts one.
 *
 * Without the binaries a test skips with one line (outside CI) or fails (CI): system-component.ts.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import pg from 'pg';
import type tap from 'tap';
import { findSystemComponent, testNeeding, type SystemComponent } from './system-component.js';
import { migrate } from '../../src/store/postgres/migrations.js';

type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

interface PgCluster {
  /** The URL of database `dbName` of the cluster, as its superuser. */
  url(dbName: string): string;
  /** A new database, empty or a copy of `template`; resolves to its URL. */
  createDatabase(template?: string): Promise<string>;
  stop(): Promise<void>;
  /**
   * Stop the server, keeping its data, and start it again on the same port (an outage): only for a
   * cluster this process started (undefined under APPREG_TEST_PG_URL). Every database of the
   * cluster goes down: a test file that uses it owns the process's cluster.
   */
  outage?: { stop(): void; start(): void };
}

/** Where initdb is: on PATH, else the newest /usr/lib/postgresql/<n>/bin. */
function initdbPath(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, 'initdb');
    if (dir && fs.existsSync(p)) return fs.realpathSync(p);
  }
  let versions: string[] = [];
  try {
    versions = fs.readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  } catch {
    /* not installed */
  }
  for (const v of versions) {
    const p = `/usr/lib/postgresql/${v}/bin/initdb`;
    if (fs.existsSync(p)) return p;
  }
  return '/usr/lib/postgresql/15/bin/initdb';
}

export const POSTGRES_COMPONENT: SystemComponent = { path: initdbPath(), install: 'apt-get install postgresql-15' };

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

let dbCounter = 0;
const dbName = () => `appreg_t${process.pid}_${++dbCounter}`;

/** A cluster reached through an admin URL: databases are created in it. */
function clusterAt(adminUrl: string, stopFn: () => Promise<void>): PgCluster {
  const url = (name: string) => {
    const u = new URL(adminUrl);
    u.pathname = `/${name}`;
    return u.toString();
  };
  return {
    url,
    async createDatabase(template?: string) {
      const name = dbName();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        // a copy of the files of a small template (FILE_COPY) costs less than the default WAL-logged copy
        await c.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}" STRATEGY FILE_COPY` : ''}`);
      } finally {
        await c.end();
      }
      process.env.APPREG_TEST_PG_USED = '1'; // for test/file-cpu.mjs: this process used PostgreSQL
      return url(name);
    },
    stop: stopFn,
  };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Runs one of PostgreSQL's programs beside `initdb` in `cwd` (as the postgres user under root); throws if it fails. */
function serverCommand(initdb: string): (cwd: string, cmd: string, args: string[]) => void {
  const bin = path.dirname(initdb);
  const asRoot = process.getuid?.() === 0;
  return (cwd, cmd, args) => {
    const [file, argv] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]]
      : [path.join(bin, cmd), args];
    const r = spawnSync(file, argv, { encoding: 'utf8', cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout || r.error?.message}`);
  };
}

/**
 * test/run.mjs, after it killed a test file that timed out or left processes: its clusters, stopped and removed.
 * @public test/run.mjs loads it from dist/, which knip does not follow
 */
export function stopOrphanClusters(): void {
  if (fs.existsSync(initdbPath())) stopOrphans(serverCommand(initdbPath()));
}

/**
 * Stop and remove the clusters of test processes that died without stopping theirs (killed by a
 * timeout, or with SIGKILL: no exit handler runs then). Each cluster's directory names its owner.
 */
function stopOrphans(run: (dir: string, cmd: string, args: string[]) => void): void {
  for (const name of fs.readdirSync(os.tmpdir())) {
    if (!name.startsWith('appreg-pg-')) continue;
    const dir = path.join(os.tmpdir(), name);
    let owner: number;
    try {
      owner = Number(fs.readFileSync(path.join(dir, 'owner'), 'utf8'));
    } catch {
      continue; // being made right now, or not ours
    }
    if (!Number.isInteger(owner) || owner <= 0 || alive(owner)) continue;
    try {
      run(dir, 'pg_ctl', ['stop', '-D', path.join(dir, 'data'), '-m', 'immediate', '-w']);
    } catch {
      /* not running */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What a throwaway cluster does not need, besides durability (fsync, synchronous_commit and full_page_writes are off):
 * autovacuum (its launcher visits every database a run made once a minute; no test outlives a vacuum's worth of
 * writes), and WAL beyond crash recovery (minimal WAL: no replica, no archive).
 */
const THROWAWAY = '-c autovacuum=off -c wal_level=minimal -c max_wal_senders=0';

async function startLocalCluster(initdb: string, maxConnections = 200): Promise<PgCluster> {
  const asRoot = process.getuid?.() === 0;
  const runIn = serverCommand(initdb);
  stopOrphans(runIn);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-pg-'));
  fs.writeFileSync(path.join(dir, 'owner'), String(process.pid));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) => runIn(dir, cmd, args);
  const data = path.join(dir, 'data');
  let port = 0;
  let stopped = false;
  const start = () => {
    const o = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=${maxConnections} ${THROWAWAY}`;
    run('pg_ctl', ['start', '-D', data, '-w', '-t', '60', '-l', path.join(dir, 'log'), '-o', o]);
  };
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    try {
      run('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w']);
    } catch {
      /* not running */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', stopSync);
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    // The port is picked just before the start, and picked again when another process bound it in
    // between (test files run in parallel, and each of their daemons listens on a free port too).
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        start();
        break;
      } catch (err) {
        const log = fs.existsSync(path.join(dir, 'log')) ? fs.readFileSync(path.join(dir, 'log'), 'utf8') : '';
        if (attempt >= 3 || !/already in use/i.test(log)) throw err;
        fs.rmSync(path.join(dir, 'log'), { force: true });
      }
    }
  } catch (err) {
    stopSync();
    throw err;
  }
  const cluster = clusterAt(`postgresql://postgres@127.0.0.1:${port}/postgres`, async () => {
    process.off('exit', stopSync);
    stopSync();
  });
  cluster.outage = { stop: () => run('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']), start };
  return cluster;
}

/**
 * APPREG_TEST_PG_URL's cluster outlives the tests: the databases this process made there are
 * dropped when its tests end (FORCE: a daemon a test left running does not keep one).
 */
function externalCluster(admin: string): PgCluster {
  const made: string[] = [];
  const cluster = clusterAt(admin, async () => {});
  const create = cluster.createDatabase;
  cluster.createDatabase = async (template) => {
    const url = await create(template);
    made.push(new URL(url).pathname.slice(1));
    return url;
  };
  // tap is loaded here only (a benchmark that borrows the local cluster must not become a tap test)
  void import('tap').then(({ default: tap }) =>
    tap.teardown(async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        for (const name of made) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    }),
  );
  return cluster;
}

/** One statement on a connection of its own to `url`: its rows. */
export async function sqlAt<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text, values)).rows;
  } finally {
    await c.end();
  }
}

let shared: Promise<PgCluster> | null = null;
let run: PgCluster | null = null;

/** A new, empty database for a test: in the run's cluster (APPREG_TEST_PG_SHARED), else in the process's. */
export async function createTestDatabase(): Promise<string> {
  const url = process.env.APPREG_TEST_PG_SHARED;
  if (!url) return (await startPgCluster()).createDatabase();
  run ??= externalCluster(url);
  return run.createDatabase();
}

/**
 * A new database for a test daemon (the store matrix's: test/helpers/daemon.ts) that holds appreg's schema already:
 * a copy of the run cluster's template (APPREG_TEST_PG_TEMPLATE, made by startRunCluster), which costs the server
 * about half of an empty database and the migration a daemon runs on it. Its daemon's migration then finds nothing to
 * do, as on any later start; a first migration is the concern of the tests that make their databases with
 * createTestDatabase (the pg-store, multi-daemon and multi-instance tests, `appreg db`). Without the run's template
 * (a file run alone, APPREG_TEST_PG_URL), an empty one.
 */
export async function createSchemaDatabase(): Promise<string> {
  const url = process.env.APPREG_TEST_PG_SHARED;
  const template = process.env.APPREG_TEST_PG_TEMPLATE;
  if (!url || !template) return createTestDatabase();
  run ??= externalCluster(url);
  return run.createDatabase(template);
}

/** The template startRunCluster makes: appreg's schema as the migrations of this build leave it. */
const TEMPLATE = 'appreg_template';

/**
 * The cluster test/run.mjs starts for the whole run (its admin URL goes to the test files as
 * APPREG_TEST_PG_SHARED): room for the connections of every test file running at once. It holds a template
 * database migrated by this build (its name, for APPREG_TEST_PG_TEMPLATE, is `template`; PostgreSQL 15 or later,
 * whose CREATE DATABASE takes a STRATEGY), which no one connects to: a copy is made only of a database without
 * sessions.
 * @public test/run.mjs loads it from dist/, which knip does not follow
 */
export async function startRunCluster(): Promise<PgCluster & { template?: string }> {
  const cluster = await startLocalCluster(POSTGRES_COMPONENT.path, 500);
  const [version] = await sqlAt<{ server_version_num: string }>(cluster.url('postgres'), 'SHOW server_version_num');
  if (Number(version?.server_version_num) < 150000) return cluster;
  await sqlAt(cluster.url('postgres'), `CREATE DATABASE ${TEMPLATE}`);
  await migrate(cluster.url(TEMPLATE));
  await sqlAt(cluster.url('postgres'), `ALTER DATABASE ${TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
  return { ...cluster, template: TEMPLATE };
}

/** The process's cluster: APPREG_TEST_PG_URL's, or one started here (throws when the binaries are missing). */
export function startPgCluster(): Promise<PgCluster> {
  if (!shared) {
    const admin = process.env.APPREG_TEST_PG_URL;
    shared = admin ? Promise.resolve(externalCluster(admin)) : startLocalCluster(POSTGRES_COMPONENT.path);
    shared.catch(() => (shared = null));
  }
  return shared;
}

/**
 * A fresh database's URL for a test, or undefined when PostgreSQL is missing: then the test
 * is skipped with one line saying what to install, or fails under CI.
 */
export async function pgDatabaseOrSkip(t: TapTest): Promise<string | undefined> {
  if (!process.env.APPREG_TEST_PG_URL && !process.env.APPREG_TEST_PG_SHARED) {
    const a = findSystemComponent(POSTGRES_COMPONENT);
    if (!a.found) {
      if (a.underCi) t.fail(a.message);
      else t.plan(0, a.message);
      return undefined;
    }
  }
  return createTestDatabase();
}

/**
 * t.test that gets a fresh database's URL; skipped (or failed under CI) without PostgreSQL.
 * `ownCluster`: the database is in the process's own cluster (a test that stops it), not the run's.
 */
export function testWithPg(
  t: TapTest,
  name: string,
  fn: (t: TapTest, url: string) => Promise<void>,
  o: { ownCluster?: boolean } = {},
): ReturnType<TapTest['test']> {
  const database = async () => (o.ownCluster ? (await startPgCluster()).createDatabase() : createTestDatabase());
  if (process.env.APPREG_TEST_PG_URL || (process.env.APPREG_TEST_PG_SHARED && !o.ownCluster))
    return t.test(name, async (t) => fn(t, await database()));
  return testNeeding(t, name, POSTGRES_COMPONENT, async (t) => fn(t, await database()));
}
