/**
 * User groups, custom statuses and apps' home views (docs/protocol.md §9.4, §9.5). Groups are
 * made by people (the CLI); apps list them. A custom status is set by a token's user for
 * themselves. A home view is kept per app and user, for the workspace view to show.
 */
import { newId } from '../../crypto.js';
import { invalidRequest, notFound } from '../../errors.js';
import type { ErrorDetail } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store, Transaction } from '../../store/types.js';
import { EVERYONE, type WorkspaceEvents } from './events.js';
import { userEventBody } from '../../model/events.js';
import {
  WORKSPACE_TABLES,
  type CustomStatusRecord,
  type HomeViewRecord,
  type UserGroupRecord,
} from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import { must } from '../../must.js';
import type { Json, JsonObject } from '../../model/json.js';

const EXPIRATIONS = ['never', 'min30', 'hour1', 'hour4', 'today', 'thisWeek', 'custom'];

/** V1.CustomStatusRequest as platform.schema.json#customStatusBody checks it (EXPIRATIONS its enum). */
export interface StatusBody {
  code: string;
  status?: string;
  expiration?: string;
  expiresAt?: number;
  pausedNotifications?: boolean;
}

/** The status's 400: each problem the schema finds, in the words the service used for it. */
const STATUS_WORDS: Record<string, string> = {
  '/code': 'must be an emoji code of 3 to 102 characters',
  '/status': 'must be at most 100 characters',
  '/expiration': `must be one of ${EXPIRATIONS.join(', ')}`,
  '/expiresAt': 'must be epoch milliseconds (0: never)',
  '/pausedNotifications': 'must be true or false',
};

export function statusProblem(p: { pointer: string; message: string }): ErrorDetail | undefined {
  // a body that is not an object has no code
  const at = p.pointer === '' ? '/code' : `/${p.pointer.split('/')[1]}`;
  const message = STATUS_WORDS[at];
  return message === undefined ? undefined : { pointer: at, message };
}

/** An app's home view for a user (platform.schema.json#homeViewBody): blocks, and what the app keeps with them. */
export interface HomeViewBody {
  blocks: JsonObject[];
  title?: Json;
  state?: Json;
}

/** A group's fields as a person sends them (management.schema.json#groupBody): checked here, every one at once. */
export interface GroupBody {
  name?: Json;
  handle?: Json;
  description?: Json;
  workspaceUserIds?: Json;
  disabled?: Json;
}

const isString = (x: Json): x is string => typeof x === 'string';
const HANDLE = /^[a-z0-9_.-]{1,80}$/;
/** A claimed group handle, `${workspaceId}|${handle}` → the group: two daemons cannot give out the same handle. */
const HANDLES = 'wsGroupHandles';
const handleKey = (workspaceId: string, handle: string) => `${workspaceId}|${handle}`;

