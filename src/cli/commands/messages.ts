/** The workspace as a person sees it: appreg channels list|create, messages list|tail, react. */
import type { Command } from 'commander';
import { table } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples, positiveInt } from '../options.js';
import type { Run } from '../run.js';
import type { ChannelInfo, Message } from '../../client/workspace.js';
import { formatMessage } from '../message-line.js';
import { registerChannelManagement } from './channels-manage.js';
import { must } from '../../must.js';

/** The workspace helpers, loaded when a command runs (not at start). */
const workspace = () => import('../../client/workspace.js');

const TYPES = ['PUBLIC', 'PRIVATE', 'DIRECT', 'SELF'];

/** `tada`, `:tada:` → `:tada:` (the platform's reaction code). */
const reactionCode = (emoji: string) => (/^:.+:$/.test(emoji) ? emoji : `:${emoji.replace(/^:|:$/g, '')}:`);

export function registerMessages(program: Command, run: Run): void {
  const channels = program.command('channels').description('channels of the local workspace, as you see them');
  channels
    .command('list')
    .description('the channels you can see: public ones, and private, direct and self channels you are a member of')
    .option('--types <list>', `comma-separated ${TYPES.join(',')} (default: all)`)
    .addHelpText('after', examples('appreg channels list', 'appreg channels list --types PUBLIC,PRIVATE --json'))
    .action(
      action(run, async ({ o, out, client: connect }) => {
        const client = connect();
        const searchParams: Record<string, string> = {};
        if (o.types !== undefined) searchParams.types = String(o.types).toUpperCase();
        const list = await client.request<ChannelInfo[]>('GET', `${client.base()}/channels`, { searchParams });
        out.print(list, (c) =>
          table(
            c,
            ['ID', 'NAME', 'TYPE', 'MEMBERS', 'YOU', 'DESCRIPTION'],
            list.map(({ channel: ch, users }) => [
              ch.id,
              ch.name ? `#${ch.name}` : '-',
              ch.channelType + (ch.isArchived ? ' (archived)' : ''),
              String(users?.length ?? '-'),
              ch.isMember ? 'member' : '-',
              ch.description ?? '',
            ]),
          ),
        );
      }),
    );
  channels
    .command('create <name>')
    .description('create a channel (public unless --private); you are its first member')
    .option('--private', 'a private channel: only its members see it')
    .option('--description <text>', 'what the channel is for (at most 250 characters)')
    .addHelpText(
      'after',
      examples('appreg channels create standups', 'appreg channels create "team only" --private --json'),
    )
    .action(
      action(run, async ({ o, out, client: connect }, name) => {
        const client = connect();
        const body: Record<string, unknown> = {
          name: must(name).replace(/^#/, ''),
          type: o.private ? 'PRIVATE' : 'PUBLIC',
        };
        if (o.description !== undefined) body.description = String(o.description);
        const res = await client.request<ChannelInfo>('POST', `${client.base()}/channels`, { json: body });
        out.print(
          res,
          () => `created #${res.channel.name} (${res.channel.id}, ${res.channel.channelType.toLowerCase()})`,
        );
      }),
    );
  registerChannelManagement(channels, run);

  const messages = program.command('messages').description('messages of a channel, as you see them');
  messages
    .command('list <channel>')
    .description(
      'the latest messages of a channel (id, name or #name), oldest first; thread replies only when also sent to the channel, or with --thread',
    )
    .option('--limit <n>', 'how many (1-100)', '20')
    .option('--thread <messageId>', 'the replies in the thread of this message instead')
    .addHelpText(
      'after',
      examples(
        'appreg messages list general',
        'appreg messages list "#standups" --limit 5 --json',
        'appreg messages list general --thread msg_123',
      ),
    )
    .action(
      action(run, async ({ o, out, client: connect }, channel) => {
        const { listMessages, listReplies, nameCache } = await workspace();
        const client = connect();
        const limit = positiveInt(o.limit, '--limit');
        const names = nameCache(client);
        if (o.thread !== undefined) {
          const replies = await listReplies(client, must(channel), String(o.thread), limit);
          const known = out.json ? new Map<string, string>() : await names(replies.map((m) => m.author));
          return out.print(replies, (c) =>
            replies.length ? replies.map((m) => formatMessage(c, m, known)).join('\n') : c.dim('(no replies)'),
          );
        }
        const page = await listMessages(client, must(channel), { limit });
        const known = out.json ? new Map<string, string>() : await names(page.messages.map((m) => m.author));
        out.print(
          page,
          (c) =>
            (page.messages.length
              ? page.messages.map((m) => formatMessage(c, m, known)).join('\n')
              : c.dim('(no messages)')) +
            (page.hasMoreBefore ? `\n${c.dim('(older messages not shown: raise --limit)')}` : ''),
        );
      }),
    );
  messages
    .command('tail <channel>')
    .description(
      'show the latest messages of a channel, then follow new ones until interrupted (Ctrl-C); --json prints one message per line',
    )
    .option('--limit <n>', 'how many earlier messages to show first (1-100)', '10')
    .option('--interval-ms <ms>', 'how often to look for new messages', '500')
    .addHelpText(
      'after',
      examples('appreg messages tail general', 'appreg messages tail "#standups" --json | jq -r .text'),
    )
    .action(
      action(run, async ({ o, out, client: connect }, channel) => {
        const { listMessages, markOf, messagesAfter, nameCache } = await workspace();
        const client = connect();
        const interval = must(positiveInt(o.intervalMs, '--interval-ms'));
        const names = nameCache(client);
        let stopped = false;
        let wake: () => void = () => {};
        void run.io.stopSignal().then(() => {
          stopped = true;
          wake();
        });
        const show = async (list: Message[]) => {
          if (out.json) {
            run.printedJson = true;
            for (const m of list) run.io.stdout.write(JSON.stringify(m) + '\n');
            return;
          }
          const known = await names(list.map((m) => m.author));
          for (const m of list) run.io.stdout.write(formatMessage(out.c, m, known) + '\n');
        };
        const first = await listMessages(client, must(channel), { limit: positiveInt(o.limit, '--limit') });
        await show(first.messages);
        let cursor = first.messages.at(-1)?.id;
        if (!out.json) run.io.stderr.write(`following ${channel} (Ctrl-C to stop)\n`);
        while (!stopped) {
          await new Promise<void>((r) => {
            const timer = setTimeout(r, interval);
            wake = () => (clearTimeout(timer), r());
          });
          if (stopped) break;
          let fresh: Message[];
          try {
            fresh = await messagesAfter(client, must(channel), cursor);
          } catch (e) {
            // the message the cursor names is gone (deleted, or beyond the channel's bound): carry on from the newest
            if (e instanceof CliError && e.exitCode === EXIT.rejected && cursor) {
              cursor = await markOf(client, must(channel));
              continue;
            }
            throw e;
          }
          await show(fresh);
          cursor = fresh.at(-1)?.id ?? cursor;
        }
      }),
    );

  program
    .command('react <messageId> <emoji>')
    .description('add your reaction to a message (tada or :tada:); the apps subscribed to REACTION_ADDED hear of it')
    .addHelpText('after', examples('appreg react msg_123 tada', 'appreg react msg_123 :white_check_mark: --json'))
    .action(
      action(run, async ({ out, client: connect }, messageId, emoji) => {
        const client = connect();
        const code = reactionCode(must(emoji));
        await client.request('POST', `${client.base()}/messages/${encodeURIComponent(must(messageId))}/reactions`, {
          json: { code },
        });
        out.print({ messageId, code }, () => `reacted ${code} to ${messageId}`);
      }),
    );
}
