/** What `appreg say` does once its options are read (loaded when it runs, not at start): see say.ts. */
import { createClient, type Client } from '../../client/daemon-client.js';
import type { Out } from '../output.js';
import { CliError, EXIT, refusalCode } from '../../client/exit.js';
import { nonNegativeInt, regexOption } from '../options.js';
import type { Run } from '../run.js';
import type { GlobalOpts } from '../../client/io.js';
import { EXPECT, meets, waitingNotice } from './deliver.js';
import type { Delivery } from '../../client/delivery.js';
import { markOf, messagesPath, nameCache, watch, type Message } from '../../client/workspace.js';
import { formatMessage } from '../message-line.js';
import { must } from '../../must.js';
import { recordOr, stringOr } from '../../unknown-values.js';

type SayAnswer =
  { kind: 'message'; message: Message } | { kind: 'slash-command'; channelId: string; delivery: Delivery };
interface Acting {
  client: Client;
  userId: string;
  release(): Promise<void>;
}

/** Outcomes where the app never got the command: nothing to wait for. */
const NEVER_RECEIVED = new Set(['connection_error', 'egress_denied']);

/**
 * The client that acts as `who` (a user id or email of your workspace). You, as yourself; anyone
 * else only when you own the workspace: the daemon gives the owner a short-lived token of that
 * user (POST …/act-as), revoked when the command is done. The user's own logins are not touched.
 */
async function actAs(run: Run, o: GlobalOpts, me: Client, who: string): Promise<Acting> {
  const self = await me.request<{ workspaceId: string; workspaceUserId: string; email?: string }>(
    'GET',
    '/auth/whoami',
  );
  const keep: Acting = { client: me, userId: self.workspaceUserId, release: async () => {} };
  if (who === self.workspaceUserId || who.toLowerCase() === self.email?.toLowerCase()) return keep;
  const issued = await me
    .request<{ authToken: string; workspaceUserId: string }>('POST', `${me.base()}/act-as`, { json: { user: who } })
    .catch((e: unknown) => {
      if (!(e instanceof CliError) || e.exitCode !== EXIT.rejected) throw e;
      const code = refusalCode(e);
      const why =
        code === 'forbidden'
          ? 'only the owner of the workspace can post as another user; log in as them with "appreg login"'
          : code === 'not_found'
            ? 'no such user in your workspace'
            : e.message;
      throw new CliError(`--as ${who}: ${why}`, EXIT.rejected, e.body);
    });
  const client = createClient(run.io, { ...o, token: issued.authToken });
  return {
    client,
    userId: issued.workspaceUserId,
    // the token was this command's alone: revoke it
    release: async () => void (await client.request('POST', '/auth/logout').catch(() => undefined)),
  };
}

/** The view an app answered with (a modal it opened), as it came. */
const modalOf = (response: unknown): Record<string, unknown> | undefined => recordOr(recordOr(response)?.view);

/** A view's title: text, or a text object ({type, text}). */
const titleOf = (t: unknown) => (typeof t === 'string' ? t : (stringOr(recordOr(t)?.text) ?? ''));

/** What a slash command did, for people: the answer shown, a modal, the messages that followed, PASS or FAIL. */
function describeReaction(
  c: Out['c'],
  d: Delivery,
  seen: Message[],
  names: Map<string, string>,
  o: { waitMs: number; passed: boolean; why: string },
): string {
  const last = d.attempts.at(-1);
  const lines = [
    `${String(recordOr(d.payload)?.slashCommand ?? d.kind)} → ${d.appName} (${d.appId}): ${d.outcome}${last ? `, ${last.latencyMs} ms` : ''}`,
  ];
  if (d.ephemeralMessage) lines.push(`${c.bold(d.appName)} ${c.dim('(only visible to you)')}: ${d.ephemeralMessage}`);
  const modal = modalOf(d.response);
  const n = Array.isArray(modal?.blocks) ? modal.blocks.length : 0;
  if (modal)
    lines.push(
      `modal opened: "${titleOf(modal.title)}" (${modal.callbackId ? `callbackId ${String(modal.callbackId)}, ` : ''}${n} block${n === 1 ? '' : 's'})`,
    );
  if (seen.length) lines.push(c.bold('then in the channel:'), ...seen.map((m) => `  ${formatMessage(c, m, names)}`));
  else if (o.waitMs > 0) lines.push(c.dim(`(nothing posted in the channel within ${o.waitMs} ms)`));
  lines.push(o.passed ? c.green('PASS') : c.red(`FAIL: ${o.why}`));
  return lines.join('\n');
}

/** The options of `appreg say` (say.ts declares them; --wait-ms and --expect have defaults). */
export interface SayOptions {
  as?: string;
  thread?: string;
  waitMs: string;
  expect: string;
  expectMessage?: string;
}

/** appreg say <channel> <text...> with its options `o`. */
export async function say(
  run: Run,
  o: GlobalOpts & SayOptions,
  out: Out,
  connect: () => Client,
  channel: string,
  words: string[],
): Promise<void> {
  const text = words.join(' ');
  const waitMs = must(nonNegativeInt(o.waitMs, '--wait-ms'));
  const expect = String(o.expect);
  if (!EXPECT.includes(expect)) throw new CliError(`--expect must be one of ${EXPECT.join(', ')}`, EXIT.usage);
  const re = regexOption(o.expectMessage, '--expect-message');
  const base = connect();
  const actor =
    o.as === undefined ? { client: base, release: async () => {} } : await actAs(run, o, base, String(o.as));
  try {
    const { client } = actor;
    const slash = text.trimStart().startsWith('/');
    const mark = slash && (waitMs > 0 || re) ? await markOf(client, channel, true) : undefined;
    const body: Record<string, unknown> = { text };
    if (o.thread !== undefined) body.threadRootId = String(o.thread);
    const sent = client.request<SayAnswer>('POST', messagesPath(client, channel), { json: body, timeoutMs: 120_000 });
    // a slash command waits for the app (up to the daemon's budget)
    const res = await (slash ? waitingNotice(run, out.json, undefined, sent) : sent);
    if (res.kind === 'message') {
      out.print(
        res,
        () =>
          `posted ${res.message.id} in ${channel}${res.message.threadReplyInfo ? ` (thread ${res.message.threadReplyInfo.rootId})` : ''}`,
      );
      return;
    }
    const d = res.delivery;
    const watchMs = Math.max(waitMs, re ? waitMs || 3000 : 0);
    const seen =
      watchMs > 0 && !NEVER_RECEIVED.has(d.outcome ?? '')
        ? await watch(client, res.channelId, mark, {
            waitMs: watchMs,
            until: re ? (s) => s.some((m) => re.test(m.text)) : undefined,
            quietMs: re ? undefined : 1000,
          })
        : [];
    const answered = meets(expect, d.outcome);
    const matched = !re || seen.some((m) => re.test(m.text));
    const passed = answered && matched;
    const why = !answered
      ? `expected ${expect}, got ${d.outcome}`
      : `the app posted no message matching ${re} within ${watchMs} ms`;
    const names = out.json ? new Map<string, string>() : await nameCache(client)(seen.map((m) => m.author));
    out.print(
      {
        kind: res.kind,
        channelId: res.channelId,
        passed,
        expected: expect,
        outcome: d.outcome,
        shown: d.ephemeralMessage ?? null,
        modal: modalOf(d.response) ?? null,
        messages: seen,
        delivery: d,
      },
      (c) => describeReaction(c, d, seen, names, { waitMs: watchMs, passed, why }),
    );
    if (!passed) run.exitCode = EXIT.deliveryFailed;
  } finally {
    await actor.release();
  }
}