export function createProfiles(deps: { store: Store; clock: Clock; users: WorkspaceUsers; events: WorkspaceEvents }) {
  const { store, clock, users, events } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

  const groupView = (g: UserGroupRecord) => ({
    id: g.id,
    workspaceId: g.workspaceId,
    createdBy: g.createdBy,
    disabled: g.disabled,
    name: g.name,
    handle: g.handle,
    description: g.description,
    workspaceUserIds: g.workspaceUserIds,
  });
  /** The group's event body; an update names who made it (`uId`). */
  const groupBody = (g: UserGroupRecord, ty: string, by: string) => ({
    ...(ty === 'WORKSPACE_USER_GROUP_UPDATED' ? { uId: by } : {}),
    wId: g.workspaceId,
    cbId: g.createdBy,
    id: g.id,
    n: g.name,
    h: g.handle,
    d: g.description,
    di: g.disabled,
    uIds: g.workspaceUserIds,
    cIds: [],
    ty,
  });
  const groupsOf = async (workspaceId: string) =>
    (await store.find(WORKSPACE_TABLES.groups, 'workspaceId', workspaceId)).sort((x, y) =>
      x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.id < y.id ? -1 : 1,
    );
  const handleTaken = (handle: string) =>
    invalidRequest(`A group with the handle ${handle} already exists.`, [{ pointer: '/handle', message: 'is taken' }]);

  /** GET /v1/workspaceUsers/groups */
  async function listGroups(a: Actor) {
    return (await groupsOf(a.workspaceId)).map(groupView);
  }

  /**
   * Write group `g` by user `by` in `tx` (`prev`: the group as read in it, when it is a change): the
   * record, the claim of its handle when the handle is new (read as absent; released when it changes),
   * and the group's event (WORKSPACE_USER_GROUP_CREATED or _UPDATED). A taken handle: 400.
   */
  async function writeGroup(tx: Transaction, g: UserGroupRecord, by: string, prev?: UserGroupRecord): Promise<void> {
    const ty = prev ? 'WORKSPACE_USER_GROUP_UPDATED' : 'WORKSPACE_USER_GROUP_CREATED';
    if (g.handle !== prev?.handle) {
      const key = handleKey(g.workspaceId, g.handle);
      if (await tx.get(HANDLES, key)) throw handleTaken(g.handle);
      tx.put(HANDLES, key, { id: key, groupId: g.id });
      if (prev) tx.delete(HANDLES, handleKey(prev.workspaceId, prev.handle));
    }
    tx.put(WORKSPACE_TABLES.groups, g.id, g);
    tx.apply(events.workspaceEvent(ty, g.workspaceId, EVERYONE, groupBody(g, ty, by)));
  }

  async function parseGroup(a: Actor, b: GroupBody, prev?: UserGroupRecord) {
    const details: ErrorDetail[] = [];
    const name = b.name ?? prev?.name;
    const handle =
      b.handle ??
      prev?.handle ??
      (typeof name === 'string' ? name.toLowerCase().replace(/[^a-z0-9_.-]+/g, '-') : undefined);
    const description = b.description ?? prev?.description ?? '';
    const ids = b.workspaceUserIds ?? prev?.workspaceUserIds ?? [];
    const okName = typeof name === 'string' && name.trim() && name.length <= 80 ? name : undefined;
    if (okName === undefined) details.push({ pointer: '/name', message: 'must be 1 to 80 characters' });
    const okHandle = typeof handle === 'string' && HANDLE.test(handle) ? handle : undefined;
    if (okHandle === undefined)
      details.push({ pointer: '/handle', message: 'must be 1 to 80 lower-case letters, digits, _ . or -' });
    const okDescription = typeof description === 'string' && description.length <= 250 ? description : undefined;
    if (okDescription === undefined)
      details.push({ pointer: '/description', message: 'must be at most 250 characters' });
    const known = async (xs: string[]) => {
      for (const x of xs) if (!(await users.member(a.workspaceId, x))) return false;
      return true;
    };
    const idList = Array.isArray(ids) && ids.every(isString) ? ids : undefined;
    const okIds = idList && (await known(idList)) ? idList : undefined;
    if (okIds === undefined)
      details.push({ pointer: '/workspaceUserIds', message: 'must list users of the workspace' });
    if (b.disabled !== undefined && typeof b.disabled !== 'boolean')
      details.push({ pointer: '/disabled', message: 'must be true or false' });
    if (details.length || okName === undefined || okHandle === undefined || okDescription === undefined || !okIds)
      throw invalidRequest(`The group is not valid: ${must(details[0]).pointer} ${must(details[0]).message}.`, details);
    if ((await groupsOf(a.workspaceId)).some((g) => g.handle === okHandle && g.id !== prev?.id))
      throw handleTaken(okHandle);
    return {
      name: okName.trim(),
      handle: okHandle,
      description: okDescription,
      workspaceUserIds: [...new Set(okIds)],
      disabled: typeof b.disabled === 'boolean' ? b.disabled : (prev?.disabled ?? false),
    };
  }

  /** A person creates a user group: WORKSPACE_USER_GROUP_CREATED. */
  async function createGroup(a: Actor, body: GroupBody) {
    const g: UserGroupRecord = {
      id: newId('grp', 12),
      workspaceId: a.workspaceId,
      createdBy: a.userId,
      ...(await parseGroup(a, body)),
      createdAt: nowIso(),
    };
    await store.transaction((tx) => writeGroup(tx, g, a.userId));
    events.written();
    return groupView(g);
  }

  /** A person changes a group (name, handle, description, members, disabled): WORKSPACE_USER_GROUP_UPDATED. */
  async function updateGroup(a: Actor, id: string, body: GroupBody) {
    const g = await store.transaction(async (tx) => {
      const prev = await tx.get(WORKSPACE_TABLES.groups, id);
      if (!prev || prev.workspaceId !== a.workspaceId) throw notFound('User group');
      const g: UserGroupRecord = { ...prev, ...(await parseGroup(a, body, prev)) };
      await writeGroup(tx, g, a.userId, prev);
      return g;
    });
    events.written();
    return groupView(g);
  }

  /** PUT /v1/workspaceUsers/customStatus: the token's user sets their own; WORKSPACE_USER_UPDATED. */
  async function setStatus(a: Actor, b: StatusBody) {
    const { code, status = '', expiration = 'never', expiresAt = 0, pausedNotifications = false } = b;
    const u = await users.member(a.workspaceId, a.userId);
    if (!u) throw notFound('Workspace user');
    const rec: CustomStatusRecord = {
      id: u.id,
      code,
      status,
      expiration,
      expiresAt,
      pausedNotifications,
    };
    const cs = users.statusView(rec);
    const event = events.workspaceEvent('WORKSPACE_USER_UPDATED', u.workspaceId, EVERYONE, {
      ...userEventBody(u),
      ty: 'WORKSPACE_USER_UPDATED',
      cs: cs ? { st: cs.status, co: cs.code, ex: cs.expiration, ea: String(cs.expiresAt), su: cs.showUntil } : null,
      puE: u.email,
      cb: u.id,
      atz: true,
    });
    await store.transaction(async (tx) => {
      tx.put(WORKSPACE_TABLES.statuses, u.id, rec);
      tx.apply(event);
    });
    events.written();
    return users.view(u);
  }

  /** POST /v1/app/homeView/workspaceUsers/{u} {blocks, title?, state?}: kept for that user. */
  async function publishHomeView(a: Actor & { appId: string }, userId: string, b: HomeViewBody) {
    if (!(await users.member(a.workspaceId, userId))) throw notFound('Workspace user');
    const rec: HomeViewRecord = {
      id: `${a.appId}|${userId}`,
      appId: a.appId,
      workspaceId: a.workspaceId,
      workspaceUserId: userId,
      blocks: b.blocks,
      ...(b.title !== undefined ? { title: b.title } : {}),
      ...(b.state !== undefined ? { state: b.state } : {}),
      updatedAt: nowIso(),
    };
    await store.transaction(async (tx) => tx.put(WORKSPACE_TABLES.homeViews, rec.id, rec));
    return must(await homeView(a.appId, userId));
  }

  /** The home view an app published for a user, as a V1 HOME view. */
  async function homeView(appId: string, userId: string) {
    const v = await store.get(WORKSPACE_TABLES.homeViews, `${appId}|${userId}`);
    return v
      ? {
          id: v.id,
          type: 'HOME',
          blocks: v.blocks,
          ...(v.title !== undefined ? { title: v.title } : {}),
          ...(v.state !== undefined ? { state: v.state } : {}),
        }
      : undefined;
  }

  return { listGroups, createGroup, updateGroup, setStatus, publishHomeView, homeView };
}

export type Profiles = ReturnType<typeof createProfiles>;
