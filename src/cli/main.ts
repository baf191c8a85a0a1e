/** The appreg program: one thin file per command group, each handing off to the daemon's API. */
import { Command, CommanderError } from 'commander';
import { CliError, EXIT } from './output.js';
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
      return EXIT.usage;
    }
    if (e instanceof CliError) {
      if (!(e.body as { quiet?: boolean } | undefined)?.quiet) process.stderr.write(`appreg: ${e.message}\n`);
      return e.exitCode;
    }
    process.stderr.write(`appreg: internal error: ${(e as Error)?.message ?? String(e)}\n`);
    return EXIT.internal;
  }
}
