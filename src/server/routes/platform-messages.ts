/** The platform API's message calls (docs/protocol.md §9.2): HTTP ↔ the workspace's messages service. */
import { Router } from 'express';
import type { ListQuery, Messages } from '../../services/workspace/messages.js';
import {
  BAD_REACTION_CODE,
  badReactionCode,
  type ReactionBody,
  type Reactions,
} from '../../services/workspace/reactions.js';
import {
  invalidMessage,
  messageProblem,
  type AttachmentsBody,
  type MessageBody,
} from '../../services/workspace/message-view.js';
import { invalidSearch, searchProblem, type MessageSearch, type SearchBody } from '../../services/workspace/search.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { fieldsOf, mount, route, type NotAnObject } from './route-table.js';
import { ownWords, schema } from '../../validation/http-input.js';

export interface PlatformMessagesDeps {
  platform: PlatformGate;
  messages: Messages;
  reactions: Reactions;
  search: MessageSearch;
  bodyLimitBytes: number;
}

const M = '/v1/channels/:channelId/messages';

type MessagePath = { channelId: string; messageId: string };
const channelPath = schema<{ channelId: string }>('platform#channelPath');
const messagePath = schema<MessagePath>('platform#messagePath');
const messageIdPath = schema<{ messageId: string }>('platform#messageIdPath');
const messageBody = schema<MessageBody>('platform#messageBody');
const listQuery = schema<ListQuery>('platform#listQuery');
const reactionBody = schema<ReactionBody>('platform#reactionBody');
/** The 400s the messages service said before the schema checked these (docs/protocol.md §9.2). */
const refuseMessage = ownWords(messageProblem, invalidMessage);
/** A message's (or a scheduled message's) new attachments: anything but a list of objects, in one wording. */
export const refuseAttachments = ownWords(
  (p) =>
    p.pointer === '' || p.message === 'is required' || p.pointer.startsWith('/attachments/')
      ? { pointer: '/attachments', message: 'must be an array of objects' }
      : undefined,
  () => 'attachments must be an array of attachments.',
);
const refuseReaction = ownWords(
  (p) => (p.pointer === '' || p.message === 'is required' ? badReactionCode : undefined),
  () => BAD_REACTION_CODE,
);
const app = 'app-token';

/** The platform API's message calls (docs/protocol.md §9.2). */
export const MESSAGE_ROUTES = {
  list: route({
    method: 'get',
    path: M,
    summary: "A channel's messages, newest first, by pages",
    params: channelPath,
    query: listQuery,
    scope: 'channels:read',
    answers: { 200: 'The messages' },
    auth: app,
  }),
  post: route({
    method: 'post',
    path: M,
    summary: 'Post a message (an ephemeral one with sendToUsers)',
    params: channelPath,
    body: messageBody,
    refuse: refuseMessage,
    scope: 'messages:write',
    answers: { 200: 'The message' },
    auth: app,
  }),
  get: route({
    method: 'get',
    path: `${M}/:messageId`,
    summary: 'One message',
    params: messagePath,
    scope: 'messages:read',
    answers: { 200: 'The message' },
    auth: app,
  }),
  reply: route({
    method: 'post',
    path: `${M}/:messageId`,
    summary: 'Reply in the thread of a message',
    params: messagePath,
    body: messageBody,
    refuse: refuseMessage,
    scope: 'messages:write',
    answers: { 200: 'The reply' },
    auth: app,
  }),
  edit: route({
    method: 'put',
    path: `${M}/:messageId`,
    summary: 'Edit a message the app posted',
    params: messagePath,
    body: messageBody,
    refuse: refuseMessage,
    scope: 'messages:edit',
    answers: { 200: 'The message' },
    auth: app,
  }),
  remove: route({
    method: 'delete',
    path: `${M}/:messageId`,
    summary: 'Delete a message',
    params: messagePath,
    scope: 'messages:delete',
    answers: { 204: 'Deleted' },
    auth: app,
  }),
  replies: route({
    method: 'get',
    path: `${M}/:messageId/replies`,
    summary: "A thread's replies, by pages",
    params: messagePath,
    query: listQuery,
    scope: 'channels:read',
    answers: { 200: 'The replies' },
    auth: app,
  }),
  removeEphemeral: route({
    method: 'delete',
    path: `${M}/:messageId/ephemeral`,
    summary: 'Delete the copies of an ephemeral message',
    params: messagePath,
    body: schema<{ deleteForUsers: string[] }>('platform#ephemeralBody'),
    refuse: ownWords(
      (p) =>
        p.pointer === '' || p.message === 'is required' || p.message === 'must not be empty'
          ? { pointer: '/deleteForUsers', message: 'must be a non-empty list of ids' }
          : undefined,
      () => 'deleteForUsers must list at least one workspace user id.',
    ),
    scope: 'messages:delete',
    answers: { 204: 'Deleted' },
    auth: app,
  }),
  attachments: route({
    method: 'put',
    path: `${M}/:messageId/attachments`,
    summary: "Change a message's attachments",
    params: messagePath,
    body: schema<AttachmentsBody>('platform#attachmentsBody'),
    refuse: refuseAttachments,
    scope: 'attachments:write',
    answers: { 200: 'The message' },
    auth: app,
  }),
  search: route({
    method: 'post',
    path: '/v1/messages/search',
    summary: 'Search the messages of the channels the token can see (also needs channels:list)',
    body: schema<SearchBody | NotAnObject>('platform#searchBody'),
    refuse: ownWords(searchProblem, invalidSearch),
    scope: 'messages:read',
    answers: { 200: 'The messages found' },
    auth: app,
  }),
  react: route({
    method: 'post',
    path: '/v1/messages/:messageId/reactions',
    summary: 'React to a message',
    params: messageIdPath,
    body: reactionBody,
    refuse: refuseReaction,
    scope: 'reaction:write',
    answers: { 204: 'Reacted' },
    auth: app,
  }),
  unreact: route({
    method: 'delete',
    path: '/v1/messages/:messageId/reactions',
    summary: 'Take a reaction back',
    params: messageIdPath,
    body: reactionBody,
    refuse: refuseReaction,
    scope: 'reaction:write',
    answers: { 204: 'Taken back' },
    auth: app,
  }),
};

