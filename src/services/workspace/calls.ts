/**
 * Permanent calls (docs/protocol.md §9.4): each workspace user has one, made the first time it is
 * asked for and the same ever after, with a link of the daemon's own. appreg carries no audio or
 * video: the link opens a page that names the call. Its code is looked up by a record of its own
 * (written in the same commit), so no index is needed.
 */
import { newId } from '../../crypto.js';
import { notFound } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/types.js';
import { WORKSPACE_TABLES } from '../../model/workspace.js';
import type { Actor, WorkspaceUsers } from './users.js';
import type { CallCodeRecord, PermanentCallRecord } from '../../model/workspace.js';

export function createCalls(deps: {
  store: Store;
  clock: Clock;
  users: Pick<WorkspaceUsers, 'byId'>;
  callUrl: (code: string) => string;
}) {
  const { store, clock, users, callUrl } = deps;
  const view = (c: PermanentCallRecord) => ({
    id: c.callId,
    code: c.code,
    workspaceId: c.workspaceId,
    workspaceUserId: c.id,
    permanentLink: callUrl(c.code),
  });

  /** POST /v1/calls/permanent: the actor's permanent call (V1.PermanentCall), made on first use. */
  async function permanent(a: Actor) {
    const have = await store.get(WORKSPACE_TABLES.calls, a.userId);
    if (have) return view(have);
    const rec: PermanentCallRecord = {
      id: a.userId,
      callId: newId('call', 12),
      code: newId('pcl', 12),
      workspaceId: a.workspaceId,
      createdAt: new Date(clock.now()).toISOString(),
    };
    const code: CallCodeRecord = { id: rec.code, workspaceUserId: a.userId };
    // made at the same moment elsewhere: that one is the call
    const made = await store.transaction(async (tx) => {
      const found = await tx.get(WORKSPACE_TABLES.calls, rec.id);
      if (found) return found;
      tx.put(WORKSPACE_TABLES.calls, rec.id, rec);
      tx.put(WORKSPACE_TABLES.callCodes, code.id, code);
      return rec;
    });
    return view(made);
  }

  /** The call a link's code names, with its user's name and workspace (the link's page); 404 for an unknown code. */
  async function byCode(code: string) {
    const c = await store.get(WORKSPACE_TABLES.callCodes, code);
    const rec = c && (await store.get(WORKSPACE_TABLES.calls, c.workspaceUserId));
    const user = rec && (await users.byId(rec.id));
    if (!rec || !user) throw notFound('Call');
    return { ...view(rec), userName: user.name };
  }

  return { permanent, byCode };
}

export type Calls = ReturnType<typeof createCalls>;
