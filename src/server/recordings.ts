/**
 * Recordings of a conversation (docs/testing.md, "Recording a test"): a person starts one (in the console, or with
 * `appreg test --record`), and from then on everything the daemon sees happen in their workspace is appended to it as
 * an event, in the order it was seen: the messages posted, changed and deleted, the reactions added, the calls made
 * to apps with their answers (whoever made them: the console, `appreg say`, `react`, `deliver-test`). Stopped, it is
 * made into a suite (recording-suite.ts, by src/apptest/recorder/suite-of.ts).
 *
 * A recording is kept in the store (recording-store.ts: its head, and one record per event), so it outlives a restart
 * and every daemon of one PostgreSQL database sees it: any of them answers for it, and each daemon that hears of a
 * change appends it. They hear the same changes (message and delivery notices reach every daemon), so each append is
 * a transaction on the recording's head, which holds what it has seen: the first daemon to append a change writes it,
 * the others find it seen and write nothing. This file is the live side: which recordings are on is kept by each
 * daemon in memory, told by a notice on the store's `recordings` channel whenever one starts, stops or changes who it
 * acts as, and the daemon listens to changes while one is on.
 *
 * A recording belongs to the person who started it (anyone else's is not found). While it is on, the workspace's
 * owner may act as another member in the console (`actAs`), so a conversation between two people is recorded as the
 * suite's `as:` steps.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/types.js';
import type { RecordingRecord } from '../model/recording.js';
import { WORKSPACE_TABLES } from '../model/workspace.js';
import type { DeliveryRecord } from '../model/delivery.js';
import type { Principal } from '../services/identity.js';
import { forbidden, invalidRequest, notFound } from '../errors.js';
import type { SuiteEdits } from '../recording-events.js';
import {
  RECORDINGS,
  append,
  changeHead,
  deliveryChange,
  infoOf,
  messageChange,
  newRecording,
  ownRecording,
  pruneStopped,
  recordingOnOf,
  recordingsOn,
  type HeadChange,
  type RecordingInfo,
} from './recording-store.js';
import { DEFAULT_APP, suiteViewOf, type RecordedSuiteView } from './recording-suite.js';

/** The store's channel on which a recording's id is published when it starts, stops or changes whom it acts as. */
const NOTICES = 'recordings';

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

/** Append `change` to recording `a` after this daemon's earlier appends to it. */
function later(store: Store, a: Active, change: () => Promise<HeadChange | undefined>): void {
  a.queue = a.queue
    .then(async () => {
      const c = await change();
      if (c) await append(store, a.id, c);
    })
    .catch(() => undefined); // a message gone before it was read: nothing to add
}

/** Know recording `r` (read from the store) in `active` as it is: on, or not. */
function know(active: Map<string, Active>, r: RecordingRecord | undefined, id: string): void {
  if (r?.on !== 'yes') {
    active.delete(id);
    return;
  }
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

export function createRecordings(deps: RecordingsDeps) {
  const { store, clock } = deps;
  const active = new Map<string, Active>();
  let unsubscribe: Array<() => void> = [];

  function onMessage(n: { id: string; channelId: string }): void {
    for (const a of active.values())
      later(store, a, async () => {
        const m = await store.get(WORKSPACE_TABLES.messages, n.id);
        return m && m.workspaceId !== a.workspaceId ? undefined : messageChange(n.id, m);
      });
  }
  function onDelivery(d: DeliveryRecord): void {
    for (const a of active.values())
      if (d.workspaceId === a.workspaceId && !d.editedFrom) later(store, a, async () => deliveryChange(a.id, d));
  }

  /** Listen to changes while a recording is on, and only then. */
  function listenWhileOn(): void {
    if (active.size && !unsubscribe.length)
      unsubscribe = [deps.onMessageChange(onMessage), deps.onDeliveryChange(onDelivery)];
    if (!active.size) stopListening();
  }
  function stopListening(): void {
    for (const u of unsubscribe) u();
    unsubscribe = [];
  }
  function knowOne(r: RecordingRecord | undefined, id: string): void {
    know(active, r, id);
    listenWhileOn();
  }
  /** Every recording that is on, from the store: at start, and when notices may have been lost. */
  async function loadActive(): Promise<void> {
    const on = await recordingsOn(store);
    const ids = new Set(on.map((r) => r.id));
    for (const id of active.keys()) if (!ids.has(id)) active.delete(id);
    for (const r of on) know(active, r, r.id);
    listenWhileOn();
  }
  const refresh = (id: string) => store.get(RECORDINGS, id).then((r) => knowOne(r, id));
  const stopNotices = store.subscribe(
    NOTICES,
    (id) => void refresh(id).catch(() => undefined),
    () => void loadActive().catch(() => undefined),
  );
  const ready = loadActive().catch(() => undefined);
  /** Tell every daemon (this one included) that recording `id` changed. */
  const announce = (id: string) => store.publish(NOTICES, id);
  /** What this daemon appended to `id` so far is in. */
  const settled = async (id: string) => {
    await active.get(id)?.queue;
  };
  const own = (p: Principal, id: string) => ownRecording(store, p, id);

  return {
    /** Start recording the person's workspace; their recording that is on already is returned as it is. */
    async start(p: Principal): Promise<RecordingInfo> {
      await ready;
      const on = await recordingOnOf(store, p.workspaceUserId);
      if (on) return infoOf(on);
      const rec = newRecording(p, clock.now());
      await store.transaction(async (tx) => tx.put(RECORDINGS, rec.id, rec));
      knowOne(rec, rec.id);
      await announce(rec.id);
      await pruneStopped(store);
      return infoOf(rec);
    },
    /** The person's recording that is on, if any. */
    async activeOf(userId: string): Promise<RecordingInfo | undefined> {
      const r = await recordingOnOf(store, userId);
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
      const h = await changeHead(store, p, id, (h) => {
        h.stoppedAt ??= new Date(clock.now()).toISOString();
        delete h.on;
        delete h.actingAs;
      });
      knowOne(h, id);
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
      const h = await changeHead(store, p, id, (h) => {
        if (as) h.actingAs = { id: as.id, name: as.name };
        else delete h.actingAs;
      });
      knowOne(h, id);
      await announce(id);
    },
    /** A modal closed in the console without a call to the app: the recording has it as a step. */
    viewClosed(ownerUserId: string, actingUserId: string): void {
      const a = [...active.values()].find((x) => x.ownerId === ownerUserId);
      if (a) later(store, a, async () => () => [{ type: 'view-closed', user: actingUserId }]);
    },
    /** The suite the recording makes, with the person's edits, once every event seen so far is in. */
    async suite(p: Principal, id: string, app: Record<string, unknown> = DEFAULT_APP): Promise<RecordedSuiteView> {
      await own(p, id);
      await settled(id);
      return suiteViewOf(deps, await own(p, id), app);
    },
    /** The person's changes to the suite before saving (names, steps dropped, texts loosened). */
    async edit(p: Principal, id: string, edits: SuiteEdits): Promise<void> {
      await changeHead(store, p, id, (h) => {
        h.edits = edits;
      });
    },
    /** The daemon stops: no more listening. */
    close(): void {
      stopNotices();
      stopListening();
    },
  };
}

export type Recordings = ReturnType<typeof createRecordings>;
