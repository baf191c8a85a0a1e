/**
 * The delivery inspector: the list with filters and the test-trigger form, a
 * delivery's page with Replay and Cancel, and /console/events, the live stream both pages
 * follow: server-sent events fed by the delivery log's change listener (passed in by app.ts),
 * gathered per connection for a moment so a burst of deliveries is a few writes, not thousands.
 */
import { Router, type Request, type Response } from 'express';
import { AppError, invalidRequest, toErrorResponse } from '../../../errors.js';
import type { AppsService } from '../../../services/apps.js';
import type { Clock } from '../../../clock.js';
import {
  headersAsSent,
  KINDS,
  type DeliveriesService,
  type DeliveryRecord,
  type TriggerInput,
} from '../../../services/deliveries.js';
import {
  deliveriesPage,
  deliveryLive,
  deliveryPage,
  deliveryRow,
  STATES,
  type ListFilter,
} from '../../pages/console/deliveries.js';
import { createLiveStreams, cursorOf, sse, versionOf } from './live.js';
import { handled, seeOther, sendConsolePage } from './common.js';
import type { ConsoleBase, ConsoleHandler, Form, Signed } from './common.js';

const SHOWN = 100;
const GATHER_MS = 200;
/**
 * A list's stream resumes with the deliveries changed since its cursor (a moment) less this much:
 * the moment is this daemon's clock and a change is stamped by the daemon that made it (and
 * announced once written), so a few seconds either side are sent again (a row sent twice is
 * replaced by itself).
 */
const RESUME_MARGIN_MS = 5000;
const NOTICES: Record<string, string> = {
  sent: 'Trigger sent.',
  replayed: 'Replayed: the new attempt is at the top.',
  edited: 'Edited replay sent: this is a new delivery, with the body as edited.',
  cancelled: 'Cancelled: no further attempt will be made.',
};

export interface ConsoleDeliveriesDeps {
  base: ConsoleBase;
  clock: Clock;
  apps: Pick<AppsService, 'list'>;
  deliveries: DeliveriesService;
  /** The delivery log's change subscription; returns the unsubscribe. */
  onDeliveryChange(listener: (rec: DeliveryRecord) => void): () => void;
}

const one = (v: unknown): string | undefined => (typeof v === 'string' && v ? v.slice(0, 200) : undefined);

/** The text fields of the trigger form, passed on when filled in. */
const TEXT_FIELDS = ['command', 'text', 'shortcut', 'onAction', 'value', 'event', 'query'] as const;
/** The choices of the form's selects (the service's own: a form from elsewhere gets its message). */
const SOURCE_TYPES = ['VIEW', 'MESSAGE', 'EPHEMERAL_MESSAGE'] as const;
const VIEW_ACTION_TYPES = ['SUBMIT', 'CLOSE'] as const;

/**
 * The trigger form as the service's input: each field filled in as text of at most 200 characters, and
 * a kind, an app, a source and a view action the service takes, else a refusal in its words; the
 * timeout as the number typed (the service says when it is not one it takes).
 */
function triggerOf(form: Form): TriggerInput {
  const kind = KINDS.find((k) => k === one(form.kind));
  if (!kind) throw invalidRequest(`kind must be one of ${KINDS.join(', ')}.`);
  const appId = one(form.appId);
  if (!appId) throw invalidRequest('appId is required.');
  const input: TriggerInput = { appId, kind };
  for (const k of TEXT_FIELDS) {
    const v = one(form[k]);
    if (v) input[k] = v;
  }
  const source = one(form.sourceType);
  if (source) {
    input.sourceType = SOURCE_TYPES.find((x) => x === source);
    if (!input.sourceType) throw invalidRequest('sourceType must be VIEW, MESSAGE or EPHEMERAL_MESSAGE.');
  }
  const viewAction = one(form.viewActionType);
  if (viewAction) {
    input.viewActionType = VIEW_ACTION_TYPES.find((x) => x === viewAction);
    if (!input.viewActionType) throw invalidRequest('viewActionType must be SUBMIT or CLOSE.');
  }
  const timeout = form.timeoutMs;
  if (typeof timeout === 'string' && timeout) input.timeoutMs = Number(timeout);
  return input;
}

