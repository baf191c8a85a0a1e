/**
 * Scheduled messages (docs/protocol.md §9.2): kept in the store until their time, then posted
 * by the daemon as their author (NEW_MESSAGE as for any post), the post and the forgetting of
 * the schedule in one commit. What was due while the daemon was stopped is posted on start.
 * Each user sees and changes only their own.
 *
 * With several daemons on one store, each message is posted exactly once: a daemon leases what
 * is due (store.claim), and its post commits only if the record is still as leased. One whose
 * daemon died while holding it is taken by another when the lease runs out. A leased one is
 * being sent: its author no longer sees or changes it.
 *
 * A recurring one (recurrence.ts) is not forgotten when posted: the same commit moves it to its
 * next occurrence, skipping those that went by while no daemon ran, until its end.
 */
import { newId } from '../../crypto.js';
import { invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import { StoreUnavailable, type ChangeOf, type Store, type Transaction } from '../../store/types.js';
import type { Channels } from './channels.js';
import type { Files } from './files.js';
import { messageInput, type AttachmentsBody, type MessageBody } from './message-view.js';
import type { Messages } from './messages.js';
import { WORKSPACE_TABLES, type ScheduledRecord } from '../../model/workspace.js';
import type { Actor } from './users.js';
import { createPoller } from '../../poller.js';
import { onlyLeaseRenewed } from '../../store/lease.js';
import { nextOccurrence, parseRecurrence } from './recurrence.js';
import type { Json } from '../../model/json.js';
import { messageOf } from '../../unknown-values.js';

/**
 * V1.CreateScheduledMessageRequest (platform.schema.json#scheduledBody): a message's parts, where and when. Whether
 * it is there and in the future, and what its recurrence means, are checked here.
 */
export interface ScheduledBody extends Pick<MessageBody, 'text' | 'blocks' | 'attachments' | 'files'> {
  channelId?: string;
  sendAt?: number;
  /** V1.ScheduledMessageRecurrenceRequest: its fields are read by parseRecurrence. */
  recurrence?: Json;
}

/**
 * A poll for due messages every TICK_MS while it finds some; idle, up to POLL_MAX_MS apart (a message is woken for at
 * its time).
 */
const [TICK_MS, POLL_MAX_MS] = [250, 1000];
const LEASE_MS = 30_000;
/** How many times a post is made again after this daemon's own poll renewed its lease meanwhile. */
const MAX_RENEWALS = 16;
const CLAIM_LIMIT = 50;
const MAX_SEND_AT = 4_000_000_000_000;
const LIST_MAX = 100;

/** The fields of `o` that are set (a record keeps no undefined field). */
const defined = <T extends object>(o: T): T => {
  const out = { ...o };
  for (const [k, v] of Object.entries(out)) if (v === undefined) Reflect.deleteProperty(out, k);
  return out;
};

export interface ScheduledDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  channels: Channels;
  messages: Messages;
  files: Pick<Files, 'attachable' | 'views'>;
  /** This daemon, as the owner of the leases it takes. */
  instanceId: string;
}

