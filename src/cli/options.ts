/**
 * What every command shares: the global flags, the way an action gets its options, output and client, and file/number
 * options.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { createOut, type Out } from './output.js';
import { CliError, EXIT } from '../client/exit.js';
import { createClient, notReachable, unreachable, type Client } from '../client/daemon-client.js';
import { NotLoggedIn } from '../client/credentials.js';
import type { Run } from './run.js';
import type { GlobalOpts } from '../client/io.js';
import { unreadable } from '../file-errors.js';

export { unreadable };
import { jsonSyntaxProblem } from '../json-syntax.js';
import { messageOf } from '../unknown-values.js';

/** A positional argument as commander gives it: a variadic one is a list, an optional one may be missing. */
type Arg = string | string[] | undefined;

/**
 * A command's own options merged with the global ones: `O` says what the command's options hold, as commander parses
 * them (a `<value>` option is a string, a flag is true, an option with a parser is what the parser returns).
 */
type Opts<O> = GlobalOpts & O;

export function globalOptions(program: Command): Command {
  return program
    .option('--url <url>', 'daemon URL [APPREG_URL] (default: read from <data-dir>/daemon.json)')
    .option(
      '--data-dir <dir>',
      'data directory of the local daemon [APPREG_DATA_DIR] (default: data/ of a clone, else ~/.local/share/appreg)',
    )
    .option('--token <token>', 'management token to use [APPREG_TOKEN]')
    .option('--json', 'machine-readable JSON output');
}

/** What an action works with. */
export interface Invocation<O = Record<string, unknown>> {
  o: Opts<O>;
  /** The command itself, for its own options apart from the global ones. */
  cmd: Command;
  out: Out;
  run: Run;
  /** The daemon client for these options; `auth: false` when no login is needed (login itself). */
  client(opts?: { auth?: boolean }): Client;
}

/**
 * A commander action: `fn` gets the invocation, then the command's positional arguments (`A`: their
 * types, when not one string each: a variadic argument is a list, an optional one may be undefined).
 * Options are read with the global ones, so `--json` and `--url` work before or after the command;
 * `O` is what the command's own options hold (commander's `optsWithGlobals<T>()`).
 */
export function action<O extends object = Record<string, unknown>, A extends Arg[] = string[]>(
  run: Run,
  fn: (x: Invocation<O>, ...args: A) => Promise<void> | void,
): (...params: unknown[]) => Promise<void> {
  return async (...params) => {
    const cmd = params.at(-1);
    if (!(cmd instanceof Command)) throw new Error('internal: a commander action is called with its command last');
    const o = cmd.optsWithGlobals<Opts<O>>();
    const x: Invocation<O> = {
      o,
      cmd,
      run,
      out: await createOut(run, !!o.json),
      client: (opts) => createClient(run.io, o, opts),
    };
    try {
      await fn(x, ...(params.slice(0, -2) as A));
    } catch (e) {
      // No credentials for a URL where nothing answers (a typo in --url, a stopped daemon): say that, exit 3.
      if (e instanceof NotLoggedIn) {
        const why = await unreachable(e.url);
        if (why) throw notReachable(e.url, why);
      }
      throw e;
    }
  };
}

/** Help text closing with the command's examples: "Example:" for one, "Examples:" for several. */
export function examples(...lines: string[]): string {
  return `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}`;
}

/**
 * A JSON file named by an option; an unreadable file is a usage error naming it (`what` says which
 * file), a file that is not JSON exits `invalidExit` (usage by default; `apps validate`: invalid input).
 */
export function readJsonFile(run: Run, file: string, what?: string, invalidExit: number = EXIT.usage): unknown {
  const name = what ? `${what} ${file}` : file;
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(run.io.cwd, file), 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${name}: ${unreadable(e)}`, EXIT.usage);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(
      `${name} is not valid JSON: ${jsonSyntaxProblem(text, e)}`,
      invalidExit,
      invalidExit === EXIT.usage ? undefined : { code: 'invalid_json' },
    );
  }
}

/** A positive integer option (--limit, --timeout-ms); undefined when not given. */
export function positiveInt(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${name} must be a positive integer`, EXIT.usage);
  return n;
}

/** A whole number option that may be 0 (--wait-ms); undefined when not given. */
export function nonNegativeInt(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new CliError(`${name} must be a whole number of 0 or more`, EXIT.usage);
  return n;
}

/** A regular expression option (--expect-message); a bad one is a usage error. */
export function regexOption(v: unknown, name: string): RegExp | undefined {
  if (v === undefined) return undefined;
  try {
    return new RegExp(String(v));
  } catch (e) {
    throw new CliError(`${name} is not a valid regular expression: ${messageOf(e)}`, EXIT.usage);
  }
}
