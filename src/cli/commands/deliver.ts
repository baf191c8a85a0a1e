/**
 * appreg deliver-test and appreg deliveries list|show|replay|cancel: send triggers and events to an app, and the
 * delivery log.
 */
import type { Command } from 'commander';
import { kv, table, type Out } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { action, examples, nonNegativeInt, positiveInt, readJsonFile, regexOption } from '../options.js';
import type { Client } from '../../client/daemon-client.js';
import type { Run } from '../run.js';
import type { Message } from '../../client/workspace.js';
import type { Attempt, Delivery } from '../../client/delivery.js';
import { formatMessage } from '../message-line.js';
import { registerDeliveriesTail } from './deliveries-tail.js';
import { must } from '../../must.js';

/** The workspace helpers, loaded when a command runs (not at start). */
type Workspace = typeof import('../../client/workspace.js');

const KINDS = [
  'slash-command',
  'global-shortcut',
  'message-shortcut',
  'block-interaction',
  'view-action',
  'dynamic-menu',
  'event',
];
export const EXPECT = ['ok', 'ack', 'nack', 'response', 'any'];

interface ProbeResult {
  outcome: string;
  status?: number;
  latencyMs: number;
  error?: string;
  refused: boolean;
}
interface Probe {
  wrongSignature: ProbeResult;
  unsigned: ProbeResult;
  refusedBoth: boolean;
}

/** Whether the outcome is what the user asked for. */
export function meets(expect: string, outcome: string | undefined): boolean {
  switch (expect) {
    case 'ack':
      return outcome === 'acked';
    case 'nack':
      return outcome === 'nacked';
    case 'response':
      return outcome === 'response';
    case 'any':
      return outcome === 'acked' || outcome === 'nacked' || outcome === 'response';
    default:
      return outcome === 'acked' || outcome === 'response';
  }
}

function attemptsTable(c: Out['c'], attempts: Attempt[]): string {
  // A replay (deliveries replay) is marked: it is not one of the schedule's retries.
  return table(
    c,
    ['#', 'AT', 'OUTCOME', 'STATUS', 'LATENCY', 'DETAIL'],
    attempts.map((a) => [
      a.replay ? `${a.retryNum} (replay)` : String(a.retryNum),
      a.at,
      a.outcome,
      a.status === undefined ? '-' : String(a.status),
      `${a.latencyMs} ms`,
      a.message ?? a.error ?? '',
    ]),
  );
}

export function describe(c: Out['c'], d: Delivery): string {
  const last = d.attempts.at(-1);
  const rows: Array<[string, unknown]> = [
    ['delivery', d.id],
    ['kind', d.kind],
    ['app', `${d.appName} (${d.appId})`],
    ['target', d.transport === 'socket' ? 'socket mode' : d.url],
    ['state', d.state === 'cancelled' && d.cancelReason ? `cancelled (${d.cancelReason})` : d.state],
    ['outcome', d.outcome],
    ['status', last?.status ?? '-'],
    ['latency', last ? `${last.latencyMs} ms` : '-'],
  ];
  if (d.ephemeralMessage) rows.push(['shown to the user', d.ephemeralMessage]);
  // A next attempt exists only while the schedule still holds one.
  if (d.state === 'retrying' && d.nextAttemptAt) rows.push(['next attempt', d.nextAttemptAt]);
  if (last?.error) rows.push(['error', last.error]);
  let s = kv(c, rows);
  // The log keeps no payload for a trigger the app answered well: after a restart it reads back null.
  s += `\n${c.bold('sent')}\n${d.payload === null || d.payload === undefined ? c.dim('(payload not kept: a trigger that succeeded is logged without it)') : JSON.stringify(d.payload, null, 2)}`;
  if (d.response !== undefined)
    s += `\n${c.bold('answer')}\n${typeof d.response === 'string' ? d.response : JSON.stringify(d.response, null, 2)}`;
  else if (last?.excerpt) s += `\n${c.bold('answer')}\n${last.excerpt}`;
  if (d.attempts.length > 1) s += `\n${c.bold('attempts')}\n${attemptsTable(c, d.attempts)}`;
  return s;
}

/**
 * On a terminal (stderr, not with --json), one line on stderr once the wait passes a second, so a slow app does not
 * look like a hang.
 */
