/**
 * Who belongs where: a workspace user by id, an account's memberships, the caller's membership of a
 * workspace, a workspace's owner. Reads only.
 */
import { forbidden, notFound } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES, type WorkspaceUserRecord } from '../../model/identity.js';
import type { Principal } from './types.js';

export interface MembersDeps {
  store: Store;
}

export function createMembers(deps: MembersDeps) {
  const { store } = deps;

  const userRecord = (id: string) => store.get(IDENTITY_TABLES.workspaceUsers, id);

  /** The account's workspace users, oldest first (the order they were added in). */
  async function membershipsOf(accId: string): Promise<WorkspaceUserRecord[]> {
    const out = await store.find(IDENTITY_TABLES.workspaceUsers, 'accountId', accId);
    return out.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /**
   * The caller's membership of `workspaceId` (their own workspace user there), or 403. An act-as token
   * is a member of its own workspace only, whatever else the account belongs to.
   */
  async function membershipIn(principal: Principal, workspaceId: string): Promise<WorkspaceUserRecord> {
    const me = await userRecord(principal.workspaceUserId);
    const m = !me
      ? undefined
      : me.workspaceId === workspaceId
        ? me
        : principal.actedBy
          ? undefined
          : (await membershipsOf(me.accountId)).find((u) => u.workspaceId === workspaceId);
    if (!m) throw forbidden('You are not a member of that workspace.');
    return m;
  }

  /** The workspace's owner: its first human member (who created it). */
  async function ownerOf(workspaceId: string): Promise<string | undefined> {
    let first: WorkspaceUserRecord | undefined;
    for (const wu of await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', workspaceId)) {
      if (!wu.isBot && (!first || wu.createdAt < first.createdAt)) first = wu;
    }
    return first?.id;
  }

  async function userInfo(workspaceId: string, id: string) {
    const wu = await userRecord(id);
    if (!wu || wu.workspaceId !== workspaceId) throw notFound('Workspace user');
    return { id: wu.id, name: wu.name, email: wu.email };
  }

  return { userRecord, membershipsOf, membershipIn, ownerOf, userInfo };
}

export type Members = ReturnType<typeof createMembers>;
