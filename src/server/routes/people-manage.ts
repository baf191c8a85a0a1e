/**
 * What a person does to the workspace itself (docs/protocol.md §2.8), mounted at the management
 * base path like the person-side routes: archive or delete a channel, list, create and change
 * user groups. The platform API has no call for these; apps hear of them through their events
 * (CHANNEL_ARCHIVED, CHANNEL_DELETED, WORKSPACE_USER_GROUP_CREATED / _UPDATED).
 */
import { Router, type Request } from 'express';
import { invalidRequest } from '../../errors.js';
import { jsonBody, rateLimit } from '../middleware.js';
import { authed, principalOf } from './auth.js';
import { channelIdOf, type PeopleRoutesDeps } from './people.js';

/** What the person-side routes get, but the deliveries. */
type PeopleManageDeps = Omit<PeopleRoutesDeps, 'deliveries'>;

const objectBody = (req: Request): Record<string, unknown> => {
  if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body))
    throw invalidRequest('Send the fields as a JSON object.');
  return req.body as Record<string, unknown>;
};

export function peopleManageRoutes(deps: PeopleManageDeps): Router {
  const { workspace: ws } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(deps.config.bodyLimitBytes);
  // the person-side writes share one budget per user
  const writes = rateLimit({
    perMinute: deps.config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `people-writes|${principalOf(res).workspaceUserId}`,
  });

  r.post(
    '/channels/:channel/archive',
    writes,
    authed(async (req, res, p) => {
      const me = await ws.person(p.workspaceUserId);
      const id = await channelIdOf(ws, p.workspaceId, String(req.params.channel));
      await ws.channels.archive(me, id);
      res.json(await ws.channels.view(await ws.channels.visible(me, id), me));
    }),
  );
  r.delete(
    '/channels/:channel',
    writes,
    authed(async (req, res, p) => {
      await ws.deleteChannel(p.workspaceUserId, await channelIdOf(ws, p.workspaceId, String(req.params.channel)));
      res.status(204).end();
    }),
  );
  r.get(
    '/groups',
    authed(async (_req, res, p) => res.json(await ws.profiles.listGroups(await ws.person(p.workspaceUserId)))),
  );
  r.post(
    '/groups',
    writes,
    body,
    authed(async (req, res, p) =>
      res.status(201).json(await ws.profiles.createGroup(await ws.person(p.workspaceUserId), objectBody(req))),
    ),
  );
  r.patch(
    '/groups/:groupId',
    writes,
    body,
    authed(async (req, res, p) =>
      res.json(
        await ws.profiles.updateGroup(await ws.person(p.workspaceUserId), String(req.params.groupId), objectBody(req)),
      ),
    ),
  );
  return r;
}
