/** Message bodies: what a post or edit may carry, and how a message looks on the wire and in events. */
import { invalidRequest } from '../../errors.js';
import type { ErrorDetail } from '../../errors.js';
import { MAX_FILES_PER_MESSAGE, type MessageFileView } from './files.js';
import type { MessageRecord } from '../../model/workspace.js';
import type { JsonObject } from '../../model/json.js';
import { must } from '../../must.js';
import type { Mentions } from './mentions.js';

export interface MessageInput {
  text: string;
  blocks: JsonObject[];
  attachments: JsonObject[];
  /** Ephemeral: the users who see it. */
  sendToUsers?: string[];
  alsoSendToChannel?: boolean;
  /** Ids of uploaded files (POST /v1/files/upload/complete). */
  files?: string[];
}

/**
 * The parts of a message a post, a reply, an edit or a scheduled message carry (V1.MessagePostRequestBody,
 * ThreadMessagePostRequestBody, MessageUpdateRequestBody), as schemas/http/platform.schema.json#messageBody
 * checks them at the edge: text at most 100 000 characters, at most MAX_FILES_PER_MESSAGE files.
 */
export interface MessageBody {
  text?: string;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
  files?: string[];
  ephemeral?: { sendToUsers: string[] } | null;
  alsoSendToChannel?: boolean;
}

/** A message's new attachments (PUT …/attachments, platform.schema.json#attachmentsBody). */
export interface AttachmentsBody {
  attachments: JsonObject[];
}

/** What the schema's problems with a message's parts are said as (the 400 docs/protocol.md §9.2 lists). */
export function messageProblem(p: { pointer: string; message: string }): ErrorDetail | undefined {
  const [, part = ''] = p.pointer.split('/');
  if (p.pointer === '') return { pointer: '/text', message: NEEDS_CONTENT };
  if (part === 'text' && p.message.startsWith('must be at most'))
    return { pointer: '/text', message: `must be a string of at most ${MAX_TEXT} characters` };
  if ((part === 'blocks' || part === 'attachments') && p.pointer !== `/${part}`)
    return { pointer: `/${part}`, message: `must be an array of ${part}` };
  if (part === 'files' && (p.pointer !== '/files' || p.message.startsWith('must have at most')))
    return { pointer: '/files', message: `must be a list of at most ${MAX_FILES_PER_MESSAGE} file ids` };
  if (part === 'ephemeral')
    return { pointer: '/ephemeral/sendToUsers', message: 'must list at least one workspace user id' };
  return undefined;
}

export const invalidMessage = (first: ErrorDetail) => `The message is not valid: ${first.pointer} ${first.message}.`;

const MAX_TEXT = 100_000;
const NEEDS_CONTENT = 'a message needs text, blocks, attachments or files';

/** A message's parts → MessageInput: 400 when it has nothing to show. */
export function messageInput(b: MessageBody): MessageInput {
  const text = b.text ?? '';
  const blocks = b.blocks ?? [];
  const attachments = b.attachments ?? [];
  const files = b.files ?? [];
  if (text.trim() === '' && blocks.length === 0 && attachments.length === 0 && files.length === 0) {
    const detail = { pointer: '/text', message: NEEDS_CONTENT };
    throw invalidRequest(invalidMessage(detail), [detail]);
  }
  return {
    text,
    blocks,
    attachments,
    ...(b.ephemeral ? { sendToUsers: [...new Set(b.ephemeral.sendToUsers)] } : {}),
    ...(b.alsoSendToChannel === true ? { alsoSendToChannel: true } : {}),
    ...(files.length ? { files: [...new Set(files)] } : {}),
  };
}

export interface ThreadSummary {
  count: number;
  repliers: string[];
  lastMilli?: number;
}

/** V1.Message; `files`: the V1.MessageFile of each of its files. */
export function messageView(
  m: MessageRecord,
  thread?: ThreadSummary,
  files: MessageFileView[] = [],
): Record<string, unknown> {
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
  files: MessageFileView[],
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
