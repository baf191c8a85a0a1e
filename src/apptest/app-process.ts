/**
 * The app a suite starts (docs/testing.md, "The app"): its command run by the shell, in a process
 * group of its own, with the app's settings in its environment; everything it prints kept (the
 * report shows its last lines); ready once its readiness check passes; stopped with SIGTERM (then
 * SIGKILL) at the end, the whole group, so nothing it started is left running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { ReadySpec } from './steps.js';
import { matcher } from './match.js';
import { must } from '../must.js';

export interface AppProcess {
  /** The lines it printed (stdout and stderr, in order), the last OUTPUT_LINES of them. */
  lines(): string[];
  /** How many lines it printed in all: a mark to show what it printed since. */
  printed(): number;
  /** The whole lines it printed since the mark printed() gave (those still kept). */
  since(mark: number): string[];
  /** Set once it has exited: the code or the signal. */
  exit(): string | undefined;
  stop(): Promise<void>;
}

const OUTPUT_LINES = 2000;

/** A free port of 127.0.0.1 (free when asked; the app takes it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      if (typeof address === 'object' && address) s.close(() => resolve(address.port));
      else s.close(() => reject(new Error(`listening on 127.0.0.1 gave no port (${String(address)})`)));
    });
  });
}

export function startAppProcess(o: {
  command: string;
  cwd: string;
  env: Record<string, string>;
  stopTimeoutMs: number;
}): AppProcess {
  const child: ChildProcess = spawn(o.command, {
    cwd: o.cwd,
    env: o.env,
    shell: true,
    detached: process.platform !== 'win32',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const kept: string[] = [];
  let count = 0;
  let exit: string | undefined;
  const partial = { out: '', err: '' };
  const take = (which: 'out' | 'err') => (s: string) => {
    const lines = (partial[which] + s).split('\n');
    partial[which] = must(lines.pop());
    for (const l of lines) kept.push(l.replace(/\r$/, ''));
    count += lines.length;
    if (kept.length > OUTPUT_LINES) kept.splice(0, kept.length - OUTPUT_LINES);
  };
  must(child.stdout).setEncoding('utf8').on('data', take('out'));
  must(child.stderr).setEncoding('utf8').on('data', take('err'));
  const exited = new Promise<void>((resolve) => {
    child.once('error', (e) => {
      exit = `could not start: ${e.message}`;
      resolve();
    });
    child.once('exit', (code, signal) => {
      exit = signal ? `killed by ${signal}` : `exit code ${code}`;
      for (const w of ['out', 'err'] as const) if (partial[w]) (kept.push(partial[w]), count++, (partial[w] = ''));
      resolve();
    });
  });
  /** The whole process group (the shell and what it started), else the child. */
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, sig);
      else child.kill(sig);
    } catch {
      /* already gone */
    }
  };
  // a runner that ends without stopping it takes the app's process group along
  const orphaned = () => signal('SIGKILL');
  process.once('exit', orphaned);
  void exited.then(() => process.removeListener('exit', orphaned));
  return {
    lines: () => (partial.out || partial.err ? [...kept, ...[partial.out, partial.err].filter(Boolean)] : kept.slice()),
    printed: () => count,
    since: (mark) => (count > mark ? kept.slice(-Math.min(count - mark, kept.length)) : []),
    exit: () => exit,
    async stop() {
      if (exit === undefined) {
        signal('SIGTERM');
        const stopped = await Promise.race([
          exited.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), o.stopTimeoutMs).unref()),
        ]);
        if (!stopped) signal('SIGKILL');
        await exited;
      }
      // what the shell started and left behind (a child of a child) goes with the group
      signal('SIGKILL');
    },
  };
}

/**
 * Wait until the app is ready: a line of its output matches `ready.output`, or `ready.url` answers
 * (with `status`, else below 500), or else `port` accepts connections, or `connected()` (socket
 * mode). Resolves to undefined when ready, else to why not (it exited, or the time ran out).
 */
export async function waitReady(
  app: AppProcess,
  o: { ready?: ReadySpec; port: number; appUrl: string; connected?: () => Promise<boolean> },
): Promise<string | undefined> {
  const timeoutMs = o.ready?.timeoutMs ?? 30_000;
  const end = Date.now() + timeoutMs;
  const out = o.ready?.output !== undefined ? matcher(o.ready.output, false) : undefined;
  const url = o.ready?.url !== undefined ? new URL(o.ready.url, o.appUrl).toString() : undefined;
  const check = async (): Promise<boolean> => {
    if (out) return app.lines().some((l) => out.test(l));
    if (url) {
      const status = await statusOf(url);
      return status !== undefined && (o.ready?.status !== undefined ? status === o.ready.status : status < 500);
    }
    if (o.connected) return o.connected();
    return new Promise((resolve) => {
      const s = net.connect(o.port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
  };
  for (;;) {
    if (await check()) return undefined;
    const exit = app.exit();
    if (exit !== undefined) return `it ended (${exit}) before it was ready`;
    if (Date.now() > end) {
      const what = out
        ? `printed no line matching ${out.shown}`
        : url
          ? `did not answer ${o.ready?.status ?? 'below 500'} at ${url}`
          : o.connected
            ? 'did not connect (socket mode)'
            : `did not accept connections on port ${o.port}`;
      return `it ${what} within ${timeoutMs} ms`;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * The status a GET of `url` answers (no redirect followed), or undefined when nothing answers. (Not fetch: it refuses
 * ports such as 6000.)
 */
function statusOf(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const get = url.startsWith('https:') ? https.get : http.get;
    const req = get(url, { agent: false, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(undefined));
  });
}
