/**
 * Workspace activity → events (docs/protocol.md §5.3): one copy per app that subscribes to the
 * event, holds its scope, and has an authorized user who can see what happened; handed to the
 * one delivery worker, which makes it durable before the first attempt and retries it.
 */
import { eventPayload } from '../../delivery/payloads.js';
import type { DeliveryWorker } from '../../delivery/worker.js';
import type { Logger } from '../../logger.js';
import type { Store } from '../../store/types.js';
import { EVENT_SCOPES } from '../../validation/manifest.js';
import type { AppsService } from '../apps.js';
import type { Grants } from '../oauth/grants.js';
import { OT, type InstallationRecord } from '../oauth/records.js';

export type WorkspaceEventType =
  | 'NEW_MESSAGE'
  | 'UPDATED_MESSAGE'
  | 'REACTION_ADDED'
  | 'CHANNEL_CREATED'
  | 'CHANNEL_ARCHIVED'
  | 'CHANNEL_DELETED'
  | 'WORKSPACE_USER_JOINED'
  | 'WORKSPACE_USER_UPDATED'
  | 'WORKSPACE_USER_GROUP_CREATED'
  | 'WORKSPACE_USER_GROUP_UPDATED';

export interface WorkspaceEventsDeps {
  store: Store;
  logger: Logger;
  apps: AppsService;
  grants: Grants;
  worker: Pick<DeliveryWorker, 'enqueueEvent'>;
}

/** The order records were made in (the store answers in no order). */
const byCreation = (x: { createdAt: string; id: string }, y: { createdAt: string; id: string }) => (x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0);

export function createWorkspaceEvents(deps: WorkspaceEventsDeps) {
  const { store, logger, apps, grants, worker } = deps;

  /**
   * Send `eventType` with `body` to every app installed in the workspace that qualifies;
   * `canSee(userId)` says whether a workspace user can see the channel (or user) concerned.
   * Returns the ids of the apps it went to. The attempts run in the background.
   */
  async function emit(eventType: WorkspaceEventType, workspaceId: string, canSee: (userId: string) => boolean | Promise<boolean>, body: Record<string, unknown>): Promise<string[]> {
    const need = EVENT_SCOPES[eventType] ?? null;
    const sent: string[] = [];
    const installed = (await store.find<InstallationRecord>(OT.installations, 'workspaceId', workspaceId)).sort(byCreation);
    for (const inst of installed) {
      const app = await apps.byId(inst.appId);
      if (!app || !app.manifest.eventSubscriptions?.events?.includes(eventType)) continue;
      const botHas = !need || (!!inst.botTokenId && inst.botScopes.includes(need));
      const users: string[] = [];
      for (const u of await grants.authorizedUsers(app.id, workspaceId)) {
        if ((await canSee(u)) && (botHas || !!(await grants.authorizationOf(app.id, u))?.userScopes.includes(need!))) users.push(u);
      }
      if (users.length === 0) continue;
      sent.push(app.id);
      worker
        .enqueueEvent(app, workspaceId, users[0]!, eventType, eventPayload(eventType, workspaceId, users, body))
        .catch((e) => logger.error('workspace event delivery failed', { appId: app.id, eventType, error: (e as Error).message }));
    }
    return sent;
  }

  return { emit };
}

export type WorkspaceEvents = ReturnType<typeof createWorkspaceEvents>;
