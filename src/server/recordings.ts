/**
 * Recordings of a conversation (docs/testing.md, "Recording a test"): a person starts one (in the console, or with
 * `appreg test --record`), and from then on everything the daemon sees happen in their workspace is appended to it as
 * an event, in the order it was seen: the messages posted, changed and deleted, the reactions added, the calls made
 * to apps with their answers (whoever made them: the console, `appreg say`, `react`, `deliver-test`). Stopped, it is
 * made into a suite by src/apptest/recorder/suite-of.ts.
 *
 * A recording is kept by the daemon that started it, in memory, keyed by its id, and belongs to the person who
 * started it: the console and the CLI of one session must reach that daemon. While it is on, the workspace's owner
 * may act as another member in the console (`actAs`), so a conversation between two people is recorded as the
 * suite's `as:` steps.
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Store } from '../store/types.js';
import { WORKSPACE_TABLES } from '../model/workspace.js';
import type { MessageRecord } from '../model/workspace.js';
import type { DeliveryRecord } from '../model/delivery.js';
import type { Principal } from '../services/identity.js';
import { forbidden, invalidRequest, notFound } from '../errors.js';
import { IDENTITY_TABLES } from '../model/identity.js';
import type { RecordedEvent, RecordedPerson, SeenMessage, SuiteEdits } from '../apptest/recorder/events.js';
import { suiteOf } from '../apptest/recorder/suite-of.js';
import { suiteYaml } from '../apptest/recorder/suite-yaml.js';

/**
 * How the app is started, until the person says: `appreg test --record-out FILE` writes what `appreg test --init`
 * guesses from the app's folder instead.
 */
const DEFAULT_APP = { manifest: 'manifest.json', start: { command: 'npm start' } };

/** A recording made a suite: the file's text, the steps the editor lists, what could not be recorded. */
export interface RecordedSuiteView {
  suite: Record<string, unknown>;
  yaml: string;
  steps: Array<Record<string, unknown>>;
  notes: string[];
  edits: SuiteEdits;
  appId?: string;
  /** The app was called over HTTP: the suite may test its signature check. */
  overHttp: boolean;
}

/** At most this many events a recording keeps; later ones are counted as left out. */
const MAX_EVENTS = 5000;
/** At most this many recordings a daemon keeps (the oldest stopped ones go first). */
const MAX_KEPT = 50;

export interface RecordingInfo {
  id: string;
  workspaceId: string;
  /** The person who started it. */
  ownerId: string;
  startedAt: string;
  stoppedAt?: string;
  /** Who the console acts as while it is on (the owner only), and their name. */
  actingAs?: { id: string; name: string };
  events: number;
  /** Events left out past the limit. */
  dropped: number;
}

interface Kept {
  info: RecordingInfo;
  events: RecordedEvent[];
  /** What each message looked like when last seen: its text and blocks, and its reactions. */
  seen: Map<string, { content: string; reactions: Set<string>; channelId: string }>;
  /** The event of each call, by delivery id: updated in place when its answer comes. */
  calls: Map<string, Extract<RecordedEvent, { type: 'call' }>>;
  apps: Map<string, string>;
  edits: SuiteEdits;
  /** The order of work: events are appended in the order they were seen. */
  queue: Promise<void>;
}

export interface RecordingsDeps {
  store: Store;
  clock: Clock;
  onMessageChange(listener: (m: { id: string; channelId: string }) => void): () => void;
  onDeliveryChange(listener: (rec: DeliveryRecord) => void): () => void;
  /** The workspace's owner (who may act as another member). */
  ownerOf(workspaceId: string): Promise<string | undefined>;
  /** An app's display name (the suite is named after the app under test), when the app is still registered. */
  appName?(appId: string): Promise<string | undefined>;
}

const seenOf = (m: MessageRecord): SeenMessage => ({
  id: m.id,
  channelId: m.channelId,
  author: m.author,
  ...(m.appId ? { appId: m.appId } : {}),
  text: m.text,
  blocks: m.blocks,
  ...(m.threadRootId ? { threadRootId: m.threadRootId } : {}),
  ...(m.ephemeralTo ? { ephemeralTo: m.ephemeralTo } : {}),
});
const contentOf = (m: MessageRecord) => JSON.stringify([m.text, m.blocks, m.attachments]);