/** The routes, and `endStreams` for shutdown (an open live page must not hold the daemon's stop). */
export function consoleDeliveryRoutes(deps: ConsoleDeliveriesDeps): { router: Router; endStreams(): void } {
  const { base, deliveries } = deps;
  const r = Router();
  const parsed = base.form('16kb', 20);
  // an edited body of up to 1 MiB (percent-encoded, up to three times that)
  const edited = base.form('4mb', 5);
  const post = (path: string, fn: ConsoleHandler) => r.post(path, base.signedIn, parsed, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const id = (req: Request) => String(req.params.deliveryId);
  const shell = (s: Signed) => ({ ...s.shell, section: 'deliveries' as const });
  const headersOf = (rec: DeliveryRecord) => (a: DeliveryRecord['attempts'][number]) => headersAsSent(rec, a);

  const filterOf = (q: Record<string, unknown>): ListFilter => ({
    app: one(q.app),
    kind: KINDS.find((k) => k === q.kind),
    state: STATES.find((x) => x === q.state),
  });
  const matches = (f: ListFilter, rec: DeliveryRecord) =>
    (!f.app || rec.appId === f.app) && (!f.kind || rec.kind === f.kind) && (!f.state || rec.state === f.state);

  /** The newest deliveries under the filter, newest first by creation: what the list shows. */
  const shown = (s: Signed, f: ListFilter) =>
    deliveries.list(s.principal, {
      appId: f.app,
      kind: KINDS.find((k) => k === f.kind),
      state: STATES.find((x) => x === f.state),
      limit: SHOWN,
    });
  async function listPage(s: Signed, f: ListFilter, error?: string): Promise<string> {
    const since = String(deps.clock.now()); // before the read: a change made meanwhile is sent again by the stream
    const rows = await shown(s, f);
    const apps = (await deps.apps.list(s.principal)).map((a) => ({ id: a.id, displayName: String(a.displayName) }));
    return deliveriesPage(shell(s), { filter: f, rows, apps, kinds: KINDS, error, since });
  }
  /** What a delivery's page shows changes with these (the stream's cursor for the page). */
  const versionOfDelivery = (rec: DeliveryRecord) =>
    versionOf(JSON.stringify([rec.updatedAt, rec.state, rec.attempts.length, rec.outcome ?? null]));

  get('/console/deliveries', async (req, res, s) => sendConsolePage(res, 200, await listPage(s, filterOf(req.query))));

  post('/console/deliveries', async (_req, res, s, b) => {
    try {
      const rec = await deliveries.trigger(s.principal, triggerOf(b));
      seeOther(res, `/console/deliveries/${encodeURIComponent(rec.id)}?done=sent`);
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      sendConsolePage(
        res,
        toErrorResponse(e).status,
        await listPage(s, { app: one(b.appId), kind: one(b.kind) }, `The trigger was not sent: ${e.message}`),
      );
    }
  });

  get('/console/deliveries/:deliveryId', async (req, res, s) => {
    const rec = await deliveries.get(s.principal, id(req));
    const done = NOTICES[String(req.query.done)];
    // the outcome of the attempt just made, in the notice's words and colour
    const failed = rec.state === 'failed' && done !== NOTICES.cancelled;
    const notice = done && {
      text: failed ? `${done.replace(/\.$/, '')}, and it failed: ${rec.outcome ?? 'no answer'}.` : done,
      bad: failed,
    };
    sendConsolePage(
      res,
      200,
      deliveryPage(shell(s), rec, headersOf(rec), notice || undefined, { since: versionOfDelivery(rec) }),
    );
  });
  /**
   * Replay; with `body`, an edited replay (a new delivery). A body that is not JSON is the page again with the reason.
   */
  r.post(
    '/console/deliveries/:deliveryId/replay',
    base.signedIn,
    edited,
    base.csrf,
    handled(base, async (req, res, s, form) => {
      const text = form.body;
      if (typeof text !== 'string') {
        await deliveries.replay(s.principal, id(req));
        return seeOther(res, `/console/deliveries/${encodeURIComponent(id(req))}?done=replayed`);
      }
      const rec = await onPage(res, s, text, () => deliveries.replayEdited(s.principal, id(req), text));
      if (rec)
        seeOther(
          res,
          `/console/deliveries/${encodeURIComponent(rec.id)}?done=${rec.id === id(req) ? 'replayed' : 'edited'}`,
        );
    }),
  );

  /** The delivery (or the body as edited) as a curl command, signed now: the page again with it. */
  r.post(
    '/console/deliveries/:deliveryId/curl',
    base.signedIn,
    edited,
    base.csrf,
    handled(base, async (req, res, s, form) => {
      const text = form.body;
      const given = typeof text === 'string' ? text : undefined;
      const curl = await onPage(res, s, given, () => deliveries.curlOf(s.principal, id(req), given));
      if (!curl) return;
      const rec = await deliveries.get(s.principal, id(req));
      sendConsolePage(
        res,
        200,
        deliveryPage(shell(s), rec, headersOf(rec), undefined, {
          curl,
          ...(given !== undefined ? { edited: given } : {}),
        }),
      );
    }),
  );

  /**
   * Run `fn`; a refusal (4xx: the body is not JSON, too large, …) is the delivery's page with the reason and the body
   * as edited.
   */
  async function onPage<T>(
    res: Response,
    s: Signed,
    text: string | undefined,
    fn: () => Promise<T>,
  ): Promise<T | undefined> {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      const rec = await deliveries.get(s.principal, id(res.req));
      sendConsolePage(
        res,
        toErrorResponse(e).status,
        deliveryPage(
          shell(s),
          rec,
          headersOf(rec),
          { text: e.message, bad: true },
          text !== undefined ? { edited: text } : {},
        ),
      );
      return undefined;
    }
  }
  post('/console/deliveries/:deliveryId/cancel', async (req, res, s) => {
    await deliveries.cancel(s.principal, id(req));
    seeOther(res, `/console/deliveries/${encodeURIComponent(id(req))}?done=cancelled`);
  });

  const live = createLiveStreams(GATHER_MS, deps.clock);
  get('/console/events', async (req, res, s) => {
    const deliveryId = one(req.query.delivery);
    if (deliveryId) await deliveries.get(s.principal, deliveryId); // 404 for another's delivery
    const f = filterOf(req.query);
    const changed = new Map<string, DeliveryRecord>();
    const sendOne = (rec: DeliveryRecord) =>
      res.write(
        sse('delivery', { id: rec.id, html: deliveryLive(rec, s.shell.csrf, headersOf(rec)) }, versionOfDelivery(rec)),
      );
    const sendRows = (recs: DeliveryRecord[], cursor: string) => {
      for (const rec of recs)
        if (matches(f, rec)) res.write(sse('row', { id: rec.id, html: deliveryRow(rec) }, cursor));
    };
    live.open(
      res,
      {
        subscribe: (wake) =>
          deps.onDeliveryChange((rec) => {
            if (rec.ownerId !== s.principal.workspaceUserId || (deliveryId && rec.id !== deliveryId)) return;
            changed.set(rec.id, rec);
            wake();
          }),
        flush() {
          // a burst (a load test): the page shows at most SHOWN rows, so only the last SHOWN changes are sent
          const recs = [...changed.values()].slice(-SHOWN);
          changed.clear();
          if (deliveryId) recs.forEach(sendOne);
          else sendRows(recs, String(deps.clock.now()));
        },
        async resume(cursor) {
          if (cursor === undefined) return;
          if (deliveryId) {
            const rec = await deliveries.get(s.principal, deliveryId);
            if (versionOfDelivery(rec) !== cursor) sendOne(rec);
            return;
          }
          const from = Number(cursor);
          if (!Number.isFinite(from)) return;
          const now = String(deps.clock.now());
          // oldest first: each new row goes on top, so the newest ends up first
          sendRows(
            (await shown(s, f)).filter((rec) => Date.parse(rec.updatedAt) >= from - RESUME_MARGIN_MS).reverse(),
            now,
          );
        },
      },
      () => base.stillSignedIn(req),
      cursorOf(req),
    );
  });
  return { router: r, endStreams: live.endAll };
}
