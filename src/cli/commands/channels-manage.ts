/** appreg channels archive|delete: a person's changes to a channel itself (docs/protocol.md §2.8). */
import type { Command } from 'commander';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples } from '../options.js';
import type { Run } from '../run.js';
import type { ChannelInfo } from '../../client/workspace.js';
import { must } from '../../must.js';

/** A channel as the daemon's path takes it: id, name or #name (the # encoded). */
const channelPath = (base: string, channel: string) => `${base}/channels/${encodeURIComponent(channel)}`;

/** Adds archive and delete to the `channels` command group. */
export function registerChannelManagement(channels: Command, run: Run): void {
  channels
    .command('archive <channel>')
    .description(
      'archive a channel you are a member of (id, name or #name): nothing more can be posted in it; apps subscribed to CHANNEL_ARCHIVED hear of it',
    )
    .addHelpText(
      'after',
      examples('appreg channels archive old-project', 'appreg channels archive "#old-project" --json'),
    )
    .action(
      action(run, async ({ out, client: connect }, channel) => {
        const client = connect();
        const res = await client.request<ChannelInfo>('POST', `${channelPath(client.base(), must(channel))}/archive`);
        out.print(res, () => `archived #${res.channel.name} (${res.channel.id})`);
      }),
    );
  channels
    .command('delete <channel>')
    .description(
      'delete a channel you created, with all its messages (id, name or #name); apps subscribed to CHANNEL_DELETED hear of it',
    )
    .option('--yes', 'confirm: the channel and its messages cannot be brought back')
    .addHelpText(
      'after',
      `
Exit codes: 0 deleted; 2 without --yes; 4 refused (not its creator: 403; general, random or a
direct channel: 400; no such channel: 404).
${examples('appreg channels delete old-project --yes', 'appreg channels delete ch_123 --yes --json')}`,
    )
    .action(
      action(run, async ({ o, out, client: connect }, channel) => {
        if (!o.yes)
          throw new CliError(
            `deleting ${channel} removes it and all its messages for good: add --yes to confirm`,
            EXIT.usage,
          );
        const client = connect();
        await client.request('DELETE', channelPath(client.base(), must(channel)));
        out.print({ deleted: channel }, () => `deleted ${channel}`);
      }),
    );
}
