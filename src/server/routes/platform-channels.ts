/** The platform API's channel calls (docs/protocol.md §9.3): HTTP ↔ the workspace's channels service. */
import { Router } from 'express';
import type { Channels } from '../../services/workspace/channels.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';

export interface PlatformChannelsDeps {
  platform: PlatformGate;
  channels: Channels;
  bodyLimitBytes: number;
}

export function platformChannelRoutes(deps: PlatformChannelsDeps): Router {
  const { platform: p, channels } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const createLimit = p.limit('channels');
  const r = Router();
  const obj = (b: unknown) => (b && typeof b === 'object' && !Array.isArray(b) ? (b as Record<string, unknown>) : {});

  r.get('/v1/channels', gate, need('channels:list'), async (req, res) => {
    res.json(await channels.list(p.actor(res), req.query.types));
  });
  r.post('/v1/channels', gate, need('channels:write'), createLimit, body, async (req, res) => {
    res.json(await channels.create(p.actor(res), obj(req.body)));
  });
  r.get('/v1/channels/direct', gate, need('channels:read'), async (req, res) => {
    res.json(await channels.direct(p.actor(res), req.query.participantIds ?? ''));
  });
  // the official SDK's listAllDirectChannels (in some of its versions): the caller's direct channels, as
  // GET /v1/channels?types=DIRECT answers them
  r.get('/v1/channels/direct/list', gate, need('channels:list'), async (_req, res) => {
    res.json(await channels.list(p.actor(res), 'DIRECT'));
  });
  r.post('/v1/channels/direct', gate, need('channels:write'), body, async (req, res) => {
    res.json(await channels.direct(p.actor(res), obj(req.body).participantIds ?? []));
  });
  r.get('/v1/channels/:channelId', gate, need('channels:read'), async (req, res) => {
    const a = p.actor(res);
    res.json(await channels.view(await channels.visible(a, String(req.params.channelId)), a));
  });
  r.post('/v1/channels/:channelId/users', gate, need('channels:write'), body, async (req, res) => {
    res.json(await channels.addUsers(p.actor(res), String(req.params.channelId), obj(req.body)));
  });
  r.delete('/v1/channels/:channelId/users/:userId', gate, need('channels:write'), async (req, res) => {
    await channels.removeUser(p.actor(res), String(req.params.channelId), String(req.params.userId));
    res.status(204).end();
  });
  return r;
}
