/**
 * Recordings of a conversation (docs/testing.md, "Recording a test"): a person starts one (in the console, or with
 * `appreg test --record`), and from then on everything the daemon sees happen in their workspace is appended to it as
 * an event, in the order it was seen: the messages posted, changed and deleted, the reactions added, the calls made
 * to apps with their answers (whoever made them: the console, `appreg say`, `react`, `deliver-test`). Stopped, it is
 * made into a suite by src/apptest/recorder/suite-of.ts.
 *
 * A recording is kept in the store (model/recording.ts: its head, and one record per event), so it outlives a restart
 * and every daemon of one PostgreSQL database sees it: any of them answers for it, and each daemon that hears of a
 * change appends it. They hear the same changes (message and delivery notices reach every daemon), so each append is
 * a transaction on the recording's head, which holds what it has seen: the first daemon to append a change writes it,
 * the others find it seen and write nothing. Which recordings are on is kept by each daemon in memory, told by a
 * notice on the store's `recordings` channel whenever one starts, stops or changes who it acts as.
 *
 * A recording belongs to the person who started it (anyone else's is not found). While it is on, the workspace's
 * owner may act as another member in the console (`actAs`), so a conversation between two people is recorded as the
 * suite's `as:` steps.
 */
import crypto from 'node:crypto';
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Change, Store, Transaction } from '../store/types.js';
import { RECORDING_TABLES, recordingEventId, type RecordingRecord } from '../model/recording.js';
import { WORKSPACE_TABLES } from '../model/workspace.js';
import type { MessageRecord } from '../model/workspace.js';
import type { DeliveryRecord } from '../model/delivery.js';
import type { Principal } from '../services/identity.js';
import { forbidden, invalidRequest, notFound } from '../errors.js';
import { IDENTITY_TABLES } from '../model/identity.js';
import type { RecordedCall, RecordedEvent, RecordedPerson, SeenMessage, SuiteEdits } from '../recording-events.js';
import { suiteOf, type RecordedSuite } from '../apptest/recorder/suite-of.js';
import { suiteYaml } from '../apptest/recorder/suite-yaml.js';

/**
 * How the app is started, until the person says: `appreg test --record-out FILE` writes what `appreg test --init`
 * guesses from the app's folder instead.
 */
const DEFAULT_APP = { manifest: 'manifest.json', start: { command: 'npm start' } };

/** A recording made a suite: the file's text, the steps the editor lists, what could not be recorded. */
export interface RecordedSuiteView {
  suite: RecordedSuite['suite'] & { app: Record<string, unknown> };
  yaml: string;
  steps: Array<Record<string, unknown>>;
  notes: string[];
  edits: SuiteEdits;
  appId?: string;
  /** The apps the person used, the most used first: the suite may be about any of them. */
  apps: Array<{ id: string; name: string; calls: number }>;
  /** The app was called over HTTP: the suite may test its signature check. */
  overHttp: boolean;
}

/** At most this many events a recording keeps; later ones are counted as left out. */
const MAX_EVENTS = 5000;
/** At most this many stopped recordings are kept (the oldest go first). */
const MAX_KEPT = 50;
/** The store's channel on which a recording's id is published when it starts, stops or changes whom it acts as. */
const NOTICES = 'recordings';
/** Events read (and recordings deleted) per round trip. */
const BATCH = 500;
const RECORDINGS = RECORDING_TABLES.recordings;
const EVENTS = RECORDING_TABLES.events;

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

/** A recording that is on, as this daemon knows it. */
interface Active {
  id: string;
  workspaceId: string;
  ownerId: string;
  actingAs?: { id: string; name: string };
  /** This daemon's appends to it, one after the other, in the order it heard of them. */
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
/** What tells a message's changes apart: its text, blocks and attachments, digested (the head keeps every one seen). */
const digestOf = (m: MessageRecord) =>
  crypto
    .createHash('sha256')
    .update(JSON.stringify([m.text, m.blocks, m.attachments]))
    .digest('base64url');

const infoOf = (r: RecordingRecord): RecordingInfo => ({
  id: r.id,
  workspaceId: r.workspaceId,
  ownerId: r.ownerId,
  startedAt: r.startedAt,
  ...(r.stoppedAt ? { stoppedAt: r.stoppedAt } : {}),
  ...(r.actingAs ? { actingAs: r.actingAs } : {}),
  events: r.events,
  dropped: r.dropped,
});

/** A delivery as a recorded call; `was`: the call as recorded before (its body, when the change carries none). */
const callOf = (d: DeliveryRecord, was?: RecordedCall): RecordedCall => ({
  id: d.id,
  kind: d.kind,
  appId: d.appId,
  user: d.userId,
  transport: d.transport,
  ...(d.subject ? { subject: d.subject } : {}),
  payload: d.payload ?? was?.payload ?? {},
  ...(d.outcome ? { outcome: d.outcome } : {}),
  ...(d.response !== undefined ? { response: d.response } : {}),
  ...(d.ephemeralMessage ? { ephemeralMessage: d.ephemeralMessage } : {}),
});

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
  const active = new Map<string, Active>();
  let unsubscribe: Array<() => void> = [];