export function createScheduledMessages(deps: ScheduledDeps) {
  const { store, clock, logger, channels, messages, files, instanceId } = deps;
  const inFlight = new Set<string>(); // leased by this daemon and being posted
  const running = new Set<Promise<unknown>>();

  /** Leased (by any daemon) and the lease still runs: being posted. */
  const sending = (s: ScheduledRecord) => inFlight.has(s.id) || (!!s.leaseOwner && (s.leaseUntil ?? 0) > clock.now());

  /** V1.ScheduledMessage; `files` the V1.MessageFile of each of its files; a recurrence's unset ends are 0. */
  const view = async (s: ScheduledRecord) => ({
    id: s.id,
    workspaceId: s.workspaceId,
    author: s.author,
    channelId: s.channelId,
    text: s.text,
    sentAt: s.sendAt,
    files: await files.views(s.files),
    blocks: s.blocks,
    attachments: s.attachments,
    ...(s.recurrence ? { recurrence: { ...s.recurrence } } : {}),
  });

  /** The actor's own scheduled message, not being sent (read in `tx` when given); 404 otherwise. */
  async function own(a: Actor, id: string, tx?: Transaction): Promise<ScheduledRecord> {
    const s = await (tx ?? store).get(WORKSPACE_TABLES.scheduled, id);
    if (!s || s.workspaceId !== a.workspaceId || s.author !== a.userId || sending(s))
      throw notFound('Scheduled message');
    return s;
  }

  /**
   * V1.CreateScheduledMessageRequest as the SDK sends it (`files`: ids of files the author uploaded, as on a post) →
   * the fields of a record; the channel must be one the actor can see. `kept`: the files of the message an edit
   * changes, kept when the edit names none (the SDK's edit always sends `files: []`).
   */
  async function parse(a: Actor, b: ScheduledBody, kept?: string[]) {
    const { sendAt, channelId, recurrence } = b;
    if (sendAt === undefined || !Number.isInteger(sendAt) || sendAt > MAX_SEND_AT)
      throw invalidRequest('sendAt must be a time in epoch milliseconds.', [
        { pointer: '/sendAt', message: 'must be epoch milliseconds' },
      ]);
    if (sendAt <= clock.now())
      throw invalidRequest('sendAt must be in the future.', [{ pointer: '/sendAt', message: 'is not in the future' }]);
    const rec = parseRecurrence(recurrence, sendAt);
    if (channelId === undefined)
      throw invalidRequest('channelId is required.', [{ pointer: '/channelId', message: 'is required' }]);
    const given = !b.files?.length && kept?.length ? kept : b.files;
    const input = messageInput({ text: b.text, blocks: b.blocks, attachments: b.attachments, files: given });
    const ch = await channels.visible(a, channelId);
    if (input.files) await files.attachable(a, input.files);
    return {
      channelId: ch.id,
      sendAt,
      text: input.text,
      blocks: input.blocks,
      attachments: input.attachments,
      files: input.files,
      recurrence: rec,
      anchorAt: rec ? sendAt : undefined,
    };
  }

  /**
   * GET /v1/messages/scheduled: the actor's pending ones, soonest first (query channelId filters), at most `limit`
   * (1–100, default 100).
   */
  async function list(a: Actor, q: { channelId?: string; limit?: string }) {
    const limit = q.limit === undefined || q.limit === '' ? LIST_MAX : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX)
      throw invalidRequest(`limit must be a whole number from 1 to ${LIST_MAX}.`, [
        { pointer: '/limit', message: `must be 1 to ${LIST_MAX}` },
      ]);
    const out: ScheduledRecord[] = [];
    for (const s of await store.all(WORKSPACE_TABLES.scheduled)) {
      if (
        s.workspaceId === a.workspaceId &&
        s.author === a.userId &&
        !sending(s) &&
        (q.channelId === undefined || s.channelId === q.channelId)
      )
        out.push(s);
    }
    out.sort((x, y) => x.sendAt - y.sendAt || (x.id < y.id ? -1 : 1));
    return { scheduledMessages: await Promise.all(out.slice(0, limit).map(view)), hasMore: out.length > limit };
  }

  async function create(a: Actor, body: ScheduledBody) {
    const f = await parse(a, body);
    const s: ScheduledRecord = {
      id: newId('sch', 12),
      workspaceId: a.workspaceId,
      author: a.userId,
      ...(a.appId ? { appId: a.appId } : {}),
      ...defined(f),
      createdAt: new Date(clock.now()).toISOString(),
    };
    await store.transaction(async (tx) => tx.put(WORKSPACE_TABLES.scheduled, s.id, s));
    poller.wakeAt(s.sendAt);
    return view(s);
  }

  async function update(a: Actor, id: string, body: ScheduledBody) {
    const fields = await parse(a, body, (await own(a, id)).files);
    // read again: still pending after the wait; committed only if not leased (or changed) meanwhile
    const next = await store.transaction(async (tx) => {
      const s = await own(a, id, tx);
      // every field replaced; a recurrence starts again from the new sendAt, its occurrences so far still counted
      const { recurrence: _r, anchorAt: _a, files: _f, ...rest } = s;
      const next: ScheduledRecord = { ...rest, ...defined(fields) };
      tx.put(WORKSPACE_TABLES.scheduled, id, next);
      return next;
    });
    poller.wakeAt(next.sendAt);
    return view(next);
  }

  async function updateAttachments(a: Actor, id: string, body: AttachmentsBody) {
    const atts = body.attachments;
    const next = await store.transaction(async (tx) => {
      const next: ScheduledRecord = { ...(await own(a, id, tx)), attachments: atts };
      tx.put(WORKSPACE_TABLES.scheduled, id, next);
      return next;
    });
    return view(next);
  }

  async function remove(a: Actor, id: string): Promise<void> {
    await store.transaction(async (tx) => {
      await own(a, id, tx);
      tx.delete(WORKSPACE_TABLES.scheduled, id);
    });
  }

  /**
   * What follows the post of `s`: forgetting it, or for a recurring one, the record at its next
   * occurrence still to come (released from the lease), as long as the recurrence runs.
   */
  function afterPost(s: ScheduledRecord): ChangeOf<'wsScheduledMessages'> {
    if (!s.recurrence) return { table: WORKSPACE_TABLES.scheduled, id: s.id, value: null };
    const anchorAt = s.anchorAt ?? s.sendAt;
    let occurrences = (s.occurrences ?? 0) + 1;
    let at = nextOccurrence(s.recurrence, anchorAt, occurrences, s.sendAt);
    // occurrences that went by while no daemon ran are skipped (not posted in a burst), and counted
    while (at !== undefined && at <= clock.now()) {
      occurrences += 1;
      at = nextOccurrence(s.recurrence, anchorAt, occurrences, at);
    }
    if (at === undefined) return { table: WORKSPACE_TABLES.scheduled, id: s.id, value: null };
    const { leaseOwner: _o, leaseUntil: _u, ...rest } = s;
    const next: ScheduledRecord = { ...rest, anchorAt, occurrences, sendAt: at };
    return { table: WORKSPACE_TABLES.scheduled, id: s.id, value: next };
  }

  /**
   * Post one that is due; one its author can no longer post (channel gone or hidden, author gone) is dropped with a
   * warning.
   */
  async function fire(leased: ScheduledRecord): Promise<void> {
    // Still ours: as leased, or with only its lease renewed by this daemon's next poll meanwhile (a post
    // slower than a poll meets its own renewal, no rival: the post runs again on the record as it is now,
    // or each slow post would meet the next renewal and the message never be posted). Changed, or taken
    // over after the lease ran out: not ours to post.
    const ours = (s: ScheduledRecord | undefined): s is ScheduledRecord =>
      !!s && s.leaseOwner === instanceId && onlyLeaseRenewed(leased, s);
    let runs = 0;
    let then: ChangeOf<'wsScheduledMessages'> | undefined;
    try {
      const posted = await messages.postScheduled(
        { workspaceId: leased.workspaceId, userId: leased.author, ...(leased.appId ? { appId: leased.appId } : {}) },
        leased.channelId,
        {
          text: leased.text,
          blocks: leased.blocks,
          attachments: leased.attachments,
          ...(leased.files ? { files: leased.files } : {}),
        },
        async (tx) => {
          runs++;
          const s = await tx.get(WORKSPACE_TABLES.scheduled, leased.id);
          if (!ours(s)) return false;
          then = afterPost(s);
          tx.apply(then);
          return true;
        },
        { attempts: MAX_RENEWALS },
      );
      if (posted && then?.value) poller.wakeAt(then.value.sendAt);
    } catch (e) {
      if (runs >= MAX_RENEWALS) return; // renewed (or changed) at every run: left to the lease's end
      logger.warn('scheduled message dropped', {
        id: leased.id,
        channelId: leased.channelId,
        reason: messageOf(e),
      });
      await store.transaction(async (tx) => {
        if (ours(await tx.get(WORKSPACE_TABLES.scheduled, leased.id))) tx.delete(WORKSPACE_TABLES.scheduled, leased.id);
      });
    }
  }

  /** One poll: lease what is due and post it; whether there was any. */
  async function tick(): Promise<boolean> {
    let due: ScheduledRecord[];
    try {
      const now = clock.now();
      due = await store.claim({
        table: WORKSPACE_TABLES.scheduled,
        dueField: 'sendAt',
        now,
        owner: instanceId,
        leaseUntil: now + LEASE_MS,
        limit: CLAIM_LIMIT,
      });
    } catch (e) {
      // while the store is down this repeats every poll; the store logs the outage itself
      (e instanceof StoreUnavailable ? logger.debug : logger.error).call(logger, 'claiming scheduled messages failed', {
        error: messageOf(e),
      });
      return true;
    }
    for (const s of due) {
      if (inFlight.has(s.id)) continue;
      inFlight.add(s.id);
      const p = fire(s)
        .catch((e: unknown) => logger.error('posting a scheduled message failed', { id: s.id, error: messageOf(e) }))
        .finally(() => {
          inFlight.delete(s.id);
          running.delete(p);
        });
      running.add(p);
    }
    return due.length > 0;
  }
  const poller = createPoller({ minMs: TICK_MS, maxMs: POLL_MAX_MS, clock, run: tick });

  return {
    list,
    get: async (a: Actor, id: string) => view(await own(a, id)),
    create,
    update,
    updateAttachments,
    remove,
    /** Start posting what is due (at once: what fell due while the daemon was stopped). */
    start: () => poller.start(),
    /**
     * No new posts; resolves when those under way are written (a poll under way from its claim on: what it leases is
     * posted, not left leased).
     */
    async stop() {
      await poller.stop();
      await Promise.all([...running]);
    },
  };
}

export type ScheduledMessages = ReturnType<typeof createScheduledMessages>;
