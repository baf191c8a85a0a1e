/**
 * Channels of the local workspace (docs/protocol.md §9.3): general and random on a workspace's
 * first use, public and private channels, direct and self channels; who is a member, who can
 * see what. A channel someone cannot see is "not found", never "forbidden", so nothing leaks.
 */
import { newId } from '../../crypto.js';
import { forbidden, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store, Transaction } from '../../store/types.js';
import { audienceOf, type WorkspaceEvents } from './events.js';
import {
  CHANNEL_TYPES,
  isChannelType,
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
  /** The message index's transaction (a channel's deletion removes its messages, which listeners hear of). */
  transaction: <T>(work: (tx: Transaction) => Promise<T>) => Promise<T>;
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

/** A new channel (V1.CreateChannelRequest; the schemas at the edge say its fields are text). */
export interface ChannelBody {
  name?: string;
  type?: string;
  description?: string;
}

/** A channel as the platform API shows it to one person (GET /v1/channels and the calls that answer a channel). */
interface ChannelInfo {
  id: string;
  workspaceId: string;
  channelType: ChannelType;
  name?: string;
  description: string;
  isMember: boolean;
  isMuted: boolean;
  isHidden: boolean;
  isArchived: boolean;
  isPumbleBot: boolean;
  isAddonBot: boolean;
  isMain: boolean;
  isInitial: boolean;
  postingPermissions: {
    allowThreads: boolean;
    allowMentions: boolean;
    postingPermissionsGroup: string;
    workspaceUserIds: string[];
  };
  desktopNotificationPreferences: string;
  mobileNotificationPreferences: string;
  notifyAboutRepliesInThreads: boolean;
  addedById?: string;
}

/** A channel with its members, as a list of channels answers each. */
export interface ChannelView {
  channel: ChannelInfo;
  users: string[];
  pinnedMessages: never[];
}

export function createChannels(deps: ChannelsDeps) {
  const { store, transaction, clock, users, events } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

  /** general and random, the first time a workspace is used (one commit; the ids make it idempotent). */
  async function ensureWorkspace(workspaceId: string): Promise<void> {
    const ids = ['general', 'random'].map((n) => initialChannelId(workspaceId, n));
    const found = await Promise.all(ids.map((id) => store.get(WORKSPACE_TABLES.channels, id)));
    if (found.every(Boolean)) return;
    // only those still missing: another daemon (or request) may be making them at the same moment
    await store.transaction(async (tx) => {
      const at = nowIso();
      for (const name of ['general', 'random']) {
        const id = initialChannelId(workspaceId, name);
        if (await tx.get(WORKSPACE_TABLES.channels, id)) continue;
        tx.put(WORKSPACE_TABLES.channels, id, {
          id,
          workspaceId,
          channelType: 'PUBLIC',
          name,
          everyone: true,
          isMain: name === 'general',
          isInitial: true,
          members: [],
          createdAt: at,
        });
      }
    });
  }

  const byId = async (id: string | undefined) =>
    id === undefined ? undefined : store.get(WORKSPACE_TABLES.channels, id);

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

  /**
   * The channel if the actor can see it; 404 naming what was asked for (also for another workspace's channel). Given a
   * transaction, the channel is read in it (its workspace was made ready before).
   */
  async function visible(a: Actor, channelId: string | undefined, tx?: Transaction): Promise<ChannelRecord> {
    if (!tx) await ensureWorkspace(a.workspaceId);
    const ch =
      tx && channelId !== undefined ? await tx.get(WORKSPACE_TABLES.channels, channelId) : await byId(channelId);
    if (!ch || ch.workspaceId !== a.workspaceId || !(await canSee(ch, a.userId)))
      throw notFound(channelId !== undefined ? `Channel ${channelId}` : 'Channel');
    return ch;
  }

  /** V1.ChannelInfo */
  async function view(ch: ChannelRecord, a: Actor): Promise<ChannelView> {
    const channel: ChannelInfo = {
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

  function parseTypes(raw: string | undefined): Set<ChannelType> {
    if (raw === undefined || raw === '') return new Set(CHANNEL_TYPES);
    const parts = raw.split(',').map((s) => s.trim().toUpperCase());
    const types = parts.filter(isChannelType);
    if (types.length < parts.length)
      throw invalidRequest(`types must be a comma-separated list of ${CHANNEL_TYPES.join(', ')}.`, [
        { pointer: '/types', message: `unknown type ${parts.find((p) => !isChannelType(p))}` },
      ]);
    return new Set(types);
  }

  /** GET /v1/channels: the channels the actor can see (public ones whether or not a member). */
  async function list(a: Actor, types?: string) {
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
  async function create(a: Actor, body: ChannelBody) {
    const { name, type = 'PUBLIC', description } = body;
    if (name === undefined || !NAME.test(name))
      throw invalidRequest('name must be 1 to 80 letters, digits, spaces, _ or -.', [
        { pointer: '/name', message: 'is not a valid channel name' },
      ]);
    if (type !== 'PUBLIC' && type !== 'PRIVATE')
      throw invalidRequest('type must be PUBLIC or PRIVATE.', [
        { pointer: '/type', message: 'must be PUBLIC or PRIVATE' },
      ]);
    if (description !== undefined && description.length > 250)
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
    // the name's claim record, read as absent: of two daemons creating the same name at once, one wins
    const key = nameKey(ch.workspaceId, must(ch.name));
    const event = events.workspaceEvent('CHANNEL_CREATED', ch.workspaceId, audienceOf(ch), await channelEventBody(ch));
    await transaction(async (tx) => {
      if (await tx.get(NAMES, key)) throw taken();
      tx.put(WORKSPACE_TABLES.channels, ch.id, ch);
      tx.put(NAMES, key, { id: key, channelId: ch.id });
      tx.apply(event);
    });
    events.written();
    return view(ch, a);
  }

  /**
   * GET (create: false) and POST (create: true) /v1/channels/direct: found by its members; GET also creates it when
   * missing, so a first DM works.
   */
  async function direct(a: Actor, participantIds: string | string[]) {
    const ids = typeof participantIds === 'string' ? participantIds.split(',') : participantIds;
    const set = new Set([a.userId, ...ids.map((s) => s.trim()).filter(Boolean)]);
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
    // made at the same moment elsewhere: that one is the channel
    const ch = await transaction(async (tx) => {
      const found = await tx.get(WORKSPACE_TABLES.channels, id);
      if (found) return found;
      const made: ChannelRecord = {
        id,
        workspaceId: a.workspaceId,
        channelType: members.length === 1 ? 'SELF' : 'DIRECT',
        members,
        createdBy: a.userId,
        createdAt: nowIso(),
      };
      tx.put(WORKSPACE_TABLES.channels, id, made);
      return made;
    });
    return view(ch, a);
  }

  async function unknownUsers(a: Actor, ids: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const id of ids) if (!(await users.member(a.workspaceId, id))) out.push(id);
    return out;
  }

  /** Run `work` on the channel as the actor sees it, in one transaction (the channel is what it expects). */
  async function onChannel<T>(a: Actor, channelId: string, work: (tx: Transaction, ch: ChannelRecord) => Promise<T>) {
    await ensureWorkspace(a.workspaceId);
    return transaction(async (tx) => work(tx, await visible(a, channelId, tx)));
  }

  function changeableMembers(ch: ChannelRecord): void {
    if (ch.everyone) throw invalidRequest(`Every user of the workspace is a member of #${ch.name}.`);
    if (ch.channelType === 'DIRECT' || ch.channelType === 'SELF')
      throw invalidRequest('The members of a direct channel cannot change.');
    if (ch.isArchived) throw invalidRequest('The channel is archived.');
  }

  /** POST /v1/channels/{c}/users {userIds}: the actor must be a member (of a public channel too). */
  async function addUsers(a: Actor, channelId: string, body: { userIds?: string[] }) {
    return onChannel(a, channelId, async (tx, ch) => {
      const ids = body.userIds;
      if (!ids?.length)
        throw invalidRequest('userIds must list workspace user ids.', [
          { pointer: '/userIds', message: 'must be a non-empty list of ids' },
        ]);
      changeableMembers(ch);
      if (!(await isMember(ch, a.userId))) throw forbidden('Only a member of the channel can add users to it.');
      const unknown = await unknownUsers(a, ids);
      if (unknown.length)
        throw invalidRequest(`${unknown[0]} is not a user of this workspace.`, [
          { pointer: '/userIds', message: 'names an unknown user' },
        ]);
      const added = [...new Set(ids)].filter((id) => !ch.members.includes(id));
      if (added.length) tx.put(WORKSPACE_TABLES.channels, ch.id, { ...ch, members: [...ch.members, ...added] });
      return { channelId: ch.id, addedUserIds: added };
    });
  }

  /** DELETE /v1/channels/{c}/users/{u}: a member removes someone (or leaves). */
  async function removeUser(a: Actor, channelId: string, userId: string): Promise<void> {
    await onChannel(a, channelId, async (tx, ch) => {
      changeableMembers(ch);
      if (!(await isMember(ch, a.userId))) throw forbidden('Only a member of the channel can remove users from it.');
      if (!ch.members.includes(userId)) throw notFound('Channel member');
      tx.put(WORKSPACE_TABLES.channels, ch.id, { ...ch, members: ch.members.filter((m) => m !== userId) });
    });
  }

  /** Archive a public or private channel (a member does it; general cannot be archived). CHANNEL_ARCHIVED. */
  async function archive(a: Actor, channelId: string): Promise<void> {
    const archived = await onChannel(a, channelId, async (tx, ch) => {
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
      tx.put(WORKSPACE_TABLES.channels, ch.id, { ...ch, isArchived: true });
      tx.apply(event);
      return true;
    });
    if (archived) events.written();
  }

  /**
   * Delete a channel and its messages (its creator does it; the initial channels and direct
   * channels cannot be deleted). CHANNEL_DELETED goes to the apps whose users could see it.
   */
  async function remove(a: Actor, channelId: string): Promise<void> {
    await onChannel(a, channelId, async (tx, ch) => {
      if (ch.isInitial || ch.channelType === 'DIRECT' || ch.channelType === 'SELF')
        throw invalidRequest('This channel cannot be deleted.');
      if (ch.createdBy !== a.userId) throw forbidden('Only whoever created the channel can delete it.');
      // the channel as read: deleted (and CHANNEL_DELETED sent) once, however many ask at once (the others: 404);
      // its messages only looked at (deleting one already gone changes nothing)
      for (const m of await tx.find(WORKSPACE_TABLES.messages, 'channelId', ch.id, { peek: true }))
        tx.delete(WORKSPACE_TABLES.messages, m.id);
      if (ch.name !== undefined) tx.delete(NAMES, nameKey(ch.workspaceId, ch.name));
      // to the apps whose users could see the channel before it went
      const event = events.workspaceEvent('CHANNEL_DELETED', ch.workspaceId, audienceOf(ch), {
        m: await membersOf(ch),
        wId: ch.workspaceId,
        cId: ch.id,
        ty: 'CHANNEL_DELETED',
      });
      tx.delete(WORKSPACE_TABLES.channels, ch.id);
      tx.apply(event);
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
