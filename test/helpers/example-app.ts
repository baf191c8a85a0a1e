/**
 * The example apps under examples/, run as a developer runs them: a copy of the example's folder
 * in a temporary directory (its .env and tokens.json are written there, never in the repo), its
 * app created on a test daemon with `apps create --env-out`, then `node app.mjs` as a child
 * process on a free port (PORT=0: the app prints the port it got, and the app's URLs are then
 * updated to it, so no port is ever guessed). Every process started here is stopped at teardown.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { ROOT, runMain } from './cli.js';
import { tempDir, type TestDaemon } from './daemon.js';
import { must } from '../../src/must.js';

export interface ExampleApp {
  dir: string;
  appId: string;
  /** Where the app listens (http://127.0.0.1:<port>). */
  url: string;
  /** Everything the app printed so far. */
  out(): string;
  /** The CLI against the daemon as its owner (`appreg …args`). */
  cli(args: string[], opts?: Parameters<typeof runMain>[1]): ReturnType<typeof runMain>;
}

/**
 * A copy of examples/ in a temporary directory, laid out as in the clone: the clone's
 * node_modules beside it (the socket-mode example falls back to its `ws` on Node 20).
 */
export function copyExamples(): string {
  const dir = tempDir('appreg-example-');
  fs.cpSync(path.join(ROOT, 'examples'), path.join(dir, 'examples'), {
    recursive: true,
    filter: (src) => !/(^|\/)(\.env|tokens\.json)$/.test(src),
  });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

export async function startExample(
  t: Tap.Test,
  d: TestDaemon,
  name: string,
  o: { env?: NodeJS.ProcessEnv; nodeArgs?: string[] } = {},
): Promise<ExampleApp> {
  const root = copyExamples();
  const dir = path.join(root, 'examples', name);
  const g = ['--url', d.url, '--token', d.token];
  const cli: ExampleApp['cli'] = (args, opts) => runMain([...g, ...args], opts);
  const created = await cli([
    'apps',
    'create',
    '--file',
    path.join(dir, 'manifest.json'),
    '--env-out',
    path.join(dir, '.env'),
    '--json',
  ]);
  if (created.code !== 0) throw new Error(`apps create failed: ${created.stderr}`);
  const appId = (JSON.parse(created.stdout) as { id: string }).id;

  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), path.join(dir, 'app.mjs')], {
    cwd: root,
    env: { ...process.env, PORT: '0', ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  });
  // ready once it listens (HTTP mode), and in socket mode once it is connected too
  const socketMode =
    (JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { socketMode?: boolean }).socketMode ===
    true;
  const ready = await new Promise<string>((resolve, reject) => {
    const look = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m && (!socketMode || /connected to/.test(out))) resolve(must(m[1]));
    };
    child.stdout.on('data', look);
    void exited.then((code) => reject(new Error(`the example exited (${code}) before it was ready:\n${out}`)));
  });

  // The app got a free port: point the app's URLs at it.
  const manifestFile = path.join(dir, 'manifest.json');
  const port = /:(\d+)$/.exec(ready)?.[1];
  if (port) {
    fs.writeFileSync(
      manifestFile,
      fs.readFileSync(manifestFile, 'utf8').replace(/127\.0\.0\.1:\d+/g, `127.0.0.1:${port}`),
    );
    const updated = await cli(['apps', 'update', appId, '--file', manifestFile]);
    if (updated.code !== 0) throw new Error(`apps update failed: ${updated.stderr}`);
  }
  return { dir, appId, url: ready, out: () => out, cli };
}
