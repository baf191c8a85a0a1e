/** Message bodies: what a post or edit may carry, and how a message looks on the wire and in events. */
import { invalidRequest } from '../../errors.js';
import type { ErrorDetail } from '../../errors.js';
import { MAX_FILES_PER_MESSAGE } from './files.js';
import type { MessageRecord } from '../../model/workspace.js';
import { must } from '../../must.js';
import type { Mentions } from './mentions.js';

const MAX_TEXT = 100_000;

export interface MessageInput {
  text: string;
  blocks: unknown[];
  attachments: unknown[];
  /** Ephemeral: the users who see it. */
  sendToUsers?: string[];
  alsoSendToChannel?: boolean;
  /** Ids of uploaded files (POST /v1/files/upload/complete). */
  files?: string[];
}

const isObjectArray = (v: unknown) =>
  Array.isArray(v) && v.every((x) => x !== null && typeof x === 'object' && !Array.isArray(x));

/**
 * V1.MessagePostRequestBody / ThreadMessagePostRequestBody / MessageUpdateRequestBody → MessageInput; 400 with every
 * problem.
 */
export function parseMessageInput(body: unknown): MessageInput {
  const b = (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
  const details: ErrorDetail[] = [];
  const text = b.text ?? '';
  if (typeof text !== 'string' || text.length > MAX_TEXT)
    details.push({ pointer: '/text', message: `must be a string of at most ${MAX_TEXT} characters` });
  if (b.blocks !== undefined && b.blocks !== null && !isObjectArray(b.blocks))
    details.push({ pointer: '/blocks', message: 'must be an array of blocks' });
  if (b.attachments !== undefined && b.attachments !== null && !isObjectArray(b.attachments))
    details.push({ pointer: '/attachments', message: 'must be an array of attachments' });
  const files = b.files ?? [];
  if (!Array.isArray(files) || files.length > MAX_FILES_PER_MESSAGE || files.some((f) => typeof f !== 'string'))
    details.push({ pointer: '/files', message: `must be a list of at most ${MAX_FILES_PER_MESSAGE} file ids` });
  let sendToUsers: string[] | undefined;
  if (b.ephemeral !== undefined && b.ephemeral !== null) {
    const s = (b.ephemeral as { sendToUsers?: unknown }).sendToUsers;
    if (!Array.isArray(s) || s.length === 0 || s.some((x) => typeof x !== 'string'))
      details.push({ pointer: '/ephemeral/sendToUsers', message: 'must list at least one workspace user id' });
    else sendToUsers = [...new Set(s as string[])];
  }
  if (b.alsoSendToChannel !== undefined && typeof b.alsoSendToChannel !== 'boolean')
    details.push({ pointer: '/alsoSendToChannel', message: 'must be true or false' });
  const blocks = (Array.isArray(b.blocks) ? b.blocks : []) as unknown[];
  const attachments = (Array.isArray(b.attachments) ? b.attachments : []) as unknown[];
  if (
    !details.length &&
    typeof text === 'string' &&
    text.trim() === '' &&
    blocks.length === 0 &&
    attachments.length === 0 &&
    (files as unknown[]).length === 0
  )
    details.push({ pointer: '/text', message: 'a message needs text, blocks, attachments or files' });
  if (details.length)
    throw invalidRequest(`The message is not valid: ${must(details[0]).pointer} ${must(details[0]).message}.`, details);
  return {
    text: text as string,
    blocks,
    attachments,
    ...(sendToUsers ? { sendToUsers } : {}),
    ...(b.alsoSendToChannel === true ? { alsoSendToChannel: true } : {}),
    ...((files as string[]).length ? { files: [...new Set(files as string[])] } : {}),
  };
}

export interface ThreadSummary {
  count: number;
  repliers: string[];
  lastMilli?: number;
}

/** V1.Message; `files`: the V1.MessageFile of each of its files. */
export function messageView(m: MessageRecord, thread?: ThreadSummary, files: unknown[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: m.id,
    workspaceId: m.workspaceId,
    channelId: m.channelId,
    author: m.author,
    text: m.text,
    timestamp: new Date(m.timestampMilli).toISOString(),
    timestampMilli: m.timestampMilli,
    reactions: m.reactions,
    linkPreviews: [],
    isFollowing: false,
    files,
    deleted: false,
    edited: !!m.edited,
    attachments: m.attachments,
    blocks: m.blocks,
  };
  if (m.threadRootId) out.threadReplyInfo = { rootId: m.threadRootId, replySentToChannel: !!m.alsoSentToChannel };
  if (thread && thread.count > 0) {
    out.threadRootInfo = {
      repliesCount: thread.count,
      repliers: thread.repliers,
      lastReplyTimestamp: new Date(must(thread.lastMilli)).toISOString(),
      lastReplyTimestampMilli: thread.lastMilli,
      isFollowing: false,
    };
  }
  return out;
}

/**
 * The body of NEW_MESSAGE and UPDATED_MESSAGE (docs/protocol.md §5.3, schemas/events/): `files` its V1.MessageFile
 * list, `mentions` who it mentions, `rootText` its thread root's text (a reply's `trMt`). The outbox adds `rid`.
 */
export function messageEventBody(
  m: Omit<MessageRecord, 'seq'>,
  ty: 'NEW_MESSAGE' | 'UPDATED_MESSAGE',
  files: unknown[],
  mentions: Mentions,
  rootText = '',
): Record<string, unknown> {
  return {
    mId: m.id,
    wId: m.workspaceId,
    cId: m.channelId,
    ...(m.threadRootId ? { trId: m.threadRootId, stc: !!m.alsoSentToChannel, trMt: rootText } : {}),
    aId: m.author,
    tx: m.text,
    bl: m.blocks,
    ty,
    ts: new Date(m.timestampMilli).toISOString(),
    tsm: m.timestampMilli,
    f: files,
    att: m.attachments,
    md: mentions.md,
    mc: mentions.mc,
    mu: mentions.mu,
    e: !!m.edited,
    eph: false,
  };
}
