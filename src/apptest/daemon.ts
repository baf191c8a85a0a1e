/**
 * The daemon a run talks to. Without --url, one of its own: `appreg serve` as a child process on a
 * free port of 127.0.0.1, on a throwaway data directory (no APPREG_* setting of the caller's
 * reaches it, so it never opens the caller's data or database), stopped and removed at the end.
 * With --url, the daemon given, as every command reaches it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError, EXIT } from '../client/exit.js';
import { createClient, type Client } from '../client/daemon-client.js';
import type { GlobalOpts, Io } from '../client/io.js';
import { must } from '../must.js';
import { messageOf, recordOr, stringOr } from '../unknown-values.js';

export interface Daemon {
  url: string;
  /** The owner's client: the suite's `owner`. */
  client: Client;
  /** Whether the run started it (and so removes it). */
  own: boolean;
  /** Its last log lines (its own daemon only). */
  logTail(): string[];
  stop(): Promise<void>;
}

const BIN = fileURLToPath(new URL('../../../bin/appreg.js', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const LOG_LINES = 200;

/** The daemon of --url (or APPREG_URL, a saved login, the data dir's daemon.json), as for every command. */
export function givenDaemon(io: Io, g: GlobalOpts): Daemon {
  const client = createClient(io, g);
  return { url: client.url, client, own: false, logTail: () => [], stop: async () => {} };
}

/** `appreg serve` on a free port and a temporary data dir; resolves once it listens. */
export async function ownDaemon(io: Io): Promise<Daemon> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-test-daemon-'));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  // nothing of the caller's configuration: not its data dir, database, port or key; and no fsync,
  // since a store thrown away at the end has nothing to keep through a power cut
  const env: Record<string, string> = {
    ...Object.fromEntries(
      Object.entries(io.env).filter((e): e is [string, string] => e[1] !== undefined && !e[0].startsWith('APPREG_')),
    ),
    APPREG_FSYNC: 'false',
  };
  let child: ChildProcess;
  try {
    child = spawn(
      process.execPath,
      [BIN, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dir, '--log-format', 'json', '--json'],
      { env: { ...env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } catch (e) {
    remove();
    throw new CliError(`could not start a daemon for the run: ${messageOf(e)}`, EXIT.internal);
  }
  const log: string[] = [];
  let partial = '';
  must(child.stderr)
    .setEncoding('utf8')
    .on('data', (s: string) => {
      const lines = (partial + s).split('\n');
      partial = must(lines.pop());
      log.push(...lines);
      if (log.length > LOG_LINES) log.splice(0, log.length - LOG_LINES);
    });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  // a runner that ends without stopping it (an uncaught error, process.exit) takes it along
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  void exited.then(() => process.removeListener('exit', orphaned));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const done = await Promise.race([
      exited.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 10_000).unref()),
    ]);
    if (!done) {
      child.kill('SIGKILL');
      await exited;
    }
    remove();
  };
  let out = '';
  must(child.stdout).setEncoding('utf8');
  const url = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), START_TIMEOUT_MS);
    must(child.stdout).on('data', (s: string) => {
      out += s;
      try {
        const started = recordOr(JSON.parse(out))?.url;
        if (typeof started === 'string') {
          clearTimeout(timer);
          resolve(started);
        }
      } catch {
        /* not all of it yet */
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
  if (!url) {
    await stop();
    throw new CliError(
      `the daemon for the run did not start:\n${[...log, partial].filter(Boolean).slice(-10).join('\n')}`,
      EXIT.internal,
    );
  }
  let token: string;
  try {
    const saved = stringOr(
      recordOr(JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8')))?.authToken,
    );
    if (!saved) throw new Error('credentials.json holds no authToken');
    token = saved;
  } catch (e) {
    await stop();
    throw new CliError(`the daemon for the run wrote no credentials: ${messageOf(e)}`, EXIT.internal);
  }
  const client = createClient({ ...io, env: {} }, { url, token });
  return { url, client, own: true, logTail: () => log.slice(), stop };
}
