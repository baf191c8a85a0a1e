/** appreg deliveries …: the delivery log — list, follow, show, replay and cancel. */
import type { Command } from 'commander';
import { table } from '../output.js';
import { EXIT } from '../../client/exit.js';
import { action, examples, positiveInt } from '../options.js';
import type { Run } from '../run.js';
import type { Delivery } from '../../client/delivery.js';
import { attemptsTable, describe } from '../delivery-view.js';
import { registerDeliveriesTail } from './deliveries-tail.js';

export function registerDeliveries(program: Command, run: Run): void {
  const deliveries = program.command('deliveries').description('the delivery log: every trigger, event and attempt');
  deliveries
    .command('list')
    .description('recent deliveries of your apps, newest first by creation time')
    .option('--app <appId>', 'only this app')
    .option('--failed', 'only failed or retrying deliveries')
    .option('--limit <n>', 'how many (1-1000)', '50')
    .addHelpText('after', examples('appreg deliveries list --failed', 'appreg deliveries list --app app_123 --json'))
    .action(
      action(run, async ({ o, out, client: connect }) => {
        const client = connect();
        const searchParams: Record<string, string> = { limit: String(positiveInt(o.limit, '--limit')) };
        if (o.app) searchParams.appId = String(o.app);
        if (o.failed) searchParams.failed = 'true';
        const list = await client.request<Delivery[]>('GET', `${client.base()}/deliveries`, { searchParams });
        // The daemon sorts by createdAt, newest first: the CREATED column is the order's key.
        out.print(
          list,
          (c) =>
            table(
              c,
              ['CREATED', 'ID', 'KIND', 'APP', 'STATE', 'OUTCOME', 'STATUS', 'LATENCY'],
              list.map((d) => {
                const a = d.attempts.at(-1);
                return [
                  d.createdAt,
                  d.id,
                  d.kind,
                  d.appName,
                  d.state,
                  d.outcome ?? '-',
                  a?.status === undefined ? '-' : String(a.status),
                  a ? `${a.latencyMs} ms` : '-',
                ];
              }),
            ) +
            (list.length
              ? `\n${c.dim(`${list.length} deliver${list.length === 1 ? 'y' : 'ies'}, newest first by creation time`)}`
              : ''),
        );
      }),
    );
  registerDeliveriesTail(deliveries, run);
  deliveries
    .command('show <deliveryId>')
    .alias('get')
    .description('one delivery: what was sent, every attempt, what came back')
    .addHelpText('after', examples('appreg deliveries show dlv_123'))
    .action(
      action(run, async ({ out, client: connect }, id) => {
        const client = connect();
        const d = await client.request<Delivery>('GET', `${client.base()}/deliveries/${encodeURIComponent(id)}`);
        out.print(
          d,
          (c) =>
            describe(c, d) +
            (d.attempts.length === 1 ? `\n${c.bold('attempts')}\n${attemptsTable(c, d.attempts)}` : ''),
        );
      }),
    );
  deliveries
    .command('replay <deliveryId>')
    .description('send a delivery again (signed afresh, recorded as a new attempt); exit 6 if it fails')
    .addHelpText('after', examples('appreg deliveries replay dlv_123'))
    .action(
      action(run, async ({ out, client: connect }, id) => {
        const client = connect();
        const d = await client.request<Delivery>(
          'POST',
          `${client.base()}/deliveries/${encodeURIComponent(id)}/replay`,
          { timeoutMs: 120_000 },
        );
        out.print(d, (c) => describe(c, d));
        if (d.state !== 'delivered') run.exitCode = EXIT.deliveryFailed;
      }),
    );
  deliveries
    .command('cancel <deliveryId>')
    .description('stop the retries of an event that is waiting for its next attempt (state becomes cancelled)')
    .addHelpText(
      'after',
      `
Exit codes: 0 cancelled; 4 the delivery is unknown or not an event waiting for a retry (delivery_not_retrying).
${examples('appreg deliveries cancel dlv_123', 'appreg deliveries list --failed --json | jq -r \'.[] | select(.state=="retrying") | .id\' | xargs -n1 appreg deliveries cancel')}`,
    )
    .action(
      action(run, async ({ out, client: connect }, id) => {
        const client = connect();
        const d = await client.request<Delivery>(
          'POST',
          `${client.base()}/deliveries/${encodeURIComponent(id)}/cancel`,
        );
        out.print(d, (c) => `cancelled ${d.id}${d.cancelReason ? ` (${d.cancelReason})` : ''}\n${describe(c, d)}`);
      }),
    );
}
