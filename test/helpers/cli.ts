/**
 * Run the CLI as a user would: `runMain` in this process through main(argv, io), capturing what it
 * writes (fast: most tests); `runCli` as a real `node bin/appreg.js` process, for what only a
 * process shows (the bin's wiring, the exit status, a closed pipe, signals).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import type { Io } from '../../src/client/io.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { Receiver } from './receiver.js';
import { createTestClock } from './test-clock.js';
import { until } from './until.js';
import { must } from '../../src/must.js';

// dist/test/helpers/cli.js → project root is three levels up
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = path.join(ROOT, 'bin/appreg.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}
export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  input?: string;
  cwd?: string;
  timeoutMs?: number;
  /** In-process only: pretend stdout (and stderr) are a terminal. */
  isTTY?: boolean;
  /** In-process only: pretend stderr is (or is not) a terminal, whatever stdout is. */
  stderrIsTTY?: boolean;
  /** In-process only: the operating system the CLI sees (default: this one's). */
  platform?: NodeJS.Platform;
  /**
   * In-process only: stands in for starting a detached program (the browser opener); by default nothing starts and
   * ENOENT is answered.
   */
  startDetached?: Io['startDetached'];
  /** In-process only: resolves when the command is asked to stop (Ctrl-C); never by default. */
  stop?: Promise<string>;
  /** In-process only: the CLI's clock (its waiting line's timer); the system's by default. */
  clock?: Clock;
}

/**
 * The environment a command sees: this process's, without the variables that would point it elsewhere, plus `extra`.
 */
function cliEnv(extra: NodeJS.ProcessEnv = {}): Record<string, string> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NO_COLOR: undefined,
    APPREG_URL: undefined,
    APPREG_TOKEN: undefined,
    APPREG_DATA_DIR: undefined,
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * An Io for main() that keeps what the CLI writes: not a terminal unless `isTTY`, the test's env, `input` on stdin;
 * never asked to stop.
 */
export function captureIo(opts: CliOptions = {}): { io: Io; out: { stdout: string; stderr: string } } {
  const out = { stdout: '', stderr: '' };
  const io: Io = {
    stdout: { write: (s: string) => (out.stdout += s) },
    stderr: { write: (s: string) => (out.stderr += s) },
    env: cliEnv(opts.env),
    cwd: opts.cwd ?? ROOT,
    isTTY: opts.isTTY ?? false,
    stderrIsTTY: opts.stderrIsTTY,
    stdin: Readable.from(opts.input ? [Buffer.from(opts.input)] : []),
    // `serve` in-process is for its configuration errors only; `messages tail` stops when the test says.
    stopSignal: () => opts.stop ?? new Promise<string>(() => {}),
    platform: opts.platform ?? process.platform,
    // A test never starts a real browser.
    startDetached: opts.startDetached ?? (async () => 'ENOENT'),
    clock: opts.clock ?? systemClock,
  };
  return { io, out };
}

/** `appreg …args` in this process: same argv parsing, output and exit code as the real program. */
export async function runMain(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  const { io, out } = captureIo(opts);
  const code = await main(['node', BIN, ...args], io);
  return { code, ...out };
}

/**
 * runMain for a command that follows until stopped: what it wrote so far (`out`) while it runs, and its end (`done`).
 */
export function startMain(
  args: string[],
  opts: CliOptions = {},
): { out: { stdout: string; stderr: string }; done: Promise<CliResult> } {
  const { io, out } = captureIo(opts);
  return { out, done: main(['node', BIN, ...args], io).then((code) => ({ code, ...out })) };
}

/**
 * `appreg serve --port 0 …args` in this process until `stop` is called (which sends it SIGTERM and
 * resolves with its exit code); `url` once it listens, `out` what it wrote so far.
 */
export async function serveInProcess(args: string[], opts: { tty?: boolean; env?: NodeJS.ProcessEnv } = {}) {
  const { io, out } = captureIo({ isTTY: opts.tty, env: { NO_COLOR: '1', ...opts.env } });
  let stop: (s: string) => void = () => {};
  io.stopSignal = () => new Promise((r) => (stop = r));
  const code = main(['node', BIN, 'serve', '--port', '0', ...args], io);
  // the daemon's log (stderr) says where it listens
  const listening = /listening on (http[^\s"]+)/;
  for (let i = 0; i < 200 && !listening.test(out.stderr); i++) {
    if (await Promise.race([code.then(() => true), new Promise((r) => setTimeout(() => r(false), 25))])) break;
  }
  const url = listening.exec(out.stderr)?.[1];
  return { url, out, code, stop: async () => (stop('SIGTERM'), await code) };
}

/** `node bin/appreg.js …args` as a child process. */
export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--', BIN, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: cliEnv(opts.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/**
 * A CLI run (in-process, on a test clock) while the app at `rx`'s `path` holds its answer: once the
 * app has the request, the run's clock passes `ms` (the waiting line's second), then the app
 * answers. What the run printed.
 */
export async function runWhileAppThinks(
  rx: Receiver,
  path: string,
  run: (opts: { clock: Clock }) => Promise<CliResult>,
  ms = 1000,
): Promise<CliResult> {
  const clock = createTestClock();
  let answer: (() => void) | undefined;
  rx.on(path, () => new Promise((r) => (answer = () => r({ json: {} }))));
  const running = run({ clock });
  await until(() => answer !== undefined);
  await clock.advance(ms);
  must(answer)();
  return running;
}
