/** The platform API's scheduled-message calls (docs/protocol.md §9.2): HTTP ↔ the workspace's scheduled messages. */
import { Router } from 'express';
import { invalidMessage, messageProblem, type AttachmentsBody } from '../../services/workspace/message-view.js';
import type { ScheduledBody, ScheduledMessages } from '../../services/workspace/scheduled.js';
import { jsonBody } from '../middleware.js';
import type { PlatformGate } from './platform-gate.js';
import { mount, route } from './route-table.js';
import { ownWords, schema } from '../../validation/http-input.js';
import { refuseAttachments } from './platform-messages.js';

const S = '/v1/messages/scheduled';

const idPath = schema<{ id: string }>('platform#scheduledPath');
const scheduledBody = schema<ScheduledBody>('platform#scheduledBody');
const NO_SEND_AT = { pointer: '/sendAt', message: 'must be epoch milliseconds' };
/** A body that is not an object has no sendAt; a message's parts are refused as a post's are. */
const refuseScheduled = ownWords(
  (p) => (p.pointer === '' ? NO_SEND_AT : messageProblem(p)),
  (first) => (first === NO_SEND_AT ? 'sendAt must be a time in epoch milliseconds.' : invalidMessage(first)),
);
const app = 'app-token';

/** The platform API's scheduled-message calls (docs/protocol.md §9.2). */
export const SCHEDULED_ROUTES = {
  list: route({
    method: 'get',
    path: S,
    summary: 'The scheduled messages of the app in the workspace',
    query: schema<{ channelId?: string; limit?: string }>('platform#scheduledQuery'),
    scope: 'messages:read',
    answers: { 200: 'The scheduled messages' },
    auth: app,
  }),
  create: route({
    method: 'post',
    path: S,
    summary: 'Schedule a message',
    body: scheduledBody,
    refuse: refuseScheduled,
    scope: 'messages:write',
    answers: { 200: 'The scheduled message' },
    auth: app,
  }),
  get: route({
    method: 'get',
    path: `${S}/:id`,
    summary: 'One scheduled message',
    params: idPath,
    scope: 'messages:read',
    answers: { 200: 'The scheduled message' },
    auth: app,
  }),
  update: route({
    method: 'put',
    path: `${S}/:id`,
    summary: 'Change a scheduled message',
    params: idPath,
    body: scheduledBody,
    refuse: refuseScheduled,
    scope: 'messages:edit',
    answers: { 200: 'The scheduled message' },
    auth: app,
  }),
  attachments: route({
    method: 'put',
    path: `${S}/:id/attachments`,
    summary: "Change a scheduled message's attachments",
    params: idPath,
    body: schema<AttachmentsBody>('platform#attachmentsBody'),
    refuse: refuseAttachments,
    scope: 'attachments:write',
    answers: { 200: 'The scheduled message' },
    auth: app,
  }),
  remove: route({
    method: 'delete',
    path: `${S}/:id`,
    summary: 'Delete a scheduled message',
    params: idPath,
    scope: 'messages:delete',
    answers: { 204: 'Deleted' },
    auth: app,
  }),
};

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
  const R = SCHEDULED_ROUTES;
  mount(r, R.list, [gate, need('messages:read')], async (_req, res, { query }) => {
    res.json(await scheduled.list(p.actor(res), query));
  });
  mount(r, R.create, [gate, need('messages:write'), createLimit, body], async (_req, res, { body: b }) => {
    res.json(await scheduled.create(p.actor(res), b));
  });
  mount(r, R.get, [gate, need('messages:read')], async (_req, res, { params }) => {
    res.json(await scheduled.get(p.actor(res), params.id));
  });
  mount(r, R.update, [gate, need('messages:edit'), body], async (_req, res, { params, body: b }) => {
    res.json(await scheduled.update(p.actor(res), params.id, b));
  });
  mount(r, R.attachments, [gate, need('attachments:write'), body], async (_req, res, { params, body: b }) => {
    res.json(await scheduled.updateAttachments(p.actor(res), params.id, b));
  });
  mount(r, R.remove, [gate, need('messages:delete')], async (_req, res, { params }) => {
    await scheduled.remove(p.actor(res), params.id);
    res.status(204).end();
  });
  return r;
}