export function platformMessageRoutes(deps: PlatformMessagesDeps): Router {
  const { platform: p, messages, reactions, search } = deps;
  const { gate, need } = p;
  const body = jsonBody(deps.bodyLimitBytes);
  const postLimit = p.limit('messages');
  const replyLimit = p.limit('replies');
  const reactionLimit = p.limit('reactions');
  const r = Router();
  const R = MESSAGE_ROUTES;

  mount(r, R.list, [gate, need('channels:read')], async (_req, res, { params, query }) => {
    res.json(await messages.list(p.actor(res), params.channelId, query));
  });
  mount(r, R.post, [gate, need('messages:write'), postLimit, body], async (_req, res, { params, body: b }) => {
    res.json(await messages.post(p.actor(res), params.channelId, b));
  });
  mount(r, R.get, [gate, need('messages:read')], async (_req, res, { params }) => {
    res.json(await messages.get(p.actor(res), params.channelId, params.messageId));
  });
  mount(r, R.reply, [gate, need('messages:write'), replyLimit, body], async (_req, res, { params, body: b }) => {
    res.json(await messages.reply(p.actor(res), params.channelId, params.messageId, b));
  });
  mount(r, R.edit, [gate, need('messages:edit'), body], async (_req, res, { params, body: b }) => {
    res.json(await messages.edit(p.actor(res), params.channelId, params.messageId, b));
  });
  mount(r, R.remove, [gate, need('messages:delete')], async (_req, res, { params }) => {
    await messages.remove(p.actor(res), params.channelId, params.messageId);
    res.status(204).end();
  });
  mount(r, R.replies, [gate, need('channels:read')], async (_req, res, { params, query }) => {
    res.json(await messages.replies(p.actor(res), params.channelId, params.messageId, query));
  });
  mount(r, R.removeEphemeral, [gate, need('messages:delete'), body], async (_req, res, { params, body: b }) => {
    await messages.removeEphemeral(p.actor(res), params.channelId, params.messageId, b);
    res.status(204).end();
  });
  mount(r, R.attachments, [gate, need('attachments:write'), body], async (_req, res, { params, body: b }) => {
    res.json(await messages.editAttachments(p.actor(res), params.channelId, params.messageId, b));
  });
  mount(r, R.search, [gate, need('messages:read'), need('channels:list'), body], async (_req, res, { body: b }) => {
    res.json(await search.search(p.actor(res), fieldsOf(b)));
  });
  mount(r, R.react, [gate, need('reaction:write'), reactionLimit, body], async (_req, res, { params, body: b }) => {
    await reactions.react(p.actor(res), params.messageId, b);
    res.status(204).end();
  });
  mount(r, R.unreact, [gate, need('reaction:write'), body], async (_req, res, { params, body: b }) => {
    await reactions.unreact(p.actor(res), params.messageId, b);
    res.status(204).end();
  });
  return r;
}