  /**
   * Change the head of recording `id` and append the events `change` returns, in one transaction, while it is on.
   * `change` may run more than once (on fresh reads): it has no effect but on the head it is given.
   */
  async function append(
    id: string,
    change: (h: RecordingRecord, tx: Transaction) => RecordedEvent[] | Promise<RecordedEvent[]>,
  ): Promise<void> {
    await store.transaction(async (tx) => {
      const before = await tx.get(RECORDINGS, id);
      if (!before || before.on !== 'yes') return;
      const h = structuredClone(before);
      const untouched = JSON.stringify(h);
      for (const event of await change(h, tx)) {
        if (h.events >= MAX_EVENTS) {
          h.dropped++;
          continue;
        }
        const eid = recordingEventId(id, h.events);
        tx.put(EVENTS, eid, { id: eid, recordingId: id, seq: h.events, event });
        h.events++;
      }
      if (JSON.stringify(h) !== untouched) tx.put(RECORDINGS, id, h);
    });
  }
  const later = (a: Active, fn: () => Promise<void>) => {
    a.queue = a.queue.then(fn).catch(() => undefined); // a message gone before it was read: nothing to add
  };

  function onMessage(n: { id: string; channelId: string }): void {
    for (const a of active.values())
      later(a, async () => {
        const m = await store.get(WORKSPACE_TABLES.messages, n.id);
        if (m && m.workspaceId !== a.workspaceId) return;
        await append(a.id, (h) => {
          const was = h.seen[n.id];
          if (!m) {
            if (!was) return [];
            delete h.seen[n.id];
            return [{ type: 'message-deleted', id: n.id }];
          }
          const digest = digestOf(m);
          h.seen[m.id] = { digest, reactions: m.reactions.map((r) => `${r.user} ${r.code}`), channelId: m.channelId };
          // a message older than the recording is known from its first change on
          if (!was)
            return m.timestampMilli >= Date.parse(h.startedAt)
              ? [{ type: 'message', message: seenOf(m) }]
              : m.edited
                ? [{ type: 'message-changed', message: seenOf(m) }]
                : [];
          const out: RecordedEvent[] = [];
          if (was.digest !== digest) out.push({ type: 'message-changed', message: seenOf(m) });
          const had = new Set(was.reactions);
          for (const r of m.reactions)
            if (!had.has(`${r.user} ${r.code}`))
              out.push({ type: 'reaction', user: r.user, messageId: m.id, code: r.code });
          return out;
        });
      });
  }

  function onDelivery(d: DeliveryRecord): void {
    for (const a of active.values()) {
      if (d.workspaceId !== a.workspaceId || d.editedFrom) continue;
      later(a, () =>
        append(a.id, async (h, tx) => {
          h.apps[d.appId] = d.appName;
          const seq = h.calls[d.id];
          if (seq !== undefined) {
            // its answer came: the call's event is updated in place
            const known = await tx.get(EVENTS, recordingEventId(a.id, seq));
            if (known?.event.type === 'call')
              tx.put(EVENTS, known.id, { ...known, event: { type: 'call', call: callOf(d, known.event.call) } });
            return [];
          }
          // a delivery that began before the recording is not part of it
          if (Date.parse(d.createdAt) < Date.parse(h.startedAt)) return [];
          if (h.events < MAX_EVENTS) h.calls[d.id] = h.events;
          return [{ type: 'call', call: callOf(d) }];
        }),
      );
    }
  }

  const listen = () => {
    if (unsubscribe.length || !active.size) return;
    unsubscribe = [deps.onMessageChange(onMessage), deps.onDeliveryChange(onDelivery)];
  };
  const quiet = () => {
    if (active.size) return;
    for (const u of unsubscribe) u();
    unsubscribe = [];
  };

