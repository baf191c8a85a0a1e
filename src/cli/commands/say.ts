/**
 * appreg say: post in a channel as a workspace user. A text starting with `/command` is a slash
 * command, as in the platform's client: the CLI shows what the user would see, then watches the
 * channel for what the app does in reaction (say-run.ts, loaded when the command runs).
 */
import type { Command } from 'commander';
import { action } from '../options.js';
import type { Run } from '../run.js';
import { EXPECT } from './deliver.js';
import type { SayOptions } from './say-run.js';

export function registerSay(program: Command, run: Run): void {
  program
    .command('say <channel> <text...>')
    .description(
      'post in a channel (id, name or #name) as a workspace user; a text starting with /command runs that slash command and shows what the app did',
    )
    .option(
      '--as <user>',
      'post as this user of your workspace (id or email; default: you). Anyone else needs you to own the workspace: the daemon gives you a token of theirs for this command, revoked when it ends; their own logins are not touched',
    )
    .option('--thread <messageId>', 'reply in the thread of this message')
    .option(
      '--wait-ms <ms>',
      "after a slash command, how long to watch the channel for the app's messages; it stops 1 s after the last one (0: do not watch)",
      '3000',
    )
    .option('--expect <what>', `after a slash command, ${EXPECT.join('|')} as for deliver-test`, 'ok')
    .option(
      '--expect-message <regex>',
      'after a slash command, fail unless the app posts a message matching this (in the channel or a reply in one of its threads)',
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 posted (a slash command: the app answered as expected); 6 the app did not answer
as expected or posted no matching message; 2-5 as for every command.

Examples:
  $ appreg say general "hello from the CLI"
  $ appreg say "#standups" /standup start --wait-ms 5000
  $ appreg say general /standup --expect-message "standup started" --json
  $ appreg say general "looks good" --thread msg_123 --as dev@example.com`,
    )
    .action(
      // <channel> <text...>: a word, then the variadic words as one list
      action<SayOptions, [string, string[]]>(run, async ({ o, out, client }, channel, words) => {
        const { say } = await import('./say-run.js');
        await say(run, o, out, () => client(), channel, words);
      }),
    );
}
