/** The platform API's workspace and user calls (docs/protocol.md §9.4). */
import { Router } from 'express';
import type { WorkspaceUsers } from '../../services/workspace/users.js';
import type { PlatformGate } from './platform-gate.js';

export function platformUserRoutes(deps: { platform: PlatformGate; users: WorkspaceUsers }): Router {
  const { platform: p, users } = deps;
  const { gate, need } = p;
  const r = Router();
  r.get('/v1/workspaceUsers', gate, need('users:list'), (_req, res) => {
    res.json(users.list(p.actor(res)));
  });
  r.get('/v1/workspaceUsers/:userId', gate, need('user:read'), (req, res) => {
    res.json(users.get(p.actor(res), String(req.params.userId)));
  });
  r.get('/v1/workspace', gate, need('workspace:read'), (_req, res) => {
    res.json(users.workspace(p.actor(res)));
  });
  return r;
}
