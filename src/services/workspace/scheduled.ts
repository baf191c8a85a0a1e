/**
 * Scheduled messages (docs/protocol.md §9.2): kept in the store until their time, then posted
 * by the daemon as their author (NEW_MESSAGE as for any post), the post and the forgetting of
 * the schedule in one commit. What was due while the daemon was stopped is posted on start.
 * Each user sees and changes only their own.
 */
import { newId } from '../../crypto.js';
import { invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import type { Store } from '../../store/types.js';
import type { Channels } from './channels.js';
import { parseMessageInput } from './message-view.js';
import type { Messages } from './messages.js';
import { WT, type ScheduledRecord } from './records.js';
import type { Actor } from './users.js';

const TICK_MS = 250;
const MAX_SEND_AT = 4_000_000_000_000;

export interface ScheduledDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  channels: Channels;
  messages: Messages;
}

export function createScheduledMessages(deps: ScheduledDeps) {
  const { store, clock, logger, channels, messages } = deps;
  const inFlight = new Set<string>();
  const running = new Set<Promise<unknown>>();
  let timer: NodeJS.Timeout | undefined;

  const view = (s: ScheduledRecord) => ({ id: s.id, workspaceId: s.workspaceId, author: s.author, channelId: s.channelId, text: s.text, sentAt: s.sendAt, files: [], blocks: s.blocks, attachments: s.attachments });

  function own(a: Actor, id: string): ScheduledRecord {
    const s = store.get<ScheduledRecord>(WT.scheduled, id);
    if (!s || s.workspaceId !== a.workspaceId || s.author !== a.userId || inFlight.has(id)) throw notFound('Scheduled message');
    return s;
  }

  /** V1.ScheduledMessageRequest → the fields of a record; the channel must be one the actor can see. */
  async function parse(a: Actor, body: unknown) {
    const b = (body && typeof body === 'object' && !Array.isArray(body) ? body : {}) as Record<string, unknown>;
    const { sendAt, channelId, recurrence } = b;
    if (typeof sendAt !== 'number' || !Number.isInteger(sendAt) || sendAt > MAX_SEND_AT) throw invalidRequest('sendAt must be a time in epoch milliseconds.', [{ pointer: '/sendAt', message: 'must be epoch milliseconds' }]);
    if (sendAt <= clock.now()) throw invalidRequest('sendAt must be in the future.', [{ pointer: '/sendAt', message: 'is not in the future' }]);
    if (recurrence !== undefined && recurrence !== null) throw invalidRequest('Recurring scheduled messages are not supported by appreg yet.', [{ pointer: '/recurrence', message: 'is not supported' }]);
    if (typeof channelId !== 'string') throw invalidRequest('channelId is required.', [{ pointer: '/channelId', message: 'is required' }]);
    const input = parseMessageInput({ text: b.text, blocks: b.blocks, attachments: b.attachments, files: b.files });
    if (input.files) throw invalidRequest('Files on scheduled messages are not supported by appreg yet.', [{ pointer: '/files', message: 'must be empty' }]);
    const ch = await channels.visible(a, channelId);
    return { channelId: ch.id, sendAt, text: input.text, blocks: input.blocks, attachments: input.attachments };
  }

  /** GET /v1/messages/scheduled: the actor's pending ones, soonest first (query channelId filters). */
  function list(a: Actor, q: { channelId?: unknown }) {
    const out: ScheduledRecord[] = [];
    for (const s of store.values<ScheduledRecord>(WT.scheduled)) {
      if (s.workspaceId === a.workspaceId && s.author === a.userId && !inFlight.has(s.id) && (q.channelId === undefined || s.channelId === q.channelId)) out.push(s);
    }
    return { scheduledMessages: out.sort((x, y) => x.sendAt - y.sendAt).map(view), hasMore: false };
  }

  async function create(a: Actor, body: unknown) {
    const f = await parse(a, body);
    const s: ScheduledRecord = { id: newId('sch', 12), workspaceId: a.workspaceId, author: a.userId, ...(a.appId ? { appId: a.appId } : {}), ...f, createdAt: new Date(clock.now()).toISOString() };
    await store.commit([{ table: WT.scheduled, id: s.id, value: s }]);
    return view(s);
  }

  async function update(a: Actor, id: string, body: unknown) {
    own(a, id);
    const fields = await parse(a, body);
    const next: ScheduledRecord = { ...own(a, id), ...fields }; // read again: still pending after the wait
    await store.commit([{ table: WT.scheduled, id, value: next }]);
    return view(next);
  }

  async function updateAttachments(a: Actor, id: string, body: unknown) {
    const atts = (body as { attachments?: unknown } | undefined)?.attachments;
    if (!Array.isArray(atts) || atts.some((x) => !x || typeof x !== 'object' || Array.isArray(x))) throw invalidRequest('attachments must be an array of attachments.', [{ pointer: '/attachments', message: 'must be an array of objects' }]);
    const next: ScheduledRecord = { ...own(a, id), attachments: atts };
    await store.commit([{ table: WT.scheduled, id, value: next }]);
    return view(next);
  }

  async function remove(a: Actor, id: string): Promise<void> {
    own(a, id);
    await store.commit([{ table: WT.scheduled, id, value: null }]);
  }

  /** Post one that is due; one its author can no longer post (channel gone or hidden, author gone) is dropped with a warning. */
  async function fire(s: ScheduledRecord): Promise<void> {
    const forget = [{ table: WT.scheduled, id: s.id, value: null }];
    try {
      await messages.postScheduled({ workspaceId: s.workspaceId, userId: s.author, ...(s.appId ? { appId: s.appId } : {}) }, s.channelId, { text: s.text, blocks: s.blocks, attachments: s.attachments }, forget);
    } catch (e) {
      logger.warn('scheduled message dropped', { id: s.id, channelId: s.channelId, reason: (e as Error).message });
      await store.commit(forget);
    }
  }

  function tick() {
    const now = clock.now();
    for (const s of store.values<ScheduledRecord>(WT.scheduled)) {
      if (s.sendAt > now || inFlight.has(s.id)) continue;
      inFlight.add(s.id);
      const p = fire(s)
        .catch((e) => logger.error('posting a scheduled message failed', { id: s.id, error: (e as Error).message }))
        .finally(() => {
          inFlight.delete(s.id);
          running.delete(p);
        });
      running.add(p);
    }
  }

  return {
    list,
    get: (a: Actor, id: string) => view(own(a, id)),
    create,
    update,
    updateAttachments,
    remove,
    /** Start posting what is due (at once: what fell due while the daemon was stopped). */
    start() {
      timer = setInterval(tick, TICK_MS);
      timer.unref();
      tick();
    },
    /** No new posts; resolves when those under way are written. */
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await Promise.all([...running]);
    },
  };
}

export type ScheduledMessages = ReturnType<typeof createScheduledMessages>;
