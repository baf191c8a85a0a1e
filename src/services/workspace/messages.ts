/**
 * Messages of the local workspace (docs/protocol.md §9.2): post (also as a thread reply, also
 * ephemeral), list with a cursor, get, edit, delete, reactions, search. Every read is checked
 * against what the actor can see: a private channel's messages only by its members, an
 * ephemeral message only by its recipients (and its author); anything else is "not found".
 */
import { newId } from '../../crypto.js';
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Change, Transaction, TransactionOptions } from '../../store/types.js';
import type { Channels } from './channels.js';
import { audienceOf, type WorkspaceEvents } from './events.js';
import type { Files } from './files.js';
import { postingOrder, type MessageIndex } from './message-index.js';
import {
  messageEventBody,
  messageInput,
  messageView,
  type AttachmentsBody,
  type MessageBody,
  type MessageInput,
} from './message-view.js';
import { WORKSPACE_TABLES, type ChannelRecord, type MessageRecord } from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import type { MentionsOf } from './mentions.js';

export interface MessagesDeps {
  clock: Clock;
  perChannel: number;
  index: MessageIndex;
  channels: Channels;
  users: WorkspaceUsers;
  events: WorkspaceEvents;
  files: Pick<Files, 'attachable' | 'views'>;
  /** Who a message mentions (its event's md, mc, mu). */
  mentions: MentionsOf;
}

const STRATEGIES = ['BEFORE', 'AFTER', 'AROUND'] as const;

type Strategy = (typeof STRATEGIES)[number];

const isStrategy = (s: string): s is Strategy => STRATEGIES.some((x) => x === s);

function parseStrategy(raw: string | undefined, dflt: Strategy): Strategy {
  const strategy = raw === undefined || raw === '' ? dflt : raw.toUpperCase();
  if (!isStrategy(strategy))
    throw invalidRequest('strategy must be BEFORE, AFTER or AROUND.', [
      { pointer: '/strategy', message: 'unknown strategy' },
    ]);
  return strategy;
}

/** A page's query (schemas/http/platform.schema.json#listQuery): text, read here. */
export interface ListQuery {
  limit?: string;
  cursor?: string;
  strategy?: string;
}

/**
 * The page of `limit` items of a list in order, as `strategy` reads it from position `at` (the
 * cursor's index for BEFORE and AROUND, the index after it for AFTER): [start, end).
 */
function pageAt(length: number, at: number, strategy: Strategy, limit: number): [number, number] {
  if (strategy === 'BEFORE') return [Math.max(0, at - limit), at];
  if (strategy === 'AFTER') return [at, Math.min(length, at + limit)];
  const end = Math.min(length, Math.max(0, at - Math.floor(limit / 2)) + limit);
  return [Math.max(0, end - limit), end];
}

function parseLimit(raw: string | undefined, dflt: number, max: number): number {
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw invalidRequest(`limit must be a whole number from 1 to ${max}.`, [
      { pointer: '/limit', message: `must be 1 to ${max}` },
    ]);
  return n;
}

/** A read by a person (the management API), not by an app. */
interface PersonRead {
  forPerson?: boolean;
}