export async function waitingNotice<T>(
  run: Run,
  json: boolean,
  budgetMs: number | undefined,
  pending: Promise<T>,
): Promise<T> {
  if (!(run.io.stderrIsTTY ?? run.io.isTTY) || json) return pending;
  const timer = run.io.clock.setTimeout(
    () => run.io.stderr.write(`waiting for the app…${budgetMs === undefined ? '' : ` (budget ${budgetMs} ms)`}\n`),
    WAIT_NOTICE_MS,
  );
  try {
    return await pending;
  } finally {
    run.io.clock.clear(timer);
  }
}
const WAIT_NOTICE_MS = 1000;
/** The watch a check starts by itself ends this long after the app's last message. */
const QUIET_MS = 1000;

/** A block interaction's element types (its `actionType`), as the platform names them. */
const ACTION_TYPES = [
  'BUTTON',
  'STATIC_SELECT_MENU',
  'DYNAMIC_SELECT_MENU',
  'CHECKBOXES',
  'DATE_PICKER',
  'DATE_RANGE_PICKER',
  'PLAIN_TEXT_INPUT',
];

/** `--values a,b`: the items (a backslash keeps a comma inside one); `--values ''` is none, every box unticked. */
function valuesOption(v: unknown): string[] {
  const s = String(v);
  return s === '' ? [] : s.split(/(?<!\\),/).map((x) => x.replace(/\\,/g, ','));
}

/**
 * The `values` and `actionType` of a block interaction: `--values` sends `{"values":[…]}` (checkboxes, a date range;
 * CHECKBOXES unless --action-type says which), `--action-type` names the element.
 */
function interactionOptions(o: Record<string, unknown>, kind: string): { values?: string[]; actionType?: string } {
  const out: { values?: string[]; actionType?: string } = {};
  if (o.values !== undefined) {
    if (kind !== 'block-interaction') throw new CliError('--values is for --kind block-interaction', EXIT.usage);
    if (o.value !== undefined)
      throw new CliError(
        '--value and --values: give one (--value for a button or a select, --values for checkboxes or a date range)',
        EXIT.usage,
      );
    out.values = valuesOption(o.values);
  }
  if (o.actionType !== undefined) {
    const t = String(o.actionType).toUpperCase().replace(/-/g, '_');
    if (!ACTION_TYPES.includes(t))
      throw new CliError(`--action-type must be one of ${ACTION_TYPES.join(', ')}`, EXIT.usage);
    if (kind !== 'block-interaction') throw new CliError('--action-type is for --kind block-interaction', EXIT.usage);
    out.actionType = t;
  } else if (out.values) out.actionType = 'CHECKBOXES';
  return out;
}

const SOURCE_TYPES: Record<string, string> = { message: 'MESSAGE', ephemeral: 'EPHEMERAL_MESSAGE', view: 'VIEW' };
const VIEW_ACTIONS: Record<string, string> = { submit: 'SUBMIT', close: 'CLOSE' };

/**
 * The channel whose messages tell what the app did: --channel, the event body's cId, else #general (the trigger's
 * default).
 */
function channelToWatch(body: Record<string, unknown>): string {
  if (typeof body.channelId === 'string') return body.channelId;
  const cId = (body.body as { cId?: unknown } | undefined)?.cId;
  return typeof cId === 'string' ? cId : 'general';
}

/**
 * The mark before a trigger; undefined when the channel cannot be read (a made-up id in --payload): then nothing is
 * watched.
 */
