/**
 * What one run of a client of the daemon (a CLI command, `appreg test`) may touch of the world outside it: output
 * streams, environment, working directory, standard input, the stop signals and a clock. bin/appreg.js hands in the
 * process's own; tests hand in buffers, so a command runs in-process exactly as it runs from a shell.
 */
import { must } from '../must.js';

import { systemClock, type Clock } from '../clock.js';
import { messageOf, errnoOf } from '../unknown-values.js';

interface Writer {
  write(s: string): unknown;
}

export interface Io {
  stdout: Writer;
  stderr: Writer;
  env: Readonly<Record<string, string | undefined>>;
  /** Relative paths (--data-dir, --file, --env-out) are resolved against this. */
  cwd: string;
  /** Whether stdout is a terminal: colour and help width depend on it. */
  isTTY: boolean;
  /** Whether stderr is a terminal (the daemon's log format follows it); stdout's when not said. */
  stderrIsTTY?: boolean;
  /** Terminal width for help text, when stdout is a terminal. */
  columns?: number;
  stdin: AsyncIterable<Buffer | string>;
  /** Resolves with the signal's name when the user asks a running daemon to stop (`serve`). */
  stopSignal(): Promise<string>;
  /**
   * Calls `fn` on each SIGUSR2, from the moment it is called: the steps of a restart without a gap
   * (`serve --takeover`, src/server/handover.ts). Absent where no other process can signal (tests).
   */
  onHandoverSignal?(fn: () => void): void;
  /** The operating system, as process.platform names it: which program opens a browser (`open`). */
  platform: NodeJS.Platform;
  /**
   * Start a program detached from this one, its output ignored (`open`: the browser opener).
   * Resolves once it started, to undefined, or to why it could not start (ENOENT: not installed).
   */
  startDetached(command: string, args: string[]): Promise<string | undefined>;
  /** The time and timers of what the CLI shows while it waits (deliver-test's and say's waiting line). */
  clock: Clock;
}

/** The real process's streams, environment and signals. */
export function processIo(): Io {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    isTTY: !!process.stdout.isTTY,
    stderrIsTTY: !!process.stderr.isTTY,
    columns: process.stdout.isTTY ? process.stdout.columns : undefined,
    stdin: process.stdin,
    stopSignal: () =>
      new Promise((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      }),
    onHandoverSignal: (fn) => void process.on('SIGUSR2', fn),
    platform: process.platform,
    clock: systemClock,
    startDetached: async (command, args) => {
      const { spawn } = await import('node:child_process');
      return new Promise((resolve) => {
        let child;
        try {
          // Verbatim on Windows: `cmd /c start "" <url>` needs its empty title as two bare quotes.
          child = spawn(command, args, {
            detached: true,
            stdio: 'ignore',
            windowsHide: true,
            windowsVerbatimArguments: process.platform === 'win32',
          });
        } catch (e) {
          return resolve(errnoOf(e) ?? messageOf(e));
        }
        child.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        child.once('spawn', () => {
          must(child).unref();
          resolve(undefined);
        });
      });
    },
  };
}

/** The flags every command accepts (defined on the program by cli/options.ts `globalOptions`). */
export interface GlobalOpts {
  url?: string;
  dataDir?: string;
  token?: string;
  json?: boolean;
}
