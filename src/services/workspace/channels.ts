/**
 * Channels of the local workspace (docs/protocol.md §9.3): general and random on a workspace's
 * first use, public and private channels, direct and self channels; who is a member, who can
 * see what. A channel someone cannot see is "not found", never "forbidden", so nothing leaks.
 */
import { newId } from '../../crypto.js';
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Change, Expectation, Store } from '../../store/types.js';
import { isConflict, retryOnConflict } from '../conflict.js';
import { audienceOf, type WorkspaceEvents } from './events.js';
import type { MessageRecord } from '../../model/workspace.js';
import {
  CHANNEL_TYPES,
  WORKSPACE_TABLES,
  directChannelId,
  initialChannelId,
  type ChannelRecord,
  type ChannelType,
} from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import { must } from '../../must.js';

const NAME = /^[\p{L}0-9_\-\s]{1,80}$/u;
const MAX_DIRECT = 8;
/**
 * A claimed channel name, `${workspaceId}|${lower-case name}` → the channel: two daemons cannot create the same name.
 */
const NAMES = 'wsChannelNames';
const nameKey = (workspaceId: string, name: string) => `${workspaceId}|${name.toLowerCase()}`;

export interface ChannelsDeps {
  store: Store;
  /** The message index's commit (a channel's deletion removes its messages, which listeners hear of). */
  commit: (changes: Change[], expect?: Expectation[], removed?: readonly MessageRecord[]) => Promise<void>;
  clock: Clock;
  users: WorkspaceUsers;
  events: WorkspaceEvents;
}

/** The order channels were made in: general, random, then the others (times are to the millisecond). */
const creationOrder = (x: ChannelRecord, y: ChannelRecord) =>
  Number(!x.isInitial) - Number(!y.isInitial) ||
  Number(!x.isMain) - Number(!y.isMain) ||
  (x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : 0) ||
  (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);

