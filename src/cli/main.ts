/** The appreg program: one thin file per command group, each handing off to the daemon's API. */
import { Command, CommanderError } from 'commander';
import { CliError, EXIT, printed } from './output.js';
import { registerServe } from './commands/serve.js';
import { registerApps } from './commands/apps.js';
import { registerAccount } from './commands/account.js';
import { registerAuthorize } from './commands/authorize.js';
import { registerDeliver, registerAppsSync } from './commands/deliver.js';

export function buildProgram(): Command {
  const program = new Command('appreg')
    .description('Register, authorize and exercise team-messaging workspace apps against a self-hosted daemon.')
    .option('--url <url>', 'daemon URL [APPREG_URL] (default: read from <data-dir>/daemon.json)')
    .option('--data-dir <dir>', 'data directory of the local daemon [APPREG_DATA_DIR] (default ./data)')
    .option('--token <token>', 'management token to use [APPREG_TOKEN]')
    .option('--json', 'machine-readable JSON output')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `
Examples:
  $ appreg serve                                   start the daemon (first start creates a workspace and credentials)
  $ appreg apps create --file manifest.json        register an app, print its id and secrets
  $ appreg apps list --json                        list your apps for scripts
  $ appreg authorize app_123 --exchange --json     authorize as you and print the tokens
  $ appreg deliver-test app_123 --kind slash-command --probe-signature
                                                   CI: fail unless the app answers in 3 s and checks signatures
Exit codes: 0 ok, 1 internal, 2 usage, 3 daemon not reachable, 4 rejected by the daemon, 5 daemon error, 6 a delivery test failed.`);
  program.exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerServe(program);
  registerAccount(program);
  registerApps(program);
  registerAuthorize(program); // after registerApps: it adds `apps uninstall` to that group
  registerDeliver(program);
  registerAppsSync(program); // adds `apps sync`
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT.ok;
      if (wantsJson(argv)) writeJsonError(EXIT.usage, e.message.replace(/^error: /, ''));
      return EXIT.usage;
    }
    if (e instanceof CliError) {
      if (!(e.body as { quiet?: boolean } | undefined)?.quiet) {
        process.stderr.write(`appreg: ${e.message}\n`);
        if (wantsJson(argv)) writeJsonError(e.exitCode, e.message, e.body);
      }
      return e.exitCode;
    }
    const message = `internal error: ${(e as Error)?.message ?? String(e)}`;
    process.stderr.write(`appreg: ${message}\n`);
    if (wantsJson(argv)) writeJsonError(EXIT.internal, message);
    return EXIT.internal;
  }
}

const wantsJson = (argv: string[]) => argv.slice(2).some((a) => a === '--json');

const CODE_OF_EXIT: Record<number, string> = { [EXIT.internal]: 'internal_error', [EXIT.usage]: 'usage_error', [EXIT.unreachable]: 'daemon_unreachable', [EXIT.rejected]: 'rejected', [EXIT.daemonError]: 'daemon_error', [EXIT.deliveryFailed]: 'delivery_failed' };

/** With --json a failure is also a JSON object on stdout, so scripts parsing stdout get something: {error: {code, message, details?}, exitCode}. */
function writeJsonError(exitCode: number, message: string, body?: unknown): void {
  if (printed.json) return; // stdout already holds the command's own JSON (e.g. created, then the env file failed)
  const b = (body && typeof body === 'object' ? body : {}) as { code?: unknown; message?: unknown; details?: unknown };
  const error: Record<string, unknown> = { code: typeof b.code === 'string' ? b.code : CODE_OF_EXIT[exitCode] ?? 'error', message: typeof b.message === 'string' ? b.message : message };
  if (Array.isArray(b.details)) error.details = b.details;
  process.stdout.write(JSON.stringify({ error, exitCode }) + '\n');
}
