/** Workspace users and the workspace as the platform API shows them (docs/protocol.md §9.4). */
import { notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES, type WorkspaceUserRecord } from '../../model/identity.js';
import { WORKSPACE_TABLES, type CustomStatusRecord } from '../../model/workspace.js';

/** Who a platform call acts as: the token's user (the bot user for a bot token) in its workspace. */
export interface Actor {
  workspaceId: string;
  userId: string;
  /** The app whose token made the call; absent for a person acting through the CLI. */
  appId?: string;
}

/** V1.WorkspaceUser.timeFormat: every user shows times on the 24-hour clock. */
const TIME_FORMAT = 24;

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '') || 'workspace';

export function createWorkspaceUsers(store: Store, clock: Clock) {
  /** A custom status as V1.CustomStatus, unless it has expired. */
  function statusView(s: CustomStatusRecord) {
    if (s.expiresAt > 0 && s.expiresAt <= clock.now()) return undefined;
    return {
      code: s.code,
      status: s.status,
      expiration: s.expiration,
      expiresAt: s.expiresAt,
      showUntil: s.expiresAt > 0,
    };
  }

  /** The user's custom status as V1.CustomStatus, unless none is set or it has expired. */
  async function statusOf(userId: string) {
    const s = await store.get(WORKSPACE_TABLES.statuses, userId);
    return s ? statusView(s) : undefined;
  }

  /** The workspace's users in the order they joined (the store answers in no order). */
  const usersOf = async (workspaceId: string) =>
    (await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', workspaceId)).sort((x, y) =>
      x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0,
    );

  /** A user of this workspace, else undefined (a user of another workspace is not one). */
  async function member(workspaceId: string, id: string | undefined): Promise<WorkspaceUserRecord | undefined> {
    const u = id === undefined ? undefined : await store.get(IDENTITY_TABLES.workspaceUsers, id);
    return u && u.workspaceId === workspaceId ? u : undefined;
  }

  async function view(u: WorkspaceUserRecord) {
    const cs = await statusOf(u.id);
    return {
      id: u.id,
      email: u.email,
      name: u.name,
      workspaceId: u.workspaceId,
      role: 'USER',
      status: 'ACTIVE',
      avatar: { fullPath: '', scaledPath: '' },
      timeZoneId: 'UTC',
      automaticallyTimeZone: true,
      timeFormat: TIME_FORMAT,
      title: u.title ?? '',
      phone: '',
      isPumbleBot: false,
      isAddonBot: !!u.isBot,
      ...(cs ? { customStatus: cs } : {}),
    };
  }

  return {
    usersOf,
    member,
    view,
    statusView,
    statusOf,
    byId: (id: string) => store.get(IDENTITY_TABLES.workspaceUsers, id),
    /** GET /v1/workspaceUsers */
    list: async (a: Actor) => Promise.all((await usersOf(a.workspaceId)).map(view)),
    /** GET /v1/workspaceUsers/{u}: 404 for an unknown user or one of another workspace. */
    async get(a: Actor, id: string) {
      const u = await member(a.workspaceId, id);
      if (!u) throw notFound('Workspace user');
      return view(u);
    },
    /** GET /v1/workspace */
    async workspace(a: Actor) {
      const ws = await store.get(IDENTITY_TABLES.workspaces, a.workspaceId);
      if (!ws) throw notFound('Workspace');
      return {
        id: ws.id,
        name: ws.name,
        avatar: { fullPath: '', scaledPath: '' },
        customStatusDefinitions: [],
        uniqueIdentifier: slug(ws.name),
      };
    },
  };
}

export type WorkspaceUsers = ReturnType<typeof createWorkspaceUsers>;