export function createChannels(deps: ChannelsDeps) {
  const { store, commit, clock, users, events } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

  /** general and random, the first time a workspace is used (one commit; the ids make it idempotent). */
  async function ensureWorkspace(workspaceId: string): Promise<void> {
    const ids = ['general', 'random'].map((n) => initialChannelId(workspaceId, n));
    const found = await Promise.all(ids.map((id) => store.get(WORKSPACE_TABLES.channels, id)));
    const missing = ['general', 'random'].filter((_, i) => !found[i]);
    if (missing.length === 0) return;
    const at = nowIso();
    const made = missing.map((name) => {
      const ch: ChannelRecord = {
        id: initialChannelId(workspaceId, name),
        workspaceId,
        channelType: 'PUBLIC',
        name,
        everyone: true,
        isMain: name === 'general',
        isInitial: true,
        members: [],
        createdAt: at,
      };
      return ch;
    });
    try {
      // only if still missing: another daemon (or request) may be making them at the same moment
      await commit(
        made.map((ch) => ({ table: WORKSPACE_TABLES.channels, id: ch.id, value: ch })),
        made.map((ch) => ({ table: WORKSPACE_TABLES.channels, id: ch.id, value: undefined })),
      );
    } catch (e) {
      if (!isConflict(e)) throw e;
      await ensureWorkspace(workspaceId); // whoever won made what we wanted; one may still be missing
    }
  }

  const byId = async (id: unknown) => (typeof id === 'string' ? store.get(WORKSPACE_TABLES.channels, id) : undefined);

  const listRecords = (workspaceId: string) => store.find(WORKSPACE_TABLES.channels, 'workspaceId', workspaceId);

  /** A named channel of the workspace: `general` or `#general`. */
  async function byName(workspaceId: string, name: string): Promise<ChannelRecord | undefined> {
    const want = name.replace(/^#/, '').toLowerCase();
    return (await listRecords(workspaceId)).find((ch) => ch.name?.toLowerCase() === want);
  }

  async function isMember(ch: ChannelRecord, userId: string): Promise<boolean> {
    return ch.everyone ? !!(await users.member(ch.workspaceId, userId)) : ch.members.includes(userId);
  }

  /** Public channels are seen by every user of the workspace; the others by their members only. */
  async function canSee(ch: ChannelRecord, userId: string): Promise<boolean> {
    return ch.channelType === 'PUBLIC' ? !!(await users.member(ch.workspaceId, userId)) : isMember(ch, userId);
  }

  async function membersOf(ch: ChannelRecord): Promise<string[]> {
    return ch.everyone ? (await users.usersOf(ch.workspaceId)).map((u) => u.id) : [...ch.members];
  }

  /** The channel if the actor can see it; 404 naming what was asked for (also for another workspace's channel). */
  async function visible(a: Actor, channelId: unknown): Promise<ChannelRecord> {
    await ensureWorkspace(a.workspaceId);
    const ch = await byId(channelId);
    if (!ch || ch.workspaceId !== a.workspaceId || !(await canSee(ch, a.userId)))
      throw notFound(typeof channelId === 'string' ? `Channel ${channelId}` : 'Channel');
    return ch;
  }

  /** V1.ChannelInfo */
  async function view(ch: ChannelRecord, a: Actor) {
    const channel: Record<string, unknown> = {
      id: ch.id,
      workspaceId: ch.workspaceId,
      channelType: ch.channelType,
      ...(ch.name !== undefined ? { name: ch.name } : {}),
      description: ch.description ?? '',
      isMember: await isMember(ch, a.userId),
      isMuted: false,
      isHidden: false,
      isArchived: !!ch.isArchived,
      isPumbleBot: false,
      isAddonBot: false,
      isMain: !!ch.isMain,
      isInitial: !!ch.isInitial,
      postingPermissions: {
        allowThreads: true,
        allowMentions: true,
        postingPermissionsGroup: 'EVERYONE',
        workspaceUserIds: [],
      },
      desktopNotificationPreferences: 'ALL',
      mobileNotificationPreferences: 'ALL',
      notifyAboutRepliesInThreads: true,
      ...(ch.createdBy ? { addedById: ch.createdBy } : {}),
    };
    return { channel, users: await membersOf(ch), pinnedMessages: [] };
  }

  function parseTypes(raw: unknown): Set<ChannelType> {
    if (raw === undefined || raw === '') return new Set(CHANNEL_TYPES);
    const parts = String(raw)
      .split(',')
      .map((s) => s.trim().toUpperCase());
    const bad = parts.filter((p) => !CHANNEL_TYPES.includes(p as ChannelType));
    if (bad.length)
      throw invalidRequest(`types must be a comma-separated list of ${CHANNEL_TYPES.join(', ')}.`, [
        { pointer: '/types', message: `unknown type ${bad[0]}` },
      ]);
    return new Set(parts as ChannelType[]);
  }

  /** GET /v1/channels: the channels the actor can see (public ones whether or not a member). */
  async function list(a: Actor, types?: unknown) {
    const want = parseTypes(types);
    await ensureWorkspace(a.workspaceId);
    const out = [];
    for (const ch of (await listRecords(a.workspaceId)).sort(creationOrder)) {
      if (want.has(ch.channelType) && (await canSee(ch, a.userId))) out.push(await view(ch, a));
    }
    return out;
  }

  async function channelEventBody(ch: ChannelRecord) {
    return {
      wId: ch.workspaceId,
      cId: ch.id,
      cN: ch.name ?? '',
      cU: await membersOf(ch),
      cT: ch.channelType,
      ty: 'CHANNEL_CREATED',
    };
  }

  /** POST /v1/channels {name, type?, description?} */
  async function create(a: Actor, body: Record<string, unknown>) {
    const { name, type = 'PUBLIC', description } = body;
    if (typeof name !== 'string' || !NAME.test(name))
      throw invalidRequest('name must be 1 to 80 letters, digits, spaces, _ or -.', [
        { pointer: '/name', message: 'is not a valid channel name' },
      ]);
    if (type !== 'PUBLIC' && type !== 'PRIVATE')
      throw invalidRequest('type must be PUBLIC or PRIVATE.', [
        { pointer: '/type', message: 'must be PUBLIC or PRIVATE' },
      ]);
    if (description !== undefined && (typeof description !== 'string' || description.length > 250))
      throw invalidRequest('description must be at most 250 characters.', [
        { pointer: '/description', message: 'must be a string of at most 250 characters' },
      ]);
    await ensureWorkspace(a.workspaceId);
    const taken = () =>
      invalidRequest(`A channel named ${name.trim()} already exists.`, [{ pointer: '/name', message: 'is taken' }]);
    if (await byName(a.workspaceId, name.trim())) throw taken();
    const ch: ChannelRecord = {
      id: newId('ch', 12),
      workspaceId: a.workspaceId,
      channelType: type,
      name: name.trim(),
      ...(description ? { description } : {}),
      members: [a.userId],
      createdBy: a.userId,
      createdAt: nowIso(),
    };
    // the name's claim record must still be absent: of two daemons creating the same name at once, one wins
    const key = nameKey(ch.workspaceId, must(ch.name));
    const event = events.workspaceEvent('CHANNEL_CREATED', ch.workspaceId, audienceOf(ch), await channelEventBody(ch));
    try {
      await commit(
        [
          { table: WORKSPACE_TABLES.channels, id: ch.id, value: ch },
          { table: NAMES, id: key, value: { id: key, channelId: ch.id } },
          event,
        ],
        [{ table: NAMES, id: key, value: undefined }],
      );
    } catch (e) {
      throw isConflict(e) ? taken() : e;
    }
    events.written();
    return view(ch, a);
  }

  /**
   * GET (create: false) and POST (create: true) /v1/channels/direct: found by its members; GET also creates it when
   * missing, so a first DM works.
   */
  async function direct(a: Actor, participantIds: unknown) {
    const ids = typeof participantIds === 'string' ? participantIds.split(',') : participantIds;
    if (!Array.isArray(ids) || ids.some((x) => typeof x !== 'string'))
      throw invalidRequest('participantIds must list workspace user ids.', [
        { pointer: '/participantIds', message: 'must be a list of ids' },
      ]);
    const set = new Set([a.userId, ...(ids as string[]).map((s) => s.trim()).filter(Boolean)]);
    if (set.size > MAX_DIRECT + 1)
      throw invalidRequest(`A direct channel has at most ${MAX_DIRECT} other participants.`, [
        { pointer: '/participantIds', message: `at most ${MAX_DIRECT}` },
      ]);
    const unknown = await unknownUsers(a, [...set]);
    if (unknown.length)
      throw invalidRequest(`${unknown[0]} is not a user of this workspace.`, [
        { pointer: '/participantIds', message: 'names an unknown user' },
      ]);
    await ensureWorkspace(a.workspaceId);
    const members = [...set].sort();
    const id = directChannelId(a.workspaceId, members);
    let ch = await byId(id);
    if (!ch) {
      const made: ChannelRecord = {
        id,
        workspaceId: a.workspaceId,
        channelType: members.length === 1 ? 'SELF' : 'DIRECT',
        members,
        createdBy: a.userId,
        createdAt: nowIso(),
      };
      try {
        await commit(
          [{ table: WORKSPACE_TABLES.channels, id, value: made }],
          [{ table: WORKSPACE_TABLES.channels, id, value: undefined }],
        );
        ch = made;
      } catch (e) {
        if (!isConflict(e)) throw e;
        ch = await byId(id); // made at the same moment elsewhere: that one is the channel
        if (!ch) throw e;
      }
    }
    return view(ch, a);
  }

  async function unknownUsers(a: Actor, ids: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const id of ids) if (!(await users.member(a.workspaceId, id))) out.push(id);
    return out;
  }

  /** A change of the channel as read: refused (StoreConflict) when it changed meanwhile. */
  const asRead = (ch: ChannelRecord): Expectation[] => [{ table: WORKSPACE_TABLES.channels, id: ch.id, value: ch }];

  function changeableMembers(ch: ChannelRecord): void {
    if (ch.everyone) throw invalidRequest(`Every user of the workspace is a member of #${ch.name}.`);
    if (ch.channelType === 'DIRECT' || ch.channelType === 'SELF')
      throw invalidRequest('The members of a direct channel cannot change.');
    if (ch.isArchived) throw invalidRequest('The channel is archived.');
  }

  /** POST /v1/channels/{c}/users {userIds}: the actor must be a member (of a public channel too). */
  async function addUsers(a: Actor, channelId: string, body: Record<string, unknown>) {
    return retryOnConflict(async () => {
      const ch = await visible(a, channelId);
      const ids = body.userIds;
      if (!Array.isArray(ids) || ids.length === 0 || ids.some((x) => typeof x !== 'string'))
        throw invalidRequest('userIds must list workspace user ids.', [
          { pointer: '/userIds', message: 'must be a non-empty list of ids' },
        ]);
      changeableMembers(ch);
      if (!(await isMember(ch, a.userId))) throw forbidden('Only a member of the channel can add users to it.');
      const unknown = await unknownUsers(a, ids as string[]);
      if (unknown.length)
        throw invalidRequest(`${unknown[0]} is not a user of this workspace.`, [
          { pointer: '/userIds', message: 'names an unknown user' },
        ]);
      const added = [...new Set(ids as string[])].filter((id) => !ch.members.includes(id));
      if (added.length)
        await commit(
          [{ table: WORKSPACE_TABLES.channels, id: ch.id, value: { ...ch, members: [...ch.members, ...added] } }],
          asRead(ch),
        );
      return { channelId: ch.id, addedUserIds: added };
    });
  }

  /** DELETE /v1/channels/{c}/users/{u}: a member removes someone (or leaves). */
  async function removeUser(a: Actor, channelId: string, userId: string): Promise<void> {
    await retryOnConflict(async () => {
      const ch = await visible(a, channelId);
      changeableMembers(ch);
      if (!(await isMember(ch, a.userId))) throw forbidden('Only a member of the channel can remove users from it.');
      if (!ch.members.includes(userId)) throw notFound('Channel member');
      await commit(
        [
          {
            table: WORKSPACE_TABLES.channels,
            id: ch.id,
            value: { ...ch, members: ch.members.filter((m) => m !== userId) },
          },
        ],
        asRead(ch),
      );
    });
  }

  /** Archive a public or private channel (a member does it; general cannot be archived). CHANNEL_ARCHIVED. */
  async function archive(a: Actor, channelId: string): Promise<void> {
    const archived = await retryOnConflict(async () => {
      const ch = await visible(a, channelId);
      if (ch.isMain || ch.channelType === 'DIRECT' || ch.channelType === 'SELF')
        throw invalidRequest('This channel cannot be archived.');
      if (!(await isMember(ch, a.userId))) throw forbidden('Only a member of the channel can archive it.');
      if (ch.isArchived) return false;
      // as read: archived once, and one CHANNEL_ARCHIVED, however many ask at once
      const event = events.workspaceEvent('CHANNEL_ARCHIVED', ch.workspaceId, audienceOf(ch), {
        m: await membersOf(ch),
        wId: ch.workspaceId,
        cId: ch.id,
        v: true,
        ty: 'CHANNEL_ARCHIVED',
        uId: a.userId,
      });
      await commit(
        [{ table: WORKSPACE_TABLES.channels, id: ch.id, value: { ...ch, isArchived: true } }, event],
        asRead(ch),
      );
      return true;
    });
    if (archived) events.written();
  }

  /**
   * Delete a channel and its messages (its creator does it; the initial channels and direct
   * channels cannot be deleted). CHANNEL_DELETED goes to the apps whose users could see it.
   */
  async function remove(
    a: Actor,
    channelId: string,
    messagesOf: (channelId: string) => Promise<MessageRecord[]>,
  ): Promise<void> {
    await retryOnConflict(async () => {
      const ch = await visible(a, channelId);
      if (ch.isInitial || ch.channelType === 'DIRECT' || ch.channelType === 'SELF')
        throw invalidRequest('This channel cannot be deleted.');
      if (ch.createdBy !== a.userId) throw forbidden('Only whoever created the channel can delete it.');
      const gone = await messagesOf(ch.id);
      // the channel as read: deleted (and CHANNEL_DELETED sent) once, however many ask at once (the others: 404)
      const name: Change[] =
        ch.name !== undefined ? [{ table: NAMES, id: nameKey(ch.workspaceId, ch.name), value: null }] : [];
      // to the apps whose users could see the channel before it went
      const event = events.workspaceEvent('CHANNEL_DELETED', ch.workspaceId, audienceOf(ch), {
        m: await membersOf(ch),
        wId: ch.workspaceId,
        cId: ch.id,
        ty: 'CHANNEL_DELETED',
      });
      await commit(
        [
          { table: WORKSPACE_TABLES.channels, id: ch.id, value: null },
          ...name,
          ...gone.map((m) => ({ table: WORKSPACE_TABLES.messages, id: m.id, value: null })),
          event,
        ],
        asRead(ch),
        gone,
      );
    });
    events.written();
  }

  return {
    ensureWorkspace,
    byId,
    byName,
    listRecords,
    isMember,
    canSee,
    membersOf,
    visible,
    view,
    list,
    create,
    direct,
    addUsers,
    removeUser,
    archive,
    remove,
  };
}

export type Channels = ReturnType<typeof createChannels>;