/** The workspace's people as a suite names them: the owner, the members, the apps' bot users. */
async function workspacePeople(
  store: Store,
  ownerOf: RecordingsDeps['ownerOf'],
  workspaceId: string,
): Promise<RecordedPerson[]> {
  const owner = await ownerOf(workspaceId);
  const users = await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', workspaceId);
  users.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  return users.map((u) => ({ id: u.id, name: u.name, owner: u.id === owner, ...(u.isBot ? { bot: true } : {}) }));
}

export function createRecordings(deps: RecordingsDeps) {
  const { store, clock } = deps;
  const kept = new Map<string, Kept>();
  let unsubscribe: Array<() => void> = [];

  const active = () => [...kept.values()].filter((k) => !k.info.stoppedAt);
  const push = (k: Kept, e: RecordedEvent) => {
    if (k.events.length >= MAX_EVENTS) k.info.dropped++;
    else k.events.push(e);
    k.info.events = k.events.length;
  };
  const later = (k: Kept, fn: () => Promise<void> | void) => {
    k.queue = k.queue.then(fn).catch(() => undefined); // a message gone before it was read: nothing to add
  };

  function onMessage(n: { id: string; channelId: string }): void {
    for (const k of active())
      later(k, async () => {
        const m = await store.get(WORKSPACE_TABLES.messages, n.id);
        const was = k.seen.get(n.id);
        if (!m) {
          if (was) {
            k.seen.delete(n.id);
            push(k, { type: 'message-deleted', id: n.id });
          }
          return;
        }
        if (m.workspaceId !== k.info.workspaceId) return;
        const reactions = new Set(m.reactions.map((r) => `${r.user} ${r.code}`));
        k.seen.set(m.id, { content: contentOf(m), reactions, channelId: m.channelId });
        if (!was) {
          // a message older than the recording is known from its first change on
          if (m.timestampMilli >= Date.parse(k.info.startedAt)) push(k, { type: 'message', message: seenOf(m) });
          else if (m.edited) push(k, { type: 'message-changed', message: seenOf(m) });
          return;
        }
        if (was.content !== contentOf(m)) push(k, { type: 'message-changed', message: seenOf(m) });
        for (const r of m.reactions)
          if (!was.reactions.has(`${r.user} ${r.code}`))
            push(k, { type: 'reaction', user: r.user, messageId: m.id, code: r.code });
      });
  }

  function onDelivery(d: DeliveryRecord): void {
    for (const k of active()) {
      if (d.workspaceId !== k.info.workspaceId || d.editedFrom) continue;
      later(k, () => {
        k.apps.set(d.appId, d.appName);
        const known = k.calls.get(d.id);
        const call = {
          id: d.id,
          kind: d.kind,
          appId: d.appId,
          user: d.userId,
          transport: d.transport,
          ...(d.subject ? { subject: d.subject } : {}),
          payload: d.payload ?? known?.call.payload ?? {},
          ...(d.outcome ? { outcome: d.outcome } : {}),
          ...(d.response !== undefined ? { response: d.response } : {}),
          ...(d.ephemeralMessage ? { ephemeralMessage: d.ephemeralMessage } : {}),
        };
        if (known) known.call = call;
        else {
          // a delivery that began before the recording is not part of it
          if (Date.parse(d.createdAt) < Date.parse(k.info.startedAt)) return;
          const e = { type: 'call' as const, call };
          k.calls.set(d.id, e);
          push(k, e);
        }
      });
    }
  }

  const listen = () => {
    if (unsubscribe.length) return;
    unsubscribe = [deps.onMessageChange(onMessage), deps.onDeliveryChange(onDelivery)];
  };
  const quiet = () => {
    if (active().length) return;
    for (const u of unsubscribe) u();
    unsubscribe = [];
  };

  const peopleOf = (workspaceId: string) => workspacePeople(store, deps.ownerOf, workspaceId);

  /** The recording `id`, when it is the person's (anyone else's is not found: its id says nothing). */
  function own(p: Principal, id: string): Kept {
    const k = kept.get(id);
    if (!k || k.info.ownerId !== p.workspaceUserId) throw notFound('Recording');
    return k;
  }

  return {
    /** Start recording the person's workspace; their recording that is on already is returned as it is. */
    async start(p: Principal): Promise<RecordingInfo> {
      const on = active().find((k) => k.info.ownerId === p.workspaceUserId);
      if (on) return { ...on.info };
      const info: RecordingInfo = {
        id: newId('rec', 8),
        workspaceId: p.workspaceId,
        ownerId: p.workspaceUserId,
        startedAt: new Date(clock.now()).toISOString(),
        events: 0,
        dropped: 0,
      };
      kept.set(info.id, {
        info,
        events: [],
        seen: new Map(),
        calls: new Map(),
        apps: new Map(),
        edits: {},
        queue: Promise.resolve(),
      });
      // the oldest stopped ones go first
      for (const [id, k] of kept) if (kept.size > MAX_KEPT && k.info.stoppedAt) kept.delete(id);
      listen();
      return { ...info };
    },
    /** The person's recording that is on, if any. */
    activeOf(userId: string): RecordingInfo | undefined {
      const k = active().find((x) => x.info.ownerId === userId);
      return k && { ...k.info };
    },
    /** Who the console acts as for `userId` (the person signed in), while their recording is on. */
    actingAs(userId: string): { id: string; name: string } | undefined {
      return active().find((x) => x.info.ownerId === userId)?.info.actingAs;
    },
    get(p: Principal, id: string): RecordingInfo {
      return { ...own(p, id).info };
    },
    /** Stop: what it saw until now stays; nothing more is added. */
    async stop(p: Principal, id: string): Promise<RecordingInfo> {
      const k = own(p, id);
      await k.queue;
      k.info.stoppedAt ??= new Date(clock.now()).toISOString();
      delete k.info.actingAs;
      quiet();
      return { ...k.info };
    },
    /**
     * Act as another member of the workspace in the console while recording (the owner only); undefined: as
     * themselves again.
     */
    async actAs(p: Principal, id: string, user?: { id: string; name: string; workspaceId: string }) {
      const k = own(p, id);
      if (k.info.stoppedAt) throw invalidRequest('The recording is stopped: start another to act as someone.');
      if (!user || user.id === p.workspaceUserId) {
        delete k.info.actingAs;
        return;
      }
      if (user.workspaceId !== p.workspaceId) throw notFound('Workspace user');
      if ((await deps.ownerOf(p.workspaceId)) !== p.workspaceUserId)
        throw forbidden('Only the owner of the workspace can act as another user.');
      k.info.actingAs = { id: user.id, name: user.name };
    },
    /** A modal closed in the console without a call to the app: the recording has it as a step. */
    viewClosed(ownerUserId: string, actingUserId: string): void {
      const k = active().find((x) => x.info.ownerId === ownerUserId);
      if (k) later(k, () => push(k, { type: 'view-closed', user: actingUserId }));
    },
    /** The suite the recording makes, with the person's edits, once every event seen so far is in. */
    async suite(p: Principal, id: string, app: Record<string, unknown> = DEFAULT_APP): Promise<RecordedSuiteView> {
      const k = own(p, id);
      await k.queue;
      const made = suiteOf(
        {
          events: k.events,
          people: await peopleOf(k.info.workspaceId),
          apps: await Promise.all(
            [...k.apps].map(async ([appId, name]) => ({ id: appId, name: (await deps.appName?.(appId)) || name })),
          ),
        },
        k.edits,
      );
      const { name, ...rest } = made.suite;
      const suite = { name, app, ...rest };
      return {
        suite,
        yaml: suiteYaml(suite),
        steps: made.steps,
        notes: made.notes,
        edits: { ...k.edits },
        ...(made.appId ? { appId: made.appId } : {}),
        overHttp: k.events.some((e) => e.type === 'call' && e.call.appId === made.appId && e.call.transport === 'http'),
      };
    },
    /** The person's changes to the suite before saving (names, steps dropped, texts loosened). */
    edit(p: Principal, id: string, edits: SuiteEdits): void {
      own(p, id).edits = edits;
    },
    /** The daemon stops: no more listening. */
    close(): void {
      for (const u of unsubscribe) u();
      unsubscribe = [];
    },
  };
}

export type Recordings = ReturnType<typeof createRecordings>;
