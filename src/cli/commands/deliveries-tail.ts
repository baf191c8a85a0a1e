/** appreg deliveries tail: the delivery log live, one line per attempt, until Ctrl-C. */
import type { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import { action, examples, positiveInt } from '../options.js';
import type { Run } from '../run.js';
import type { Attempt, Delivery } from '../../client/delivery.js';
import { must } from '../../must.js';

/** `12:00:01 slash-command /standup → standup: 200 acked in 3 ms  dlv_…`, a retry or replay marked. */
function attemptLine(c: ChalkInstance, d: Delivery, a: Attempt): string {
  const subject = d.subject;
  const ok = a.outcome === 'acked' || a.outcome === 'response';
  const extra = a.replay ? ' (replay)' : a.retryNum > 0 ? ` (retry ${a.retryNum})` : '';
  const result = `${a.status === undefined ? '' : `${a.status} `}${a.outcome}`;
  const next =
    d.state === 'retrying' && d.nextAttemptAt && d.attempts.at(-1) === a
      ? c.dim(`, next attempt ${d.nextAttemptAt.slice(11, 19)}`)
      : '';
  return `${c.dim(a.at.slice(11, 19))} ${d.kind}${subject ? ` ${c.bold(subject)}` : ''} → ${d.appName}: ${ok ? c.green(result) : c.red(result)} in ${a.latencyMs} ms${extra}${next}  ${c.dim(d.id)}`;
}

/** How many of the newest deliveries each look reads: the most --limit may ask for. */
const WINDOW = 100;

export function registerDeliveriesTail(deliveries: Command, run: Run): void {
  deliveries
    .command('tail')
    .description(
      'show the latest deliveries, then each new attempt as it happens (one line each) until interrupted (Ctrl-C); --json prints one JSON line per attempt',
    )
    .option('--app <appId>', 'only this app')
    .option('--limit <n>', 'how many recent deliveries to show first (1-100)', '10')
    .option('--interval-ms <ms>', 'how often to look for new attempts', '500')
    .addHelpText(
      'after',
      examples('appreg deliveries tail', 'appreg deliveries tail --app app_123 --json | jq -r .outcome'),
    )
    .action(
      action(run, async ({ o, out, client: connect }) => {
        const client = connect();
        const interval = must(positiveInt(o.intervalMs, '--interval-ms'));
        const limit = must(positiveInt(o.limit, '--limit'));
        const read = (n: number) =>
          client.request<Delivery[]>('GET', `${client.base()}/deliveries`, {
            searchParams: { limit: String(n), ...(o.app ? { appId: String(o.app) } : {}) },
          });
        // Ctrl-C is heard from the start: a stop that comes as soon as something is printed ends it cleanly
        let stopped = false;
        let wake: () => void = () => {};
        void run.io.stopSignal().then(() => {
          stopped = true;
          wake();
        });
        // attempts already shown, per delivery
        const shown = new Map<string, number>();
        const show = (d: Delivery, from: number) => {
          for (const a of d.attempts.slice(from)) {
            if (out.json) {
              run.printedJson = true;
              run.io.stdout.write(
                JSON.stringify({
                  deliveryId: d.id,
                  kind: d.kind,
                  subject: d.subject || undefined,
                  appId: d.appId,
                  appName: d.appName,
                  state: d.state,
                  attempt: a,
                }) + '\n',
              );
            } else run.io.stdout.write(attemptLine(out.c, d, a) + '\n');
          }
          shown.set(d.id, d.attempts.length);
        };
        // The loop looks at the newest WINDOW deliveries: every attempt in them now is old, and of those the newest
        // --limit are shown (their last attempt each). Only what comes after is printed as it happens.
        const first = await read(Math.max(WINDOW, limit));
        for (const d of first) shown.set(d.id, d.attempts.length);
        for (const d of first.slice(0, limit).reverse()) show(d, Math.max(0, d.attempts.length - 1));
        if (!out.json) run.io.stderr.write(`following the deliveries${o.app ? ` of ${o.app}` : ''} (Ctrl-C to stop)\n`);

        while (!stopped) {
          await new Promise<void>((r) => {
            const timer = setTimeout(r, interval);
            wake = () => (clearTimeout(timer), r());
          });
          if (stopped) break;
          // oldest first, so that lines come in the order things happened
          for (const d of (await read(WINDOW)).reverse()) {
            const before = shown.get(d.id) ?? 0;
            if (d.attempts.length > before) show(d, before);
          }
        }
      }),
    );
}