export function createMessages(deps: MessagesDeps) {
  const { clock, index, channels, users, events, files, mentions } = deps;
  const perChannel = Math.max(1, deps.perChannel);

  const seenBy = (m: MessageRecord, userId: string) =>
    !m.ephemeralTo || m.ephemeralTo.includes(userId) || m.author === userId;
  /**
   * What the actor sees in the channel's own list: messages (not thread replies, unless also sent to the channel) it
   * may see.
   */
  const inChannelView = (a: Actor) => (m: MessageRecord) =>
    (!m.threadRootId || !!m.alsoSentToChannel) && seenBy(m, a.userId);
  const view = async (m: MessageRecord) =>
    messageView(m, m.threadRootId ? undefined : await index.thread(m.id), await files.views(m.files));
  /**
   * The views of `ms`; `o.forPerson` (a person's own reads: the CLI, not the platform API) marks
   * an ephemeral message `ephemeral: true`, as the console marks it "Only visible to you".
   */
  const views = (ms: MessageRecord[], o: PersonRead = {}) =>
    Promise.all(
      ms.map(async (m): Promise<Record<string, unknown>> =>
        o.forPerson && m.ephemeralTo ? { ...(await view(m)), ephemeral: true } : view(m),
      ),
    );
  /**
   * The event of a message posted or changed, for the commit that posts or changes it (none for an ephemeral message);
   * `root`: a reply's thread root when the caller has it (else it is read).
   */
  const eventOf = async (
    ch: ChannelRecord,
    m: Omit<MessageRecord, 'seq'>,
    ty: 'NEW_MESSAGE' | 'UPDATED_MESSAGE',
    root?: MessageRecord,
  ): Promise<Change[]> => {
    if (m.ephemeralTo) return [];
    const rootText = m.threadRootId ? (root ?? (await index.get(m.threadRootId)))?.text : undefined;
    const body = messageEventBody(
      m,
      ty,
      await files.views(m.files),
      await mentions(ch, m.author, m.text, m.blocks),
      rootText,
    );
    return [events.workspaceEvent(ty, ch.workspaceId, audienceOf(ch), body)];
  };
  /**
   * A message the actor can see in a channel the actor can see; 404 otherwise. Given a transaction,
   * the message is read in it: the record answered is what it expects (the first read only looks).
   */
  async function visibleMessage(
    a: Actor,
    channelId: string | undefined,
    messageId: string | undefined,
    tx?: Transaction,
  ): Promise<{ ch: ChannelRecord; m: MessageRecord }> {
    const m =
      typeof messageId !== 'string'
        ? undefined
        : tx
          ? await tx.get(WORKSPACE_TABLES.messages, messageId, { peek: true })
          : await index.get(messageId);
    if (!m || m.workspaceId !== a.workspaceId || (channelId !== undefined && m.channelId !== channelId)) {
      if (channelId !== undefined) await channels.visible(a, channelId); // an invisible channel is what is not found
      throw notFound('Message');
    }
    const ch = await channels.visible(a, m.channelId);
    // read again after the wait, so a change made meanwhile (a reaction, an edit) is not lost
    const now = tx ? await tx.get(WORKSPACE_TABLES.messages, m.id) : await index.get(m.id);
    if (!now || !seenBy(now, a.userId)) throw notFound('Message');
    return { ch, m: now };
  }

  type View = Awaited<ReturnType<typeof view>>;
  /** Post in `ch`; with `within`, undefined when it answered false (nothing posted). */
  async function postIn(a: Actor, ch: ChannelRecord, input: MessageInput, root?: MessageRecord): Promise<View>;
  async function postIn(
    a: Actor,
    ch: ChannelRecord,
    input: MessageInput,
    root: MessageRecord | undefined,
    within: (tx: Transaction) => Promise<boolean>,
    opts?: TransactionOptions,
  ): Promise<View | undefined>;
  async function postIn(
    a: Actor,
    ch: ChannelRecord,
    input: MessageInput,
    root?: MessageRecord,
    within?: (tx: Transaction) => Promise<boolean>,
    opts?: TransactionOptions,
  ): Promise<View | undefined> {
    if (ch.isArchived) throw invalidRequest('The channel is archived.');
    if (input.files) await files.attachable(a, input.files);
    if (input.sendToUsers) {
      const bad: string[] = [];
      for (const u of input.sendToUsers)
        if (!(await users.member(a.workspaceId, u)) || !(await channels.canSee(ch, u))) bad.push(u);
      if (bad.length)
        throw invalidRequest(`${bad[0]} cannot see this channel.`, [
          { pointer: '/ephemeral/sendToUsers', message: 'names a user who cannot see the channel' },
        ]);
    }
    const draft: Omit<MessageRecord, 'seq'> = {
      id: newId('msg', 12),
      workspaceId: a.workspaceId,
      channelId: ch.id,
      author: a.userId,
      text: input.text,
      blocks: input.blocks,
      attachments: input.attachments,
      timestampMilli: clock.now(),
      reactions: [],
      ...(root
        ? {
            threadRootId: root.id,
            ...(input.alsoSendToChannel && !input.sendToUsers ? { alsoSentToChannel: true } : {}),
          }
        : {}),
      ...(input.sendToUsers ? { ephemeralTo: input.sendToUsers } : {}),
      ...(a.appId ? { appId: a.appId } : {}),
      ...(input.files ? { files: input.files } : {}),
    };
    const event = await eventOf(ch, draft, 'NEW_MESSAGE', root);
    const m = await index.add(
      draft,
      perChannel,
      async (tx) => {
        if (within && !(await within(tx))) return false;
        for (const c of event) tx.apply(c);
      },
      opts,
    );
    if (!m) return undefined;
    if (event.length) events.written();
    return view(m);
  }

  /** POST /v1/channels/{c}/messages */
  async function post(a: Actor, channelId: string, body: MessageBody) {
    const input = messageInput(body);
    return postIn(a, await channels.visible(a, channelId), input);
  }

  /** POST /v1/channels/{c}/messages/{m}: a reply in the thread of m (of m's root when m is itself a reply). */
  async function reply(a: Actor, channelId: string, rootId: string, body: MessageBody) {
    const input = messageInput(body);
    const { ch, m } = await visibleMessage(a, channelId, rootId);
    const root = m.threadRootId ? await index.get(m.threadRootId) : m;
    if (!root) throw notFound('Message');
    if (root.ephemeralTo) throw invalidRequest('An ephemeral message cannot start a thread.');
    return postIn(a, ch, input, root);
  }

  /** A person posts (the CLI's `say`): `channel` is an id, a name or #name. */
  async function postAsUser(workspaceUserId: string, channel: string, opts: { text: string; threadRootId?: string }) {
    const u = await users.byId(workspaceUserId);
    if (!u) throw notFound('Workspace user');
    const a: Actor = { workspaceId: u.workspaceId, userId: u.id };
    await channels.ensureWorkspace(a.workspaceId);
    const ch = await channels.visible(a, (await channels.byName(a.workspaceId, channel))?.id ?? channel);
    if (opts.threadRootId !== undefined) return reply(a, ch.id, opts.threadRootId, { text: opts.text });
    return postIn(a, ch, messageInput({ text: opts.text }));
  }

  /**
   * GET /v1/channels/{c}/messages?limit&cursor&strategy: the channel (not thread replies), oldest
   * first within the page. `withReplies` (a person's view, not the platform API): thread replies
   * too, in posting order among the channel's messages.
   */
  async function list(a: Actor, channelId: string, q: ListQuery, opts: PersonRead & { withReplies?: boolean } = {}) {
    const ch = await channels.visible(a, channelId);
    const limit = parseLimit(q.limit, 20, 100);
    const strategy = parseStrategy(q.strategy, 'BEFORE');
    let c: MessageRecord | undefined;
    if (q.cursor !== undefined && q.cursor !== '') {
      c = await index.get(q.cursor);
      if (!c || c.channelId !== ch.id || !seenBy(c, a.userId))
        throw invalidRequest('cursor must be the id of a message of this channel.', [
          { pointer: '/cursor', message: 'unknown message' },
        ]);
    }
    // `shown` is the part of the channel around the cursor (or at the end the strategy starts from),
    // with up to limit + 2 messages on each side of it read: enough for the page and both hasMore
    const keep = opts.withReplies ? (m: MessageRecord) => seenBy(m, a.userId) : inChannelView(a);
    const cut = await index.cut(ch.id, perChannel);
    const want = limit + 2;
    const before =
      c || strategy !== 'AFTER' ? (await index.scan(ch.id, { desc: true, from: c, want, cut, keep })).reverse() : [];
    const after = c || strategy === 'AFTER' ? await index.scan(ch.id, { desc: false, from: c, want, cut, keep }) : [];
    if (c && keep(c) && !(cut && postingOrder(c, cut) <= 0)) after.unshift(c);
    const shown = [...before, ...after];
    let at: number;
    if (c) {
      at = before.length;
      if (strategy === 'AFTER' && shown[at]?.id === c.id) at += 1;
    } else at = strategy === 'AFTER' ? 0 : shown.length;
    const [start, end] = pageAt(shown.length, at, strategy, limit);
    return {
      messages: await views(shown.slice(start, end), opts),
      hasMoreBefore: start > 0,
      hasMoreAfter: end < shown.length,
    };
  }

  /** GET /v1/channels/{c}/messages/{m} */
  async function get(a: Actor, channelId: string, messageId: string) {
    return view((await visibleMessage(a, channelId, messageId)).m);
  }

  /**
   * GET /v1/channels/{c}/messages/{m}/replies?cursor&limit&strategy: a page of the thread, oldest
   * first. AFTER (the default) reads from the cursor's next reply on (without a cursor, from the
   * first), BEFORE the replies before it (without one, the latest), AROUND a page centred on it.
   */
  async function replies(a: Actor, channelId: string, rootId: string, q: ListQuery, o: PersonRead = {}) {
    const { m } = await visibleMessage(a, channelId, rootId);
    const limit = parseLimit(q.limit, 100, 100);
    const strategy = parseStrategy(q.strategy, 'AFTER');
    const rs = (await index.repliesOf(m.threadRootId ?? m.id)).filter((r) => seenBy(r, a.userId));
    let at = strategy === 'AFTER' ? 0 : rs.length;
    if (q.cursor !== undefined && q.cursor !== '') {
      const i = rs.findIndex((r) => r.id === q.cursor);
      if (i < 0)
        throw invalidRequest('cursor must be the id of a reply in this thread.', [
          { pointer: '/cursor', message: 'unknown reply' },
        ]);
      at = strategy === 'AFTER' ? i + 1 : i;
    }
    const [start, end] = pageAt(rs.length, at, strategy, limit);
    return views(rs.slice(start, end), o);
  }

  function ownMessage(a: Actor, m: MessageRecord): void {
    if (m.author !== a.userId) throw forbidden('Only the author of a message can change or delete it.');
  }

  /** PUT /v1/channels/{c}/messages/{m}: new text, blocks and attachments. UPDATED_MESSAGE. */
  async function edit(a: Actor, channelId: string, messageId: string, body: MessageBody) {
    const input = messageInput(body);
    const next = await index.transaction(async (tx) => {
      const { ch, m } = await visibleMessage(a, channelId, messageId, tx);
      ownMessage(a, m);
      const next: MessageRecord = {
        ...m,
        text: input.text,
        blocks: input.blocks,
        attachments: input.attachments,
        edited: true,
      };
      tx.put(WORKSPACE_TABLES.messages, m.id, next);
      for (const c of await eventOf(ch, next, 'UPDATED_MESSAGE')) tx.apply(c);
      return next;
    });
    if (!next.ephemeralTo) events.written();
    return view(next);
  }

  /** PUT /v1/channels/{c}/messages/{m}/attachments {attachments}. UPDATED_MESSAGE. */
  async function editAttachments(a: Actor, channelId: string, messageId: string, body: AttachmentsBody) {
    const atts = body.attachments;
    const next = await index.transaction(async (tx) => {
      const { ch, m } = await visibleMessage(a, channelId, messageId, tx);
      ownMessage(a, m);
      const next: MessageRecord = { ...m, attachments: atts, edited: true };
      tx.put(WORKSPACE_TABLES.messages, m.id, next);
      for (const c of await eventOf(ch, next, 'UPDATED_MESSAGE')) tx.apply(c);
      return next;
    });
    if (!next.ephemeralTo) events.written();
    return view(next);
  }

  /** DELETE /v1/channels/{c}/messages/{m}: the message, and a thread root's replies with it. */
  async function remove(a: Actor, channelId: string, messageId: string): Promise<void> {
    await index.transaction(async (tx) => {
      const { m } = await visibleMessage(a, channelId, messageId, tx);
      ownMessage(a, m);
      tx.delete(WORKSPACE_TABLES.messages, m.id);
      if (!m.threadRootId)
        for (const r of await tx.find(WORKSPACE_TABLES.messages, 'threadRootId', m.id))
          tx.delete(WORKSPACE_TABLES.messages, r.id);
    });
  }

  /** DELETE /v1/channels/{c}/messages/{m}/ephemeral {deleteForUsers}: the recipients named no longer see it. */
  async function removeEphemeral(
    a: Actor,
    channelId: string,
    messageId: string,
    body: { deleteForUsers: string[] },
  ): Promise<void> {
    const users = body.deleteForUsers;
    await index.transaction(async (tx) => {
      const { m } = await visibleMessage(a, channelId, messageId, tx);
      if (!m.ephemeralTo) throw invalidRequest('The message is not ephemeral.');
      ownMessage(a, m);
      const left = m.ephemeralTo.filter((u) => !users.includes(u));
      if (left.length) tx.put(WORKSPACE_TABLES.messages, m.id, { ...m, ephemeralTo: left });
      else tx.delete(WORKSPACE_TABLES.messages, m.id);
    });
  }

  /**
   * A scheduled message's turn: posted as its author, with what `within` reads and writes (its
   * schedule) in the same transaction; nothing is posted when `within` answers false (undefined).
   */
  async function postScheduled(
    a: Actor,
    channelId: string,
    input: MessageInput,
    within: (tx: Transaction) => Promise<boolean>,
    opts?: TransactionOptions,
  ) {
    return postIn(a, await channels.visible(a, channelId), input, undefined, within, opts);
  }

  /**
   * What a person sees of a channel (the console): its last `limit` messages (not thread
   * replies), or a thread's root and replies, as records (author, app, ephemeral) with their views.
   */
  async function timeline(a: Actor, channelId: string, opts: { rootId?: string; limit: number }) {
    const ch = await channels.visible(a, channelId);
    let ms: MessageRecord[];
    if (opts.rootId) {
      const { m } = await visibleMessage(a, ch.id, opts.rootId);
      const root = m.threadRootId ? await index.get(m.threadRootId) : m;
      if (!root) throw notFound('Message');
      ms = [
        root,
        ...(await index.repliesOf(root.id)).filter((r) => seenBy(r, a.userId)).slice(-Math.max(1, opts.limit - 1)),
      ];
    } else
      ms = (
        await index.scan(ch.id, {
          desc: true,
          want: Math.max(1, opts.limit),
          cut: await index.cut(ch.id, perChannel),
          keep: inChannelView(a),
        })
      ).reverse();
    return { channel: ch, messages: await Promise.all(ms.map(async (m) => ({ record: m, view: await view(m) }))) };
  }

  /** Every message of a channel, for deleting the channel with them. */
  const inChannel = (channelId: string) => index.inChannel(channelId);
  /** What readers see of a channel (its newest `perChannel` records), oldest first: for search. */
  const kept = async (channelId: string) => (await index.inChannel(channelId)).slice(-perChannel);

  return {
    visibleMessage,
    view,
    post,
    postScheduled,
    reply,
    postAsUser,
    list,
    get,
    replies,
    edit,
    editAttachments,
    remove,
    removeEphemeral,
    inChannel,
    kept,
    seenBy,
    timeline,
  };
}

export type Messages = ReturnType<typeof createMessages>;