  /** Know recording `r` (read from the store) as this daemon's active ones say: on, or not. */
  function know(r: RecordingRecord | undefined, id: string): void {
    if (r?.on !== 'yes') active.delete(id);
    else {
      const a = active.get(id);
      if (a) {
        if (r.actingAs) a.actingAs = r.actingAs;
        else delete a.actingAs;
      } else
        active.set(id, {
          id,
          workspaceId: r.workspaceId,
          ownerId: r.ownerId,
          ...(r.actingAs ? { actingAs: r.actingAs } : {}),
          queue: Promise.resolve(),
        });
    }
    listen();
    quiet();
  }
  /** Every recording that is on, from the store: at start, and when notices may have been lost. */
  async function loadActive(): Promise<void> {
    const on = await store.find(RECORDINGS, 'on', 'yes');
    const ids = new Set(on.map((r) => r.id));
    for (const id of active.keys()) if (!ids.has(id)) active.delete(id);
    for (const r of on) know(r, r.id);
    quiet();
  }
  const refresh = (id: string) => store.get(RECORDINGS, id).then((r) => know(r, id));
  const stopNotices = store.subscribe(
    NOTICES,
    (id) => void refresh(id).catch(() => undefined),
    () => void loadActive().catch(() => undefined),
  );
  const ready = loadActive().catch(() => undefined);
  /** Tell every daemon (this one included) that recording `id` changed. */
  const announce = (id: string) => store.publish(NOTICES, id);

  /** The recording `id`, when it is the person's (anyone else's is not found: its id says nothing). */
  async function own(p: Principal, id: string): Promise<RecordingRecord> {
    const r = await store.get(RECORDINGS, id);
    if (!r || r.ownerId !== p.workspaceUserId) throw notFound('Recording');
    return r;
  }
  /** Change the head of the person's recording `id`; the head as changed. */
  async function changeHead(p: Principal, id: string, fn: (h: RecordingRecord) => void): Promise<RecordingRecord> {
    await own(p, id);
    return store.transaction(async (tx) => {
      const before = await tx.get(RECORDINGS, id);
      if (!before) throw notFound('Recording');
      const h = structuredClone(before);
      fn(h);
      tx.put(RECORDINGS, id, h);
      return h;
    });
  }
  /** What this daemon appended to `id` so far is in. */
  const settled = async (id: string) => {
    await active.get(id)?.queue;
  };

  /** The oldest stopped recordings past MAX_KEPT go, with their events. */
  async function prune(): Promise<void> {
    const stopped = (await store.all(RECORDINGS)).filter((r) => r.stoppedAt);
    stopped.sort((a, b) => (String(a.stoppedAt) < String(b.stoppedAt) ? -1 : 1));
    const gone = stopped.slice(0, Math.max(0, stopped.length - MAX_KEPT));
    const changes: Change[] = gone.flatMap((r): Change[] => [
      { table: RECORDINGS, id: r.id, value: null },
      ...Array.from({ length: r.events }, (_x, i): Change => ({
        table: EVENTS,
        id: recordingEventId(r.id, i),
        value: null,
      })),
    ]);
    for (let i = 0; i < changes.length; i += BATCH) await store.commit(changes.slice(i, i + BATCH));
  }

