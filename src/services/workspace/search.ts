/**
 * Message search (POST /v1/messages/search, docs/protocol.md §9.2): over the messages of the channels the actor can
 * read.
 */
import type { ErrorDetail } from '../../errors.js';
import type { Channels } from './channels.js';
import { postingOrder } from './message-index.js';
import type { Messages } from './messages.js';
import type { ChannelRecord, MessageRecord } from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import { must } from '../../must.js';

/**
 * V1.MessageSearchRequest as platform.schema.json#searchBody checks it at the edge: at most 50 ids
 * in each list, text at most 500 characters, a known strategy, whole numbers in range (null: unset).
 */
export interface SearchBody {
  from?: string[] | null;
  in?: string[] | null;
  text?: string;
  strategy?: 'MOST_RELEVANT' | 'MOST_RECENT' | 'NEWEST' | 'OLDEST';
  beforeTs?: number | null;
  afterTs?: number | null;
  skip?: number | null;
  limit?: number | null;
  fromMyChannelsOnly?: boolean;
  fromHumanOnly?: boolean;
}

/** The search's 400: each problem the schema finds, in the words the service used for it. */
export function searchProblem(p: { pointer: string; message: string }): ErrorDetail | undefined {
  const [, field = ''] = p.pointer.split('/');
  const at = `/${field}`;
  if (field === 'from' || field === 'in') return { pointer: at, message: 'must be a list of at most 50 ids' };
  if (field === 'text' && p.message.startsWith('must be at most'))
    return { pointer: at, message: 'must be at most 500 characters' };
  if (field === 'strategy' && p.message.startsWith('must be one of'))
    return { pointer: at, message: 'must be MOST_RELEVANT, MOST_RECENT, NEWEST or OLDEST' };
  if (field === 'beforeTs' || field === 'afterTs') return { pointer: at, message: 'must be a whole number from 1' };
  if (field === 'skip') return { pointer: at, message: 'must be a whole number from 0' };
  if (field === 'limit') return { pointer: at, message: 'must be a whole number from 1 to 20' };
  return undefined;
}

export const invalidSearch = (first: ErrorDetail) => `The search is not valid: ${first.pointer} ${first.message}.`;

export function createMessageSearch(deps: { messages: Messages; channels: Channels; users: WorkspaceUsers }) {
  const { messages, channels, users } = deps;

  /** POST /v1/messages/search (V1.MessageSearchRequest): over the channels the actor can see. */
  async function search(a: Actor, b: SearchBody) {
    const from = b.from ? new Set(b.from) : undefined;
    const inCh = b.in ? new Set(b.in) : undefined;
    const { text, strategy = 'MOST_RELEVANT' } = b;
    const beforeTs = b.beforeTs ?? undefined;
    const afterTs = b.afterTs ?? undefined;
    const skip = b.skip ?? 0;
    const limit = b.limit ?? 10;
    const needle = text?.trim().toLowerCase() ?? '';
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