async function markBefore(
  w: Workspace,
  client: Client,
  channel: string,
  needed: boolean,
): Promise<{ mark?: string } | undefined> {
  try {
    return { mark: await w.markOf(client, channel, true) };
  } catch (e) {
    if (needed || !(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e;
    return undefined;
  }
}

export function registerDeliver(program: Command, run: Run): void {
  program
    .command('deliver-test <appId>')
    .description(
      'send a signed trigger or event to an app, wait for its answer, and fail unless it answered as expected',
    )
    .requiredOption('--kind <kind>', KINDS.join('|'))
    .option('--command <command>', "slash command (default: the app's first)")
    .option('--text <text>', 'text after the slash command')
    .option('--shortcut <name>', "shortcut name (default: the app's first of that kind)")
    .option(
      '--message-id <id>',
      'the message of a message shortcut, or whose block is clicked (block-interaction; default: a message carrying the block is posted first)',
    )
    .option('--on-action <id>', 'onAction of a block interaction or dynamic menu')
    .option('--value <value>', 'value of a block interaction or dynamic menu')
    .option(
      '--values <a,b>',
      'block-interaction: the values of checkboxes (every box ticked; "" for none) or a date range (start,end), sent as {"values":[…]}; \\, is a comma inside a value',
    )
    .option(
      '--action-type <type>',
      `block-interaction: the element clicked, ${ACTION_TYPES.join('|')} (default BUTTON; CHECKBOXES with --values)`,
    )
    .option('--query <text>', 'what the user typed in a dynamic menu')
    .option(
      '--view-file <view.json>',
      'view object for view-action, or the view whose block is clicked (block-interaction; default: your home view of the app, if it published one)',
    )
    .option('--event <type>', 'event type, e.g. NEW_MESSAGE (default: the first subscribed)')
    .option('--body-file <body.json>', 'event body (sent JSON-encoded as the platform does)')
    .option('--payload <file.json>', 'send this exact body instead of the built one')
    .option('--timeout-ms <ms>', 'acknowledgement budget', '3000')
    .option(
      '--expect <what>',
      `${EXPECT.join('|')}: ok = an ack or a modal/menu response; any = any answer in time`,
      'ok',
    )
    .option('--channel <channel>', 'the channel the trigger happens in (id, name or #name; default #general)')
    .option('--source-type <type>', 'block-interaction: message|ephemeral|view (what holds the clicked block)')
    .option('--view-action <action>', 'view-action: submit|close')
    .option(
      '--wait-ms <ms>',
      'after the answer, how long to watch the channel for messages the app posts (default 0: one look; 3000 with --expect-message, or with --probe-signature, which stops 1 s after the last one)',
    )
    .option(
      '--expect-message <regex>',
      'fail unless the app posts a message matching this in the channel (or a reply in one of its threads) within the wait',
    )
    .option(
      '--probe-signature',
      'also send one request with a wrong signature and one unsigned; fail unless the app refuses both',
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 the app answered as expected within the budget; 6 it did not (timeout, error,
wrong answer, or it accepted a badly signed request); 2-5 as for every command.

An event's 200 says the app received it, not that its handler ran: the official SDK answers an
event before it handles it, so a handler that throws still passes here. --expect-message checks
what the handler did; appreg test fails a step when the app it started prints a crash.

Examples:
  $ appreg deliver-test app_123 --kind slash-command --command /standup --text "start"
  $ appreg deliver-test app_123 --kind global-shortcut --shortcut start_standup --probe-signature
  $ appreg deliver-test app_123 --kind dynamic-menu --on-action pick_channel --query gen --expect response
  $ appreg deliver-test app_123 --kind event --event NEW_MESSAGE --body-file message.json --json
  $ appreg deliver-test app_123 --kind slash-command --command /standup --channel standups --expect-message "standup started"
  $ appreg deliver-test app_123 --kind block-interaction --source-type ephemeral --on-action approve --value yes
  $ appreg deliver-test app_123 --kind block-interaction --on-action toppings --values cheese,ham
  $ appreg deliver-test app_123 --kind block-interaction --on-action dates --values 2026-01-05,2026-01-09 --action-type date_range_picker
  $ appreg deliver-test app_123 --kind view-action --view-action close --view-file view.json`,
    )
    .action(
      action(run, async ({ o, out, client: connect }, appId) => {
        const kind = String(o.kind);
        if (!KINDS.includes(kind)) throw new CliError(`--kind must be one of ${KINDS.join(', ')}`, EXIT.usage);
        const expect = String(o.expect);
        if (!EXPECT.includes(expect)) throw new CliError(`--expect must be one of ${EXPECT.join(', ')}`, EXIT.usage);
        const timeoutMs = must(positiveInt(o.timeoutMs, '--timeout-ms'));
        const body: Record<string, unknown> = { appId, kind, timeoutMs };
        const map: Array<[string, string]> = [
          ['command', 'command'],
          ['text', 'text'],
          ['shortcut', 'shortcut'],
          ['messageId', 'messageId'],
          ['onAction', 'onAction'],
          ['value', 'value'],
          ['query', 'query'],
          ['event', 'event'],
        ];
        for (const [opt, field] of map) if (o[opt] !== undefined) body[field] = String(o[opt]);
        Object.assign(body, interactionOptions(o, kind));
        if (o.viewFile) {
          body.view = readJsonFile(run, String(o.viewFile), 'view file');
          if (kind === 'block-interaction') body.sourceType = 'VIEW';
        }
        if (o.sourceType !== undefined) {
          const st = SOURCE_TYPES[String(o.sourceType).toLowerCase()];
          if (!st)
            throw new CliError(`--source-type must be one of ${Object.keys(SOURCE_TYPES).join(', ')}`, EXIT.usage);
          if (kind !== 'block-interaction' && kind !== 'dynamic-menu')
            throw new CliError('--source-type is for --kind block-interaction (or dynamic-menu)', EXIT.usage);
          body.sourceType = st;
        }
        if (kind === 'block-interaction' && o.messageId !== undefined) {
          if (body.sourceType === 'VIEW')
            throw new CliError(
              '--message-id names a message: a block interaction on a view is about the view (--view-file, else your home view of the app)',
              EXIT.usage,
            );
          body.sourceId = String(o.messageId);
        }
        if (o.viewAction !== undefined) {
          const va = VIEW_ACTIONS[String(o.viewAction).toLowerCase()];
          if (!va)
            throw new CliError(`--view-action must be one of ${Object.keys(VIEW_ACTIONS).join(', ')}`, EXIT.usage);
          if (kind !== 'view-action') throw new CliError('--view-action is for --kind view-action', EXIT.usage);
          body.viewActionType = va;
        }
        if (o.bodyFile) body.body = readJsonFile(run, String(o.bodyFile), 'body file');
        if (o.payload) body.payload = readJsonFile(run, String(o.payload), 'payload file');
        const w = await import('../../client/workspace.js');
        const re = regexOption(o.expectMessage, '--expect-message');
        const waitGiven = nonNegativeInt(o.waitMs, '--wait-ms');
        const client = connect();
        if (o.channel !== undefined) body.channelId = await w.resolveChannelId(client, String(o.channel));
        const watched = channelToWatch(body);
        const before = await markBefore(w, client, watched, !!re);
        const d = await waitingNotice(
          run,
          out.json,
          timeoutMs,
          client.request<Delivery>('POST', `${client.base()}/deliveries`, {
            json: body,
            timeoutMs: timeoutMs + 60_000,
          }),
        );
        // the message a block interaction was made about is the daemon's, not the app's answer
        const source =
          kind === 'block-interaction' && o.messageId === undefined
            ? (d.payload as { sourceId?: unknown } | null)?.sourceId
            : undefined;
        const skip = new Set(typeof source === 'string' ? [source] : []);
        // a check (a message expected; the signature probe of an app that answered) waits for what the app posts after
        // its answer, as say does
        const waitMs = waitGiven ?? (re || (o.probeSignature && meets('any', d.outcome)) ? 3000 : 0);
        const posted: Message[] | undefined = before
          ? await w.watch(client, watched, before.mark, {
              waitMs,
              skip,
              until: re ? (s) => s.some((m) => re.test(m.text)) : undefined,
              quietMs: re || waitGiven !== undefined ? undefined : QUIET_MS,
              clock: run.io.clock,
            })
          : undefined;
        const names =
          posted?.length && !out.json
            ? await w.nameCache(client)(posted.map((m) => m.author))
            : new Map<string, string>();
        let probe: Probe | undefined;
        if (o.probeSignature)
          probe = await client.request<Probe>('POST', `${client.base()}/deliveries/probe-signature`, {
            json: body,
            timeoutMs: timeoutMs + 60_000,
          });
        const answered = meets(expect, d.outcome);
        const matched = !re || !!posted?.some((m) => re.test(m.text));
        const passed = answered && (!probe || probe.refusedBoth) && matched;
        out.print(
          {
            passed,
            expected: expect,
            delivery: d,
            ...(probe ? { probe } : {}),
            ...(posted ? { messages: posted } : {}),
          },
          (c) => {
            let s = describe(c, d);
            if (posted?.length)
              s += `\n${c.bold('the app posted')}\n${posted.map((m) => `  ${formatMessage(c, m, names)}`).join('\n')}`;
            else if (posted)
              s += `\n${c.dim(`(no message posted in ${watched}${waitMs ? ` within ${waitMs} ms` : ''})`)}`;
            if (probe) {
              const line = (name: string, r: ProbeResult) =>
                `${name}: ${r.refused ? c.green('refused') : c.red('ACCEPTED')} (${r.status ?? r.outcome}${r.error ? `, ${r.error}` : ''})`;
              s += `\n${c.bold('signature probe')}\n  ${line('wrong signature', probe.wrongSignature)}\n  ${line('unsigned', probe.unsigned)}`;
            }
            const why = !answered
              ? `expected ${expect}, got ${d.outcome}`
              : probe && !probe.refusedBoth
                ? 'the app accepted a request that was not properly signed'
                : `the app posted no message matching ${re} in ${watched} within ${waitMs} ms`;
            const unproven =
              passed && d.kind === 'event' && !re
                ? `\n${c.dim("an event's 200 says the app received it, not that its handler ran (--expect-message checks what it did)")}`
                : '';
            return s + '\n' + (passed ? c.green('PASS') : c.red(`FAIL: ${why}`)) + unproven;
          },
        );
        if (!passed) run.exitCode = EXIT.deliveryFailed;
      }),
    );

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
