/** The state of one run of the CLI: what every command is handed, over the world it may touch (client/io.ts). */
import type { Io } from '../client/io.js';

/** The state of one run, passed to every command: there is no module-level state in the CLI. */
export interface Run {
  readonly io: Io;
  /** The exit code of a command that ran to its end but failed its check (deliver-test: 6). */
  exitCode: number;
  /** Whether stdout already holds a JSON document: a --json failure then adds none. */
  printedJson: boolean;
}

export function createRun(io: Io): Run {
  return { io, exitCode: 0, printedJson: false };
}
