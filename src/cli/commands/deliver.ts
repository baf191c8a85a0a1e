/**
 * appreg deliver-test: send a trigger or an event to an app, as the platform would, and say what came of it
 * (the delivery log itself is `appreg deliveries`, commands/deliveries.ts).
 */
import type { Command } from 'commander';
import { CliError, EXIT } from '../../client/exit.js';
import { action, nonNegativeInt, positiveInt, readJsonFile, regexOption } from '../options.js';
import type { Client } from '../../client/daemon-client.js';
import type { Run } from '../run.js';
import type { Message } from '../../client/workspace.js';
import type { Delivery } from '../../client/delivery.js';
import { describe } from '../delivery-view.js';
import { formatMessage } from '../message-line.js';
import { must } from '../../must.js';
import { recordOr } from '../../unknown-values.js';

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
  const cId = recordOr(body.body)?.cId;
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
          kind === 'block-interaction' && o.messageId === undefined ? recordOr(d.payload)?.sourceId : undefined;
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
}
