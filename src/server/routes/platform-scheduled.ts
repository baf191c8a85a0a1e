/** The platform API's scheduled-message calls (docs/protocol.md §9.2): HTTP ↔ the workspace's scheduled messages. */
import { Router } from 'express';
import type { ScheduledMessages } from '../../services/workspace/scheduled.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';

const S = '/v1/messages/scheduled';

export function platformScheduledRoutes(deps: {
  platform: PlatformGate;
  scheduled: ScheduledMessages;
  bodyLimitBytes: number;
}): Router {
  const { platform: p, scheduled } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const createLimit = p.limit('scheduled');
  const r = Router();
  r.get(S, gate, need('messages:read'), async (req, res) => {
    res.json(await scheduled.list(p.actor(res), req.query));
  });
  r.post(S, gate, need('messages:write'), createLimit, body, async (req, res) => {
    res.json(await scheduled.create(p.actor(res), req.body));
  });
  r.get(`${S}/:id`, gate, need('messages:read'), async (req, res) => {
    res.json(await scheduled.get(p.actor(res), String(req.params.id)));
  });
  r.put(`${S}/:id`, gate, need('messages:edit'), body, async (req, res) => {
    res.json(await scheduled.update(p.actor(res), String(req.params.id), req.body));
  });
  r.put(`${S}/:id/attachments`, gate, need('attachments:write'), body, async (req, res) => {
    res.json(await scheduled.updateAttachments(p.actor(res), String(req.params.id), req.body));
  });
  r.delete(`${S}/:id`, gate, need('messages:delete'), async (req, res) => {
    await scheduled.remove(p.actor(res), String(req.params.id));
    res.status(204).end();
  });
  return r;
}
