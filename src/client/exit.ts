/**
 * How a client of the daemon (a CLI command, `appreg test`) ends when it fails: one line and an exit code. The CLI
 * turns a CliError into that line and code (cli/main.ts); nothing here prints.
 */
import { recordOr, stringOr } from '../unknown-values.js';

/** The exit codes (README "Exit codes"); 0–6 keep their meaning, new ones are added at the end. */
export const EXIT = {
  ok: 0,
  internal: 1,
  usage: 2,
  unreachable: 3,
  rejected: 4,
  daemonError: 5,
  deliveryFailed: 6,
  invalidInput: 7,
  dataDirLocked: 8,
} as const;

/** One line per code, for --help. */
export const EXIT_HELP =
  'Exit codes: 0 ok, 1 internal, 2 usage (also: the port is in use), 3 daemon not reachable, 4 rejected by the daemon, 5 daemon error, 6 a delivery test failed (deliver-test, test), 7 invalid manifest or input file (apps validate, a test suite), 8 another daemon holds the data directory (serve).';

/** An error the CLI reports in one line and turns into an exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    public readonly exitCode: number,
    public readonly body?: unknown,
  ) {
    super(message);
  }
}

/** The daemon's error code (`rate_limited`, `forbidden`: its error body's `code`) of a refusal, when it gave one. */
export function refusalCode(e: unknown): string | undefined {
  return e instanceof CliError ? stringOr(recordOr(e.body)?.code) : undefined;
}
