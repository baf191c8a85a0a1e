/** The platform API's message calls (docs/protocol.md §9.2): HTTP ↔ the workspace's messages service. */
import { Router } from 'express';
import type { Messages } from '../../services/workspace/messages.js';
import type { Reactions } from '../../services/workspace/reactions.js';
import type { MessageSearch } from '../../services/workspace/search.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';

export interface PlatformMessagesDeps {
  platform: PlatformGate;
  messages: Messages;
  reactions: Reactions;
  search: MessageSearch;
  bodyLimitBytes: number;
}

const M = '/v1/channels/:channelId/messages';

export function platformMessageRoutes(deps: PlatformMessagesDeps): Router {
  const { platform: p, messages, reactions, search } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const postLimit = p.limit('messages');
  const replyLimit = p.limit('replies');
  const reactionLimit = p.limit('reactions');
  const r = Router();

  r.get(M, gate, need('channels:read'), async (req, res) => {
    res.json(await messages.list(p.actor(res), String(req.params.channelId), req.query));
  });
  r.post(M, gate, need('messages:write'), postLimit, body, async (req, res) => {
    res.json(await messages.post(p.actor(res), String(req.params.channelId), req.body));
  });
  r.get(`${M}/:messageId`, gate, need('messages:read'), async (req, res) => {
    res.json(await messages.get(p.actor(res), String(req.params.channelId), String(req.params.messageId)));
  });
  r.post(`${M}/:messageId`, gate, need('messages:write'), replyLimit, body, async (req, res) => {
    res.json(await messages.reply(p.actor(res), String(req.params.channelId), String(req.params.messageId), req.body));
  });
  r.put(`${M}/:messageId`, gate, need('messages:edit'), body, async (req, res) => {
    res.json(await messages.edit(p.actor(res), String(req.params.channelId), String(req.params.messageId), req.body));
  });
  r.delete(`${M}/:messageId`, gate, need('messages:delete'), async (req, res) => {
    await messages.remove(p.actor(res), String(req.params.channelId), String(req.params.messageId));
    res.status(204).end();
  });
  r.get(`${M}/:messageId/replies`, gate, need('channels:read'), async (req, res) => {
    res.json(
      await messages.replies(p.actor(res), String(req.params.channelId), String(req.params.messageId), req.query),
    );
  });
  r.delete(`${M}/:messageId/ephemeral`, gate, need('messages:delete'), body, async (req, res) => {
    await messages.removeEphemeral(p.actor(res), String(req.params.channelId), String(req.params.messageId), req.body);
    res.status(204).end();
  });
  r.put(`${M}/:messageId/attachments`, gate, need('attachments:write'), body, async (req, res) => {
    res.json(
      await messages.editAttachments(
        p.actor(res),
        String(req.params.channelId),
        String(req.params.messageId),
        req.body,
      ),
    );
  });
  r.post('/v1/messages/search', gate, need('messages:read'), need('channels:list'), body, async (req, res) => {
    res.json(await search.search(p.actor(res), req.body));
  });
  r.post('/v1/messages/:messageId/reactions', gate, need('reaction:write'), reactionLimit, body, async (req, res) => {
    await reactions.react(p.actor(res), String(req.params.messageId), req.body);
    res.status(204).end();
  });
  r.delete('/v1/messages/:messageId/reactions', gate, need('reaction:write'), body, async (req, res) => {
    await reactions.unreact(p.actor(res), String(req.params.messageId), req.body);
    res.status(204).end();
  });
  return r;
}
