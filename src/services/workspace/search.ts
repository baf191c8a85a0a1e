/**
 * Message search (POST /v1/messages/search, docs/protocol.md §9.2): over the messages of the channels the actor can
 * read.
 */
import { invalidRequest, type ErrorDetail } from '../../errors.js';
import type { Channels } from './channels.js';
import { postingOrder } from './message-index.js';
import type { Messages } from './messages.js';
import type { ChannelRecord, MessageRecord } from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import { must } from '../../must.js';

export function createMessageSearch(deps: { messages: Messages; channels: Channels; users: WorkspaceUsers }) {
  const { messages, channels, users } = deps;

  /** POST /v1/messages/search (V1.MessageSearchRequest): over the channels the actor can see. */
  async function search(a: Actor, body: unknown) {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const details: ErrorDetail[] = [];
    const list = (k: string) => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (!Array.isArray(v) || v.length > 50 || v.some((x) => typeof x !== 'string')) {
        details.push({ pointer: `/${k}`, message: 'must be a list of at most 50 ids' });
        return undefined; // refused below, with every other problem
      }
      return new Set(v as string[]);
    };
    const num = (k: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
        details.push({
          pointer: `/${k}`,
          message: `must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}`,
        });
      return v as number;
    };
    const from = list('from');
    const inCh = list('in');
    const text = b.text;
    if (text !== undefined && (typeof text !== 'string' || text.length > 500))
      details.push({ pointer: '/text', message: 'must be at most 500 characters' });
    const strategy = b.strategy ?? 'MOST_RELEVANT';
    if (typeof strategy !== 'string' || !['MOST_RELEVANT', 'MOST_RECENT', 'NEWEST', 'OLDEST'].includes(strategy))
      details.push({ pointer: '/strategy', message: 'must be MOST_RELEVANT, MOST_RECENT, NEWEST or OLDEST' });
    const beforeTs = num('beforeTs', 1);
    const afterTs = num('afterTs', 1);
    const skip = num('skip', 0) ?? 0;
    const limit = num('limit', 1, 20) ?? 10;
    if (details.length)
      throw invalidRequest(
        `The search is not valid: ${must(details[0]).pointer} ${must(details[0]).message}.`,
        details,
      );
    const needle = typeof text === 'string' ? text.trim().toLowerCase() : '';
    await channels.ensureWorkspace(a.workspaceId);
    const canRead = async (ch: ChannelRecord) =>
      (await channels.canSee(ch, a.userId)) && (!b.fromMyChannelsOnly || (await channels.isMember(ch, a.userId)));
    const bots = new Map<string, boolean>(); // author → is a bot, read once per search
    const isBot = async (id: string) => {
      if (!bots.has(id)) bots.set(id, !!(await users.byId(id))?.isBot);
      return must(bots.get(id));
    };
    const hits: MessageRecord[] = [];
    for (const ch of await channels.listRecords(a.workspaceId)) {
      if (inCh && !inCh.has(ch.id)) continue;
      if (!(await canRead(ch))) continue;
      for (const m of await messages.kept(ch.id)) {
        if (!messages.seenBy(m, a.userId)) continue;
        if (from && !from.has(m.author)) continue;
        if (b.fromHumanOnly === true && (await isBot(m.author))) continue;
        if (beforeTs !== undefined && m.timestampMilli >= beforeTs) continue;
        if (afterTs !== undefined && m.timestampMilli <= afterTs) continue;
        if (needle && !m.text.toLowerCase().includes(needle)) continue;
        hits.push(m);
      }
    }
    hits.sort((x, y) => (strategy === 'OLDEST' ? postingOrder(x, y) : postingOrder(y, x)));
    const page = hits.slice(skip, skip + limit);
    return {
      content: await Promise.all(page.map(async (m) => ({ ...(await messages.view(m)), highlightedBlocks: [] }))),
      totalElements: hits.length,
      hasMore: skip + page.length < hits.length,
    };
  }

  return { search };
}
export type MessageSearch = ReturnType<typeof createMessageSearch>;
