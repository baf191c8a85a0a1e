/** Deliveries under the management base path: trigger, list, show, replay, signature probe (docs/protocol.md §5). */
import { Router } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import { KINDS, type DeliveriesService, type TriggerInput } from '../../services/deliveries.js';
import type { TriggerSources } from '../../services/trigger-sources.js';
import { jsonBody, rateLimit, type HitCounter } from '../middleware.js';
import { principalOf } from './auth.js';
import { mountAuthed, route } from './route-table.js';
import { schema, type Messages } from '../../validation/http-input.js';

export interface DeliveryRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites'>;
  clock: Clock;
  store: HitCounter;
  deliveries: DeliveriesService;
  /** Makes a test block interaction's message or view real before it is sent. */
  sources: TriggerSources;
}

/** A field of the trigger and what is said when it is wrong, as before the schema said it. */
const bare = (text: string) => ({ text, details: false as const });
const TRIGGER_MESSAGES: Messages = {
  '': bare('The body must be a JSON object with appId and kind.'),
  '/kind is required': 'kind is required.',
  '/kind': bare(`kind must be one of ${KINDS.join(', ')}.`),
  '/appId': bare('appId is required.'),
  '/view': bare('view must be an object.'),
  '/payload': bare('payload must be an object.'),
  '/timeoutMs': bare('timeoutMs must be an integer from 1 to 60000.'),
  '/values': bare('values must be an array of at most 100 strings.'),
  ...Object.fromEntries(
    ['command', 'text', 'channelId', 'threadRootId', 'shortcut', 'messageId', 'onAction', 'actionType', 'value']
      .concat(['query', 'sourceType', 'sourceId', 'viewActionType', 'event'])
      .map((f) => [`/${f}`, bare(`${f} must be a string.`)]),
  ),
};
TRIGGER_MESSAGES['/asUser'] = 'asUser must be a workspace user id.';

const trigger = schema<TriggerInput>('deliveries#triggerBody');
const deliveryPath = schema<{ deliveryId: string }>('deliveries#deliveryPath');
const auth = 'authtoken';

/** The management routes of deliveries (docs/protocol.md §5), relative to MGMT_BASE. */
export const DELIVERY_ROUTES = {
  trigger: route({
    method: 'post',
    path: '/deliveries',
    summary: 'Send a test delivery (an event or an interaction) to an app and wait for its answer',
    body: trigger,
    messages: TRIGGER_MESSAGES,
    answers: { 201: 'The delivery record' },
    auth,
  }),
  probe: route({
    method: 'post',
    path: '/deliveries/probe-signature',
    summary: 'The body and signature headers a delivery would be sent with, for checking a verifier',
    body: trigger,
    messages: TRIGGER_MESSAGES,
    answers: { 200: 'The signed request' },
    auth,
  }),
  list: route({
    method: 'get',
    path: '/deliveries',
    summary: "The caller's deliveries, newest first",
    query: schema<{ limit?: number; appId?: string; failed?: string }>('deliveries#listQuery'),
    messages: { '/limit': bare('limit must be an integer from 1 to 1000.') },
    answers: { 200: 'The deliveries' },
    auth,
  }),
  get: route({
    method: 'get',
    path: '/deliveries/:deliveryId',
    summary: 'One delivery with its attempts',
    params: deliveryPath,
    answers: { 200: 'The delivery' },
    auth,
  }),
  replay: route({
    method: 'post',
    path: '/deliveries/:deliveryId/replay',
    summary: 'Send a delivery again',
    params: deliveryPath,
    answers: { 200: 'The new delivery' },
    auth,
  }),
  cancel: route({
    method: 'post',
    path: '/deliveries/:deliveryId/cancel',
    summary: 'Cancel the retries of an event waiting for its next one',
    params: deliveryPath,
    answers: { 200: 'The delivery' },
    auth,
  }),
};

export function deliveryRoutes(deps: DeliveryRoutesDeps): Router {
  const { deliveries, config } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(config.bodyLimitBytes);
  const writes = rateLimit({
    perMinute: config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `deliveries-writes|${principalOf(res).workspaceUserId}`,
  });
  const D = DELIVERY_ROUTES;

  mountAuthed(r, D.trigger, [writes, body], async (_req, res, p, { body: input }) =>
    res.status(201).json(await deliveries.trigger(p, await deps.sources.prepare(p, input))),
  );
  mountAuthed(r, D.probe, [writes, body], async (_req, res, p, { body: input }) =>
    res.json(await deliveries.probeSignature(p, input)),
  );
  mountAuthed(r, D.list, [], async (_req, res, p, { query }) => {
    const appId = query.appId || undefined;
    res.json(
      await deliveries.list(p, {
        appId,
        failed: query.failed === 'true' || query.failed === '1',
        limit: query.limit ?? 50,
      }),
    );
  });
  mountAuthed(r, D.get, [], async (_req, res, p, { params }) => res.json(await deliveries.get(p, params.deliveryId)));
  mountAuthed(r, D.replay, [writes], async (_req, res, p, { params }) =>
    res.json(await deliveries.replay(p, params.deliveryId)),
  );
  mountAuthed(r, D.cancel, [writes], async (_req, res, p, { params }) =>
    res.json(await deliveries.cancel(p, params.deliveryId)),
  );
  return r;
}
