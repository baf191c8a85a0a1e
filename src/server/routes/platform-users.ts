/** The platform API's workspace, user, group, status and home-view calls (docs/protocol.md §9.4). */
import { Router } from 'express';
import type { Profiles } from '../../services/workspace/profile.js';
import type { WorkspaceUsers } from '../../services/workspace/users.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { must } from '../../must.js';

export function platformUserRoutes(deps: {
  platform: PlatformGate;
  users: WorkspaceUsers;
  profiles: Profiles;
  bodyLimitBytes: number;
}): Router {
  const { platform: p, users, profiles } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const homeViewLimit = p.limit('homeViews', (req) => String(req.params.userId));
  const r = Router();
  r.get('/v1/workspaceUsers', gate, need('users:list'), async (_req, res) => {
    res.json(await users.list(p.actor(res)));
  });
  r.get('/v1/workspaceUsers/groups', gate, need('users:list'), async (_req, res) => {
    res.json(await profiles.listGroups(p.actor(res)));
  });
  r.put('/v1/workspaceUsers/customStatus', gate, need('status:write'), body, async (req, res) => {
    res.json(await profiles.setStatus(p.actor(res), req.body));
  });
  r.get('/v1/workspaceUsers/:userId', gate, need('user:read'), async (req, res) => {
    res.json(await users.get(p.actor(res), String(req.params.userId)));
  });
  r.get('/v1/workspace', gate, need('workspace:read'), async (_req, res) => {
    res.json(await users.workspace(p.actor(res)));
  });
  r.post(
    '/v1/app/homeView/workspaceUsers/:userId',
    gate,
    need('channels:write'),
    homeViewLimit,
    body,
    async (req, res) => {
      const a = p.actor(res);
      res.json(await profiles.publishHomeView({ ...a, appId: must(a.appId) }, String(req.params.userId), req.body));
    },
  );
  return r;
}
