/** Reactions on messages and message search (docs/protocol.md §9.2). */
import { invalidRequest } from '../../errors.js';
import type { ErrorDetail } from '../../errors.js';
import type { Channels } from './channels.js';
import type { WorkspaceEvents } from './events.js';
import type { MessageIndex } from './message-index.js';
import type { Messages } from './messages.js';
import { WT, type ChannelRecord, type MessageRecord } from './records.js';
import type { Actor, WorkspaceUsers } from './users.js';

const CODE = /^:[^\s:]{1,198}:$/;

function reactionCode(body: unknown): string {
  const code = (body as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !CODE.test(code)) throw invalidRequest('code must be an emoji code such as :thumbsup: (3 to 200 characters).', [{ pointer: '/code', message: 'must look like :name:' }]);
  return code;
}

export function createReactionsAndSearch(deps: { index: MessageIndex; messages: Messages; channels: Channels; users: WorkspaceUsers; events: Pick<WorkspaceEvents, 'emit'> }) {
  const { index, messages, channels, users, events } = deps;

  /** POST /v1/messages/{m}/reactions {code}: REACTION_ADDED when it is new. */
  async function react(a: Actor, messageId: string, body: unknown): Promise<void> {
    const code = reactionCode(body);
    const { ch, m } = await messages.visibleMessage(a, undefined, messageId);
    if (m.ephemeralTo) throw invalidRequest('An ephemeral message cannot be reacted to.');
    if (m.reactions.some((r) => r.user === a.userId && r.code === code)) return;
    await index.commit([{ table: WT.messages, id: m.id, value: { ...m, reactions: [...m.reactions, { user: a.userId, code }] } }]);
    events.emit('REACTION_ADDED', ch.workspaceId, (u) => channels.canSee(ch, u), { wId: m.workspaceId, cId: m.channelId, mId: m.id, mat: m.author, uId: a.userId, rc: code, ty: 'REACTION_ADDED' });
  }

  /** DELETE /v1/messages/{m}/reactions {code}: the actor's own reaction. */
  async function unreact(a: Actor, messageId: string, body: unknown): Promise<void> {
    const code = reactionCode(body);
    const { m } = await messages.visibleMessage(a, undefined, messageId);
    const left = m.reactions.filter((r) => !(r.user === a.userId && r.code === code));
    if (left.length !== m.reactions.length) await index.commit([{ table: WT.messages, id: m.id, value: { ...m, reactions: left } }]);
  }

  /** POST /v1/messages/search (V1.MessageSearchRequest): over the channels the actor can see. */
  async function search(a: Actor, body: unknown) {
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const details: ErrorDetail[] = [];
    const list = (k: string) => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (!Array.isArray(v) || v.length > 50 || v.some((x) => typeof x !== 'string')) details.push({ pointer: `/${k}`, message: 'must be a list of at most 50 ids' });
      return new Set(v as string[]);
    };
    const num = (k: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
      const v = b[k];
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) details.push({ pointer: `/${k}`, message: `must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}` });
      return v as number;
    };
    const from = list('from');
    const inCh = list('in');
    const text = b.text;
    if (text !== undefined && (typeof text !== 'string' || text.length > 500)) details.push({ pointer: '/text', message: 'must be at most 500 characters' });
    const strategy = b.strategy ?? 'MOST_RELEVANT';
    if (typeof strategy !== 'string' || !['MOST_RELEVANT', 'MOST_RECENT', 'NEWEST', 'OLDEST'].includes(strategy)) details.push({ pointer: '/strategy', message: 'must be MOST_RELEVANT, MOST_RECENT, NEWEST or OLDEST' });
    const beforeTs = num('beforeTs', 1);
    const afterTs = num('afterTs', 1);
    const skip = num('skip', 0) ?? 0;
    const limit = num('limit', 1, 20) ?? 10;
    if (details.length) throw invalidRequest(`The search is not valid: ${details[0]!.pointer} ${details[0]!.message}.`, details);
    const needle = typeof text === 'string' ? text.trim().toLowerCase() : '';
    await channels.ensureWorkspace(a.workspaceId);
    const seen = new Map<string, ChannelRecord | null>();
    const canRead = (cId: string) => {
      if (!seen.has(cId)) {
        const ch = channels.byId(cId);
        seen.set(cId, ch && ch.workspaceId === a.workspaceId && channels.canSee(ch, a.userId) && (!b.fromMyChannelsOnly || channels.isMember(ch, a.userId)) ? ch : null);
      }
      return !!seen.get(cId);
    };
    const hits: MessageRecord[] = [];
    for (const ch of channels.listRecords(a.workspaceId)) {
      if (inCh && !inCh.has(ch.id)) continue;
      if (!canRead(ch.id)) continue;
      for (const m of index.inChannel(ch.id)) {
        if (!messages.seenBy(m, a.userId)) continue;
        if (from && !from.has(m.author)) continue;
        if (b.fromHumanOnly === true && users.byId(m.author)?.isBot) continue;
        if (beforeTs !== undefined && m.timestampMilli >= beforeTs) continue;
        if (afterTs !== undefined && m.timestampMilli <= afterTs) continue;
        if (needle && !m.text.toLowerCase().includes(needle)) continue;
        hits.push(m);
      }
    }
    hits.sort((x, y) => (strategy === 'OLDEST' ? x.seq - y.seq : y.seq - x.seq));
    const page = hits.slice(skip, skip + limit);
    return { content: page.map((m) => ({ ...messages.view(m), highlightedBlocks: [] })), totalElements: hits.length, hasMore: skip + page.length < hits.length };
  }

  return { react, unreact, search };
}
export type ReactionsAndSearch = ReturnType<typeof createReactionsAndSearch>;
