/** Workspaces: a new one (its creator its first member, one commit), one's name, the caller's list. */
import { newId, PREFIX } from '../../crypto.js';
import { invalidRequest, notFound, unauthenticated } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES, type WorkspaceRecord, type WorkspaceUserRecord } from '../../model/identity.js';
import type { Members } from './members.js';
import type { Principal } from './types.js';
import type { Json } from '../../model/json.js';

export interface WorkspacesDeps {
  store: Store;
  clock: Clock;
  members: Pick<Members, 'userRecord' | 'membershipsOf'>;
}

export function createWorkspaces(deps: WorkspacesDeps) {
  const { store, clock, members } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

  /** A workspace record with a checked name, not yet written (a caller commits it with its first member). */
  function newWorkspace(name: Json | undefined): WorkspaceRecord {
    if (typeof name !== 'string' || !name.trim() || name.length > 80)
      throw invalidRequest('A workspace name of 1 to 80 characters is required.', [
        { pointer: '/name', message: 'must be 1 to 80 characters' },
      ]);
    return { id: newId(PREFIX.workspace), name: name.trim(), createdAt: nowIso() };
  }

  /** A new workspace whose first member is the caller, with the same login: one commit. */
  async function createWorkspaceFor(
    principal: Principal,
    name: Json | undefined,
  ): Promise<WorkspaceRecord & { workspaceUserId: string }> {
    const me = await members.userRecord(principal.workspaceUserId);
    if (!me) throw unauthenticated('The Authtoken has been revoked.');
    const ws = newWorkspace(name);
    const user: WorkspaceUserRecord = {
      id: newId(PREFIX.workspaceUser),
      workspaceId: ws.id,
      accountId: me.accountId,
      email: me.email,
      name: me.name,
      createdAt: nowIso(),
    };
    await store.transaction(async (tx) => {
      tx.put(IDENTITY_TABLES.workspaces, ws.id, ws);
      tx.put(IDENTITY_TABLES.workspaceUsers, user.id, user);
    });
    return { ...ws, workspaceUserId: user.id };
  }

  async function workspaceInfo(id: string) {
    const ws = await store.get(IDENTITY_TABLES.workspaces, id);
    if (!ws) throw notFound('Workspace');
    return { id: ws.id, name: ws.name };
  }

  /** The caller's workspaces: every one of the account's, or an act-as token's own alone. */
  async function listWorkspaces(principal: Principal) {
    const wu = await members.userRecord(principal.workspaceUserId);
    if (!wu) return [];
    return Promise.all(
      (principal.actedBy ? [wu] : await members.membershipsOf(wu.accountId)).map(async (m) => ({
        ...(await workspaceInfo(m.workspaceId)),
        workspaceUserId: m.id,
      })),
    );
  }

  return { newWorkspace, createWorkspaceFor, workspaceInfo, listWorkspaces };
}

export type Workspaces = ReturnType<typeof createWorkspaces>;
