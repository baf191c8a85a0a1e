/**
 * A stopped or running recording made a suite for the person (the console's editor, `appreg test --record-out`): its
 * events read from the store, with the workspace's people, the channels' names and the apps' names, made a suite by
 * src/apptest/recorder/suite-of.ts with the person's edits, and written as the file's text.
 */
import type { Store } from '../store/types.js';
import type { RecordingRecord } from '../model/recording.js';
import { WORKSPACE_TABLES } from '../model/workspace.js';
import { IDENTITY_TABLES } from '../model/identity.js';
import type { RecordedEvent, RecordedPerson, SuiteEdits } from '../recording-events.js';
import { suiteOf, type RecordedSuite } from '../apptest/recorder/suite-of.js';
import { suiteYaml } from '../apptest/recorder/suite-yaml.js';
import { eventsOf } from './recording-store.js';

/**
 * How the app is started, until the person says: `appreg test --record-out FILE` writes what `appreg test --init`
 * guesses from the app's folder instead.
 */
export const DEFAULT_APP = { manifest: 'manifest.json', start: { command: 'npm start' } };

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

interface SuiteViewDeps {
  store: Store;
  /** The workspace's owner (the suite's `owner`). */
  ownerOf(workspaceId: string): Promise<string | undefined>;
  /** An app's display name (the suite is named after the app under test), when the app is still registered. */
  appName?(appId: string): Promise<string | undefined>;
}

/** The names of the channels the events happened in (a direct conversation has none). */
async function channelsOf(store: Store, events: RecordedEvent[]): Promise<Array<{ id: string; name: string }>> {
  const ids = new Set<string>();
  for (const e of events) {
    if (e.type === 'message' || e.type === 'message-changed') ids.add(e.message.channelId);
    const at = e.type === 'call' ? e.call.payload.channelId : undefined;
    if (typeof at === 'string') ids.add(at);
  }
  const found = await store.getMany([...ids].map((id) => ({ table: WORKSPACE_TABLES.channels, id })));
  return found.flatMap((c) => (c?.name ? [{ id: c.id, name: c.name }] : []));
}

/** The workspace's people as a suite names them: the owner (`owner`: the workspace's), the members, the bot users. */
async function workspacePeople(
  store: Store,
  owner: string | undefined,
  workspaceId: string,
): Promise<RecordedPerson[]> {
  const users = await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', workspaceId);
  users.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  return users.map((u) => ({ id: u.id, name: u.name, owner: u.id === owner, ...(u.isBot ? { bot: true } : {}) }));
}

/** The suite recording `r` makes, with its edits; `app`: how the app is started. */
export async function suiteViewOf(
  deps: SuiteViewDeps,
  r: RecordingRecord,
  app: Record<string, unknown>,
): Promise<RecordedSuiteView> {
  const { store } = deps;
  const events = await eventsOf(store, r);
  const made = suiteOf(
    {
      events,
      people: await workspacePeople(store, await deps.ownerOf(r.workspaceId), r.workspaceId),
      channels: await channelsOf(store, events),
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
}
