/**
 * The local workspace as a client reads it (the CLI's channel and message commands, `appreg test`; docs/protocol.md
 * §9.5 shapes, served under the management base path): channels written by id, `general` or `#general`, messages, and
 * watching a channel for what an app posts after a mark.
 */
import { CliError, EXIT } from './exit.js';
import type { Client } from './daemon-client.js';
import { must } from '../must.js';
import { systemClock, type Clock } from '../clock.js';

export interface Message {
  id: string;
  channelId: string;
  author: string;
  text: string;
  timestamp: string;
  timestampMilli: number;
  reactions?: Array<{ user: string; code: string }>;
  blocks?: unknown[];
  attachments?: unknown[];
  edited?: boolean;
  threadRootInfo?: { repliesCount: number };
  threadReplyInfo?: { rootId: string };
  /** Not in the platform's V1.Message; shown when the daemon marks a message only some users see. */
  ephemeral?: unknown;
}
export interface ChannelInfo {
  channel: {
    id: string;
    name?: string;
    channelType: string;
    description?: string;
    isMember?: boolean;
    isArchived?: boolean;
    isMain?: boolean;
  };
  users?: string[];
}
interface Page {
  messages: Message[];
  hasMoreBefore: boolean;
  hasMoreAfter: boolean;
}

/** The path of a channel's messages: the daemon takes an id, a name or `#name` (the `#` encoded). */
export const messagesPath = (client: Client, channel: string) =>
  `${client.base()}/channels/${encodeURIComponent(channel)}/messages`;

/** A page of the channel's messages; `threads`: thread replies too, among them in posting order. */
export function listMessages(
  client: Client,
  channel: string,
  q: { limit?: number; cursor?: string; strategy?: 'BEFORE' | 'AFTER' | 'AROUND'; threads?: boolean },
): Promise<Page> {
  const searchParams: Record<string, string> = {};
  if (q.limit !== undefined) searchParams.limit = String(q.limit);
  if (q.cursor) searchParams.cursor = q.cursor;
  if (q.strategy) searchParams.strategy = q.strategy;
  if (q.threads) searchParams.threads = 'true';
  return client.request<Page>('GET', messagesPath(client, channel), { searchParams });
}

/** The replies in the thread of `rootId`, oldest first. */
export function listReplies(client: Client, channel: string, rootId: string, limit?: number): Promise<Message[]> {
  return client.request<Message[]>('GET', `${messagesPath(client, channel)}/${encodeURIComponent(rootId)}/replies`, {
    searchParams: limit === undefined ? {} : { limit: String(limit) },
  });
}

/** The channel's id, from an id, `name` or `#name`, among the channels the caller sees; exit 4 when there is none. */
export async function resolveChannelId(client: Client, channel: string): Promise<string> {
  const list = await client.request<ChannelInfo[]>('GET', `${client.base()}/channels`);
  const name = channel.replace(/^#/, '').toLowerCase();
  const found = list.find((c) => c.channel.id === channel) ?? list.find((c) => c.channel.name?.toLowerCase() === name);
  if (!found)
    throw new CliError(`no channel ${channel} that you can see (appreg channels list shows them)`, EXIT.rejected, {
      code: 'not_found',
      message: `no channel ${channel}`,
    });
  return found.channel.id;
}

/**
 * The newest message of the channel now (with `threads`, thread replies counted): what an app posts later comes after
 * it.
 */
export async function markOf(client: Client, channel: string, threads = false): Promise<string | undefined> {
  return (await listMessages(client, channel, { limit: 1, threads })).messages.at(-1)?.id;
}

/**
 * Every message shown in the channel after `mark` (from the first one without a mark), oldest first; `threads`: replies
 * in threads too.
 */
export async function messagesAfter(
  client: Client,
  channel: string,
  mark: string | undefined,
  threads = false,
): Promise<Message[]> {
  const out: Message[] = [];
  let cursor = mark;
  for (;;) {
    const page = await listMessages(client, channel, { limit: 100, cursor, strategy: 'AFTER', threads });
    out.push(...page.messages);
    if (!page.hasMoreAfter || !page.messages.length) return out;
    cursor = must(page.messages.at(-1)).id;
  }
}

export interface WatchOptions {
  waitMs: number;
  /** Stop once this holds for what was seen. */
  until?: (seen: Message[]) => boolean;
  /** Stop when this long passed after the last new message. */
  quietMs?: number;
  intervalMs?: number;
  /** Messages not to count (the one a test trigger posted itself). */
  skip?: ReadonlySet<string>;
  /** The time and the pauses between looks (the run's clock; the system's by default). */
  clock?: Clock;
}

/**
 * `ms` on the clock. A clock's timers never keep the process alive, and while the CLI waits between two looks nothing
 * else does: a timer of the runtime's holds it until then.
 */
function pause(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const hold = setInterval(() => {}, 60_000);
    clock.setTimeout(() => (clearInterval(hold), resolve()), ms);
  });
}

/**
 * What is posted in the channel after `mark` (a mark of markOf(…, true)), replies in any of its
 * threads included, polled until the wait ends (one look at least).
 */
export async function watch(
  client: Client,
  channel: string,
  mark: string | undefined,
  o: WatchOptions,
): Promise<Message[]> {
  const clock = o.clock ?? systemClock;
  const start = clock.now();
  let seen: Message[] = [];
  let lastNew = start;
  for (;;) {
    const now = (await messagesAfter(client, channel, mark, true)).filter((m) => !o.skip?.has(m.id));
    if (now.length !== seen.length) lastNew = clock.now();
    seen = now;
    const t = clock.now();
    if (o.until?.(seen) || t - start >= o.waitMs) return seen;
    if (o.quietMs !== undefined && seen.length && t - lastNew >= o.quietMs) return seen;
    await pause(clock, Math.min(o.intervalMs ?? 100, Math.max(0, o.waitMs - (t - start))));
  }
}

/**
 * Display names of workspace users by id, asked once each (GET /workspaces/{ws}/workspaceUsers/{wu}); the id when
 * unknown.
 */
export function nameCache(client: Client): (ids: string[]) => Promise<Map<string, string>> {
  const names = new Map<string, string>();
  return async (ids) => {
    const ws = client.creds?.workspaceId;
    for (const id of new Set(ids)) {
      if (names.has(id) || !ws) continue;
      try {
        const u = await client.request<{ name?: string }>(
          'GET',
          `/workspaces/${encodeURIComponent(ws)}/workspaceUsers/${encodeURIComponent(id)}`,
          { auth: false },
        );
        names.set(id, u.name || id);
      } catch {
        names.set(id, id);
      }
    }
    return names;
  };
}
