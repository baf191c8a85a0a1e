/**
 * The appreg program: one file per command group under commands/, each handing off to the daemon's
 * API through client.ts. Only commander and the CLI's own small modules load at start; what a
 * command needs beyond that (the server, the manifest validator) it imports when it runs.
 */
import { Command, CommanderError } from 'commander';
import { colourOn } from './output.js';
import { CliError, EXIT, EXIT_HELP } from '../client/exit.js';
import { globalOptions } from './options.js';
import { createRun, type Run } from './run.js';
import type { Io } from '../client/io.js';
import { registerServe } from './commands/serve.js';
import { registerDb } from './commands/db.js';
import { registerApps } from './commands/apps.js';
import { registerAccount } from './commands/account.js';
import { registerAuthorize } from './commands/authorize.js';
import { registerDeliver } from './commands/deliver.js';
import { registerDeliveries } from './commands/deliveries.js';
import { registerOpen } from './commands/open.js';
import { registerMessages } from './commands/messages.js';
import { registerSay } from './commands/say.js';
import { registerGroups } from './commands/groups.js';
import { registerTest } from './commands/test.js';
import { APPREG_VERSION } from '../version.js';
import { messageOf, recordOr } from '../unknown-values.js';

export function buildProgram(run: Run): Command {
  const { io } = run;
  const program = globalOptions(new Command('appreg'))
    .description('Register, authorize and exercise team-messaging workspace apps against a self-hosted daemon.')
    .version(APPREG_VERSION, '-V, --version', 'print the version of appreg')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `
Examples:
  $ appreg serve                                   start the daemon (first start creates a workspace and credentials)
  $ appreg apps init --name "Standup Bot"          a starter manifest.json; then appreg apps validate --file manifest.json
  $ appreg apps create --file manifest.json --env-out .env
                                                   register an app; its id and secrets also go to .env
  $ appreg open                                    sign your browser in to the daemon's pages
  $ appreg apps list --json                        list your apps for scripts
  $ appreg authorize app_123 --exchange --json     authorize as you and print the tokens
  $ appreg deliver-test app_123 --kind slash-command --probe-signature
                                                   CI: fail unless the app answers in 3 s and checks signatures
  $ appreg test --reporter junit --output report.xml
                                                   CI: run the app's conversation tests (*.apptest.yaml) with a daemon of their own
  $ appreg say general /standup start              run a slash command as you and show what the app did
  $ appreg messages tail general                   follow a channel live
${EXIT_HELP}`,
    );
  // Set before any command is added: subcommands copy these settings when they are created.
  program.exitOverride();
  program.configureOutput({
    writeOut: (s) => io.stdout.write(s),
    writeErr: (s) => io.stderr.write(s),
    getOutHelpWidth: () => io.columns ?? 80,
    getErrHelpWidth: () => io.columns ?? 80,
    getOutHasColors: () => colourOn(io),
    getErrHasColors: () => colourOn(io),
  });
  registerServe(program, run);
  registerDb(program, run);
  registerAccount(program, run);
  registerOpen(program, run);
  registerApps(program, run);
  registerAuthorize(program, run);
  registerDeliver(program, run);
  registerDeliveries(program, run);
  registerTest(program, run);
  registerSay(program, run);
  registerMessages(program, run);
  registerGroups(program, run);
  groupByTask(program);
  return program;
}

/** `appreg --help` lists the commands by task, in the order a newcomer meets them. */
export const HELP_GROUPS: ReadonlyArray<readonly [heading: string, commands: readonly string[]]> = [
  ['Getting started:', ['serve', 'open', 'apps', 'authorize', 'deliver-test', 'test']],
  ['The workspace:', ['say', 'messages', 'channels', 'groups', 'react']],
  ['Accounts:', ['workspaces', 'users', 'login', 'logout', 'whoami', 'authorizations']],
  ['Operations:', ['deliveries', 'db']],
];

function groupByTask(program: Command): void {
  const order = HELP_GROUPS.flatMap(([heading, names]) => names.map((name) => ({ heading, name })));
  const rank = (c: Command) => {
    const i = order.findIndex((o) => o.name === c.name());
    return i < 0 ? order.length : i;
  };
  for (const c of program.commands) {
    const group = order.find((o) => o.name === c.name());
    if (group) c.helpGroup(group.heading);
  }
  (program.commands as Command[]).sort((a, b) => rank(a) - rank(b));
}

/**
 * Run the CLI once with `argv` as process.argv would hold it; resolves to the exit code (it never exits the process).
 */
export async function main(argv: string[], io: Io): Promise<number> {
  const run = createRun(io);
  const program = buildProgram(run);
  const json = argv.slice(2).some((a) => a === '--json');
  try {
    await program.parseAsync(argv);
    return run.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help')
        return EXIT.ok;
      if (json) writeJsonError(run, EXIT.usage, e.message.replace(/^error: /, ''));
      return EXIT.usage;
    }
    if (e instanceof CliError) {
      if (!recordOr(e.body)?.quiet) {
        io.stderr.write(`appreg: ${e.message}\n`);
        if (json) writeJsonError(run, e.exitCode, e.message, e.body);
      }
      return e.exitCode;
    }
    const message = `internal error: ${messageOf(e)}`;
    io.stderr.write(`appreg: ${message}\n`);
    if (json) writeJsonError(run, EXIT.internal, message);
    return EXIT.internal;
  }
}

const CODE_OF_EXIT: Record<number, string> = {
  [EXIT.internal]: 'internal_error',
  [EXIT.usage]: 'usage_error',
  [EXIT.unreachable]: 'daemon_unreachable',
  [EXIT.rejected]: 'rejected',
  [EXIT.daemonError]: 'daemon_error',
  [EXIT.deliveryFailed]: 'delivery_failed',
  [EXIT.invalidInput]: 'invalid_input',
  [EXIT.dataDirLocked]: 'data_dir_locked',
};

/**
 * With --json a failure is also a JSON object on stdout, so scripts parsing stdout get something: {error: {code,
 * message, details?}, exitCode}.
 */
function writeJsonError(run: Run, exitCode: number, message: string, body?: unknown): void {
  if (run.printedJson) return; // stdout already holds the command's own JSON (e.g. created, then the env file failed)
  const b = recordOr(body) ?? {};
  const error: Record<string, unknown> = {
    code: typeof b.code === 'string' ? b.code : (CODE_OF_EXIT[exitCode] ?? 'error'),
    message: typeof b.message === 'string' ? b.message : message,
  };
  if (Array.isArray(b.details)) error.details = b.details;
  run.io.stdout.write(JSON.stringify({ error, exitCode }) + '\n');
}
