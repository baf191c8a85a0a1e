/** appreg test: run an app's conversation tests (docs/testing.md); the runner is loaded when it runs (test-run.ts). */
import type { Command } from 'commander';
import { action } from '../options.js';
import { CliError, EXIT } from '../../client/exit.js';
import type { Run } from '../run.js';

const REPORTERS = ['pretty', 'tap', 'junit', 'json'] as const;

export function registerTest(program: Command, run: Run): void {
  program
    .command('test [paths...]')
    .description(
      "run an app's conversation tests (suite files *.apptest.json / .yaml): start a daemon and the app, play each test, report for people or CI",
    )
    .option('--reporter <name>', `${REPORTERS.join('|')} (default pretty; --json is json)`)
    .option(
      '--output <file>',
      'write the report to this file (the terminal still shows the pretty one); with --init, the suite file to write',
    )
    .option('--grep <regex>', 'run only the tests whose "suite › test" name matches (case-insensitive)')
    .option('--bail', 'start no more tests after the first failure')
    .option('--jobs <n>', 'tests run at once, each in a channel of its own', '1')
    .option('--max-suite-bytes <n>', 'the largest suite file (and manifest) read, in bytes (default 1048576)')
    .option(
      '--allow-outside-paths',
      'let a suite name files and folders outside its own folder (symbolic links included)',
    )
    .option(
      '--init',
      'write a starter suite for the app of --manifest instead of running tests (an app on the official SDK is started once to read its whole manifest from its /manifest)',
    )
    .option('--manifest <file>', "with --init or --record-out: the app's manifest (default manifest.json)")
    .option('--force', 'with --init or --record-out: overwrite the suite file')
    .option(
      '--record',
      'record a conversation instead of running tests: what is done in the console and with appreg say, react and deliver-test, until Ctrl-C; then write it as a suite (--record-out)',
    )
    .option('--stop', 'with --record: stop the recording that is on (started elsewhere) and write it')
    .option('--recording <id>', 'write the suite of this recording (made in the console), stopping it if it is on')
    .option(
      '--record-out <file>',
      `where --record writes the suite (default recorded.apptest.yaml), its app started as --init guesses from that folder`,
    )
    .addHelpText(
      'after',
      `
Without --url (or APPREG_URL) a daemon of its own is started for the run, on a free port with a
throwaway store, and removed at the end. With --url the run uses that daemon, registers its own
apps and channels, and removes them at the end (the delivery log keeps what was sent).

Suite files are untrusted input: one larger than --max-suite-bytes, YAML nested too deeply or
whose aliases expand too far, a manifest or folder outside the suite's folder: each is refused
(exit 7) naming the file and the limit, and no error quotes a file's content.

Exit codes: 0 every test passed; 6 a test failed; 7 a suite file (or its manifest) is invalid;
2 usage (no suite found, an unreadable file); 3-5 the daemon given with --url: not reachable, it
refused a request, it failed.

Examples:
  $ appreg test                                         every *.apptest.{json,yaml,yml} under this folder
  $ appreg test examples/standup-app
  $ appreg test app.apptest.yaml --reporter junit --output report.xml
  $ appreg test --grep "modal" --bail --jobs 4
  $ appreg test --url http://127.0.0.1:8740 app.apptest.json
  $ appreg test --init --manifest manifest.json          write app.apptest.json for its commands, shortcuts and events
  $ appreg test --record --record-out app/standup.apptest.yaml   record until Ctrl-C, then write the suite beside app/manifest.json
  $ appreg test --record --stop --record-out app/standup.apptest.yaml   stop the recording that is on (another terminal) and write it
  $ appreg test --recording rec_1a2b3c4d --record-out app/standup.apptest.yaml   the suite of a recording made in the console`,
    )
    .action(
      // [paths...]: a list, empty when none is given
      action<Record<string, unknown>, [string[] | undefined]>(run, async (x, given) => {
        if (x.o.record || x.o.recording !== undefined) {
          const { recordCommand } = await import('./test-record.js');
          return recordCommand(x);
        }
        if (x.o.recordOut !== undefined || x.o.stop)
          throw new CliError('--record-out and --stop go with --record (or --recording ID)', EXIT.usage);
        const paths = given ?? [];
        const { testCommand } = await import('./test-run.js');
        await testCommand(run, x.o, x.out, paths, REPORTERS);
      }),
    );
}
