/**
 * Several real `appreg serve` processes on one PostgreSQL database, as an install that outgrew one
 * machine runs them: each its own data dir, all with the first one's key file. Each can be stopped
 * (SIGTERM) or killed (SIGKILL); every process started here is killed at teardown.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { BIN } from './cli.js';
import { apiOf, tempDir, type TestDaemon } from './daemon.js';
import { must } from '../../src/must.js';

export interface ServedDaemon {
  url: string;
  dataDir: string;
  child: ChildProcess;
  out(): string;
  exited: Promise<number | null>;
}

/** What the fixtures that take a TestDaemon use (url, the owner's token, api()), for a daemon of the group. */
export type Client = Pick<TestDaemon, 'url' | 'token' | 'workspaceId' | 'workspaceUserId' | 'mgmt' | 'api'>;

/**
 * One `appreg serve` process on `dataDir` (port 0 unless `args` say, `env` added to this process's), resolved once it
 * listens.
 */
export function serveProcess(
  dataDir: string,
  env: NodeJS.ProcessEnv,
  args: string[] = ['--port', '0'],
): Promise<ServedDaemon> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--', BIN, 'serve', ...args, '--data-dir', dataDir], {
      env: { ...process.env, APPREG_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    // stdout and stderr together: the log (stderr) says where it listens
    const look = (c: Buffer) => {
      out += c;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out);
      if (m) resolve({ url: must(m[1]), dataDir, child, out: () => out, exited });
    };
    must(child.stdout).on('data', look);
    must(child.stderr).on('data', look);
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
}

/** A client of the daemon at `url`, signed in with `creds` (the workspace owner's, from its credentials.json). */
export function clientOf(
  url: string,
  creds: { authToken: string; workspaceId: string; workspaceUserId: string },
): Client {
  const mgmt = `/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
  return {
    url,
    token: creds.authToken,
    workspaceId: creds.workspaceId,
    workspaceUserId: creds.workspaceUserId,
    mgmt,
    api: apiOf(url, creds.authToken),
  };
}

export interface DaemonGroup {
  daemons: ServedDaemon[];
  /** A client of daemon i, signed in as the workspace owner. */
  client(i: number): Client;
  /** Start one more daemon on the same database (with the first one's key unless ownKey). */
  add(o?: { ownKey?: boolean }): Promise<ServedDaemon>;
  /** Everything every daemon of the group wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/** Start `n` daemons on `databaseUrl`; the first bootstraps the workspace and makes the key the others copy. */
export async function startDaemons(
  t: { teardown(fn: () => unknown): void },
  n: number,
  databaseUrl: string,
  env: NodeJS.ProcessEnv = {},
): Promise<DaemonGroup> {
  const daemons: ServedDaemon[] = [];
  const dirs: string[] = [];
  const allEnv = { APPREG_DATABASE_URL: databaseUrl, ...env };
  const first = tempDir('appreg-multi-');
  dirs.push(first);
  daemons.push(await serveProcess(first, allEnv));
  const creds = JSON.parse(fs.readFileSync(path.join(first, 'credentials.json'), 'utf8')) as {
    authToken: string;
    workspaceId: string;
    workspaceUserId: string;
  };
  const key = fs.readFileSync(path.join(first, 'secret.key'));
  const add = async (o: { ownKey?: boolean } = {}) => {
    const dir = tempDir('appreg-multi-');
    dirs.push(dir);
    // ownKey: the daemon makes a key of its own, as one set up without copying the key file would
    if (!o.ownKey) fs.writeFileSync(path.join(dir, 'secret.key'), key, { mode: 0o600 });
    const d = await serveProcess(dir, allEnv);
    daemons.push(d);
    return d;
  };
  const group: DaemonGroup = {
    daemons,
    client: (i) => clientOf(must(daemons[i]).url, creds),
    output: () => daemons.map((d) => d.out()).join('\n'),
    add,
    async stop() {
      await Promise.all(
        daemons.map(async (d) => {
          if (d.child.exitCode === null && d.child.signalCode === null) {
            d.child.kill('SIGTERM');
            const cut = setTimeout(() => d.child.kill('SIGKILL'), 10_000);
            await d.exited;
            clearTimeout(cut);
          }
        }),
      );
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  t.teardown(() => group.stop());
  for (let i = 1; i < n; i++) await add();
  return group;
}