  /** Every event of recording `r`, in order. */
  async function eventsOf(r: RecordingRecord): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    for (let from = 0; from < r.events; from += BATCH) {
      const keys = Array.from({ length: Math.min(BATCH, r.events - from) }, (_x, i) => ({
        table: EVENTS,
        id: recordingEventId(r.id, from + i),
      }));
      for (const e of await store.getMany(keys)) if (e) out.push(e.event);
    }
    return out;
  }

  /** The names of the channels the events happened in (a direct conversation has none). */
  async function channelsOf(events: RecordedEvent[]): Promise<Array<{ id: string; name: string }>> {
    const ids = new Set<string>();
    for (const e of events) {
      if (e.type === 'message' || e.type === 'message-changed') ids.add(e.message.channelId);
      const at = e.type === 'call' ? e.call.payload.channelId : undefined;
      if (typeof at === 'string') ids.add(at);
    }
    const found = await store.getMany([...ids].map((id) => ({ table: WORKSPACE_TABLES.channels, id })));
    return found.flatMap((c) => (c?.name ? [{ id: c.id, name: c.name }] : []));
  }
  const peopleOf = (workspaceId: string) => workspacePeople(store, deps.ownerOf, workspaceId);
  const activeOf = async (userId: string) =>
    (await store.find(RECORDINGS, 'on', 'yes')).find((r) => r.ownerId === userId);

  return {
    /** Start recording the person's workspace; their recording that is on already is returned as it is. */
    async start(p: Principal): Promise<RecordingInfo> {
      await ready;
      const on = await activeOf(p.workspaceUserId);
      if (on) return infoOf(on);
      const rec: RecordingRecord = {
        id: newId('rec', 8),
        workspaceId: p.workspaceId,
        ownerId: p.workspaceUserId,
        startedAt: new Date(clock.now()).toISOString(),
        on: 'yes',
        events: 0,
        dropped: 0,
        apps: {},
        edits: {},
        seen: {},
        calls: {},
      };
      await store.transaction(async (tx) => tx.put(RECORDINGS, rec.id, rec));
      know(rec, rec.id);
      await announce(rec.id);
      await prune();
      return infoOf(rec);
    },
    /** The person's recording that is on, if any. */
    async activeOf(userId: string): Promise<RecordingInfo | undefined> {
      const r = await activeOf(userId);
      return r && infoOf(r);
    },
    /** Who the console acts as for `userId` (the person signed in), while their recording is on. */
    actingAs(userId: string): { id: string; name: string } | undefined {
      return [...active.values()].find((x) => x.ownerId === userId)?.actingAs;
    },
    async get(p: Principal, id: string): Promise<RecordingInfo> {
      return infoOf(await own(p, id));
    },
    /** Stop: what it saw until now stays; nothing more is added. */
    async stop(p: Principal, id: string): Promise<RecordingInfo> {
      await own(p, id);
      await settled(id);
      const h = await changeHead(p, id, (h) => {
        h.stoppedAt ??= new Date(clock.now()).toISOString();
        delete h.on;
        delete h.actingAs;
      });
      know(h, id);
      await announce(id);
      return infoOf(h);
    },
    /**
     * Act as another member of the workspace in the console while recording (the owner only); undefined: as
     * themselves again.
     */
    async actAs(p: Principal, id: string, user?: { id: string; name: string; workspaceId: string }) {
      const r = await own(p, id);
      if (r.stoppedAt) throw invalidRequest('The recording is stopped: start another to act as someone.');
      const as = user && user.id !== p.workspaceUserId ? user : undefined;
      if (as) {
        if (as.workspaceId !== p.workspaceId) throw notFound('Workspace user');
        if ((await deps.ownerOf(p.workspaceId)) !== p.workspaceUserId)
          throw forbidden('Only the owner of the workspace can act as another user.');
      }
      const h = await changeHead(p, id, (h) => {
        if (as) h.actingAs = { id: as.id, name: as.name };
        else delete h.actingAs;
      });
      know(h, id);
      await announce(id);
    },
    /** A modal closed in the console without a call to the app: the recording has it as a step. */
    viewClosed(ownerUserId: string, actingUserId: string): void {
      const a = [...active.values()].find((x) => x.ownerId === ownerUserId);
      if (a) later(a, () => append(a.id, () => [{ type: 'view-closed', user: actingUserId }]));
    },
    /** The suite the recording makes, with the person's edits, once every event seen so far is in. */
    async suite(p: Principal, id: string, app: Record<string, unknown> = DEFAULT_APP): Promise<RecordedSuiteView> {
      await own(p, id);
      await settled(id);
      const r = await own(p, id);
      const events = await eventsOf(r);
      const made = suiteOf(
        {
          events,
          people: await peopleOf(r.workspaceId),
          channels: await channelsOf(events),
          apps: await Promise.all(
            Object.entries(r.apps).map(async ([appId, name]) => ({
              id: appId,
              name: (await deps.appName?.(appId)) || name,
            })),
          ),
        },
        r.edits,
      );
      const { name, ...rest } = made.suite;
      const suite = { name, app, ...rest };
      return {
        suite,
        yaml: suiteYaml(suite),
        steps: made.steps,
        notes: made.notes,
        edits: { ...r.edits },
        ...(made.appId ? { appId: made.appId } : {}),
        apps: made.apps,
        overHttp: events.some((e) => e.type === 'call' && e.call.appId === made.appId && e.call.transport === 'http'),
      };
    },
    /** The person's changes to the suite before saving (names, steps dropped, texts loosened). */
    async edit(p: Principal, id: string, edits: SuiteEdits): Promise<void> {
      await changeHead(p, id, (h) => {
        h.edits = edits;
      });
    },
    /** The daemon stops: no more listening. */
    close(): void {
      stopNotices();
      for (const u of unsubscribe) u();
      unsubscribe = [];
    },
  };
}

export type Recordings = ReturnType<typeof createRecordings>;
