/**
 * Deliveries as the management API offers them (docs/protocol.md §2, §5): send a test trigger
 * of any kind, list and show deliveries, replay one, and probe whether an app checks signatures.
 * Interactive calls are attempted once within their budget; events go to the worker.
 */
import { isDeepStrictEqual } from 'node:util';
import { newId } from '../crypto.js';
import { deliveryNotRetrying, invalidRequest, notFound, payloadNotKept, payloadTooLarge } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import type { HttpTransport } from '../delivery/http-transport.js';
import { applyEntry, type ListFilter, type LogEntry } from '../delivery/log.js';
import type { AttemptEntry, DeliveryRecord } from '../model/delivery.js';
import { buildPayload, KINDS, type TriggerFields } from '../delivery/payloads.js';
import { withFieldEncoded } from '../delivery/encoded-fields.js';
import { tooDeep } from '../json-depth.js';
import {
  DELIVERY_ID_HEADER,
  RETRY_NUM_HEADER,
  SIGNATURE_HEADER,
  signedHeaders,
  TIMESTAMP_HEADER,
} from '../delivery/sign.js';
import type { AttemptResult } from '../delivery/types.js';
import type { DeliveryKind } from '../model/delivery.js';
import type { DeliveryWorker } from '../delivery/worker.js';
import type { AppsService } from './apps.js';
import type { Principal } from './identity.js';
import type { AppRecord } from '../model/identity.js';
import type { Grants } from './oauth/grants.js';
import { must } from '../must.js';
import { isRecord, messageOf } from '../unknown-values.js';

export type { AttemptEntry, DeliveryRecord, ListFilter };
export { KINDS };

/**
 * The headers an HTTP attempt was sent with (the console's delivery page), in the order the
 * transport sends them. The signature headers are those recorded on the attempt; an attempt
 * logged before they were recorded shows them as not kept.
 */
export function headersAsSent(rec: DeliveryRecord, a: AttemptEntry): Array<[string, string]> {
  const notKept = '(not kept for this attempt)';
  const out: Array<[string, string]> = [
    ['content-type', 'application/json'],
    ['user-agent', 'appreg'],
    [TIMESTAMP_HEADER, a.signed?.timestamp ?? notKept],
    [SIGNATURE_HEADER, a.signed?.signature ?? notKept],
    [DELIVERY_ID_HEADER, rec.id],
  ];
  if (a.retryNum > 0) out.push([RETRY_NUM_HEADER, String(a.retryNum)]);
  return out;
}

/** The largest edited body accepted (the console's Edit and replay, Copy as curl). */
const MAX_EDITED_BYTES = 1024 * 1024;

/** A curl command's parts: the target, the headers (signed now) and the exact body. */
export interface CurlParts {
  url: string;
  headers: Array<[string, string]>;
  body: string;
}

export interface TriggerInput extends TriggerFields {
  appId: string;
  kind: DeliveryKind;
  /** Overrides the acknowledgement budget (ms) for this trigger. */
  timeoutMs?: number | null;
  /** The person the trigger is by (checked by TriggerSources.prepare); the caller when absent. */
  asUser?: string;
}

export interface DeliveriesDeps {
  config: Pick<Config, 'deliveryBudgetMs' | 'deliveryEventTimeoutMs'>;
  clock: Clock;
  apps: AppsService;
  grants: Grants;
  dispatcher: Dispatcher;
  worker: DeliveryWorker;
  http: HttpTransport;
}

export function createDeliveriesService(deps: DeliveriesDeps) {
  const { config, clock, apps, grants, dispatcher, worker, http } = deps;
  const { log } = dispatcher;

  async function ownedApp(p: Principal, appId: string | undefined): Promise<AppRecord> {
    if (!appId) throw invalidRequest('appId is required.');
    return apps.owned(p, appId);
  }

  function budgetOf(timeoutMs: number | null | undefined): number {
    if (timeoutMs === undefined || timeoutMs === null) return config.deliveryBudgetMs;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 60_000)
      throw invalidRequest('timeoutMs must be an integer from 1 to 60000.');
    return timeoutMs;
  }

  async function trigger(p: Principal, input: TriggerInput): Promise<DeliveryRecord> {
    if (!KINDS.includes(input.kind)) throw invalidRequest(`kind must be one of ${KINDS.join(', ')}.`);
    const app = await ownedApp(p, input.appId);
    const budget = budgetOf(input.timeoutMs);
    let workspaceUserIds: string[] | undefined;
    if (input.kind === 'event') {
      // the users concerned: those who authorized the app here (else the caller)
      const authorized = await grants.authorizedUsers(app.id, p.workspaceId);
      workspaceUserIds = authorized.length ? authorized : [p.workspaceUserId];
    }
    const who = { workspaceId: p.workspaceId, userId: input.asUser ?? p.workspaceUserId, workspaceUserIds };
    const built = buildPayload(input.kind, app, who, input, clock.now());
    if (!built.interactive) {
      if (!app.manifest.socketMode && !built.url)
        throw invalidRequest('The app has no eventSubscriptions.url to send events to.');
      // the first attempt's timeout is the caller's (deliver-test --timeout-ms); retries use the configured one
      const timeoutMs = input.timeoutMs === undefined || input.timeoutMs === null ? undefined : budget;
      const rec = await worker.enqueueEvent(
        app,
        p.workspaceId,
        p.workspaceUserId,
        String(built.payload.eventType),
        built.payload,
        { timeoutMs },
      );
      if (!rec) throw notFound(`App ${app.id}`);
      return rec;
    }
    // Logged once settled (at most the budget later): one log entry per interactive call.
    const out = dispatcher.outgoing(
      app,
      input.kind,
      { workspaceId: p.workspaceId, userId: who.userId },
      built.url,
      built.payload,
    );
    return dispatcher.settleInteractive(
      out,
      app,
      await dispatcher.track(dispatcher.attempt(out, app, { interactive: true, budgetMs: budget, retryNum: 0 })),
    );
  }

  async function get(p: Principal, id: string): Promise<DeliveryRecord> {
    const rec = await log.get(id);
    if (!rec || rec.ownerId !== p.workspaceUserId) throw notFound(`Delivery ${id}`);
    return rec;
  }

  async function replay(p: Principal, id: string): Promise<DeliveryRecord> {
    const rec = await get(p, id);
    const app = await apps.owned(p, rec.appId);
    if (!rec.payload)
      throw payloadNotKept(
        'This trigger succeeded before the daemon restarted and its payload is not kept on disk; send it again with deliver-test.',
      );
    if (rec.kind === 'event') return worker.replay(rec, app);
    const out = dispatcher.resend(rec);
    return dispatcher.settleInteractive(
      out,
      app,
      await dispatcher.track(
        dispatcher.attempt(out, app, {
          interactive: true,
          budgetMs: config.deliveryBudgetMs,
          retryNum: rec.attempts.length,
          replay: true,
        }),
      ),
      rec,
    );
  }

  /**
   * A body edited in the console, as it will be sent: a JSON object (an event's `body` or an
   * interaction's `payload` given as an object is encoded again, as the platform sends it).
   */
  function editedBody(rec: DeliveryRecord, text: string): Record<string, unknown> {
    if (Buffer.byteLength(text) > MAX_EDITED_BYTES)
      throw payloadTooLarge(`The edited body is larger than ${MAX_EDITED_BYTES} bytes.`);
    if (tooDeep(text)) throw invalidRequest('The edited body nests too deeply.');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw invalidRequest(`The edited body is not valid JSON: ${messageOf(e)}`);
    }
    if (!isRecord(parsed)) throw invalidRequest('The edited body must be a JSON object.');
    return withFieldEncoded(rec.kind, parsed);
  }

  /**
   * Replay with an edited body: a new delivery (`editedFrom` names this one) to the same target,
   * one attempt marked as a replay, signed afresh over the edited bytes. An event is not retried
   * on a schedule. A body that is the one sent is an ordinary replay (a new attempt here).
   */
  async function replayEdited(p: Principal, id: string, text: string): Promise<DeliveryRecord> {
    const rec = await get(p, id);
    const app = await apps.owned(p, rec.appId);
    const payload = editedBody(rec, text);
    // (compared as JSON, not as text: on PostgreSQL a stored body's keys come back in another order)
    if (rec.payload && isDeepStrictEqual(payload, rec.payload)) return replay(p, id);
    const copy = dispatcher.outgoing(
      app,
      rec.kind,
      { workspaceId: rec.workspaceId, userId: rec.userId },
      rec.url,
      payload,
      {
        editedFrom: rec.id,
      },
    );
    if (rec.kind !== 'event')
      return dispatcher.settleInteractive(
        copy,
        app,
        await dispatcher.track(
          dispatcher.attempt(copy, app, {
            interactive: true,
            budgetMs: config.deliveryBudgetMs,
            retryNum: 0,
            replay: true,
          }),
        ),
      );
    const { result: r, entry } = await dispatcher.track(
      dispatcher.attempt(copy, app, {
        interactive: false,
        budgetMs: config.deliveryEventTimeoutMs,
        retryNum: 0,
        replay: true,
      }),
    );
    const logged: LogEntry = {
      id: copy.head.id,
      begun: copy,
      attempt: entry,
      state: {
        at: dispatcher.iso(),
        state: r.outcome === 'acked' || r.outcome === 'response' ? 'delivered' : 'failed',
      },
    };
    log.append(logged);
    return must(applyEntry(undefined, logged));
  }

  /**
   * The parts of a curl command that sends this delivery's body (or `text`, an edited one) to its
   * target, signed now with the app's signing secret: the signature, never the secret.
   */
  async function curlOf(p: Principal, id: string, text?: string): Promise<CurlParts> {
    const rec = await get(p, id);
    const app = await apps.owned(p, rec.appId);
    if (rec.transport !== 'http' || !rec.url)
      throw invalidRequest('This delivery went to a socket-mode connection: there is no URL to send it to with curl.');
    const payload = text === undefined ? rec.payload : editedBody(rec, text);
    if (!payload)
      throw payloadNotKept(
        'This trigger succeeded before the daemon restarted and its payload is not kept on disk; edit a body to copy instead.',
      );
    const body = JSON.stringify(payload);
    const signed = signedHeaders((await apps.secretsOf(app)).signingSecret, body, clock.now());
    return {
      url: rec.url,
      headers: [
        ['content-type', 'application/json'],
        [TIMESTAMP_HEADER, must(signed[TIMESTAMP_HEADER])],
        [SIGNATURE_HEADER, must(signed[SIGNATURE_HEADER])],
      ],
      body,
    };
  }

  /** End a retrying event: no further attempt. */
  async function cancel(p: Principal, id: string): Promise<DeliveryRecord> {
    const rec = await get(p, id);
    const out = rec.kind === 'event' ? await worker.cancel(id, 'cancelled by its owner') : undefined;
    if (!out)
      throw deliveryNotRetrying(
        `Delivery ${id} is ${rec.state}; only an event waiting for its next retry can be cancelled.`,
      );
    return out;
  }

  /** Send the trigger once with a wrong signature and once unsigned; a safe app refuses both. */
  async function probeSignature(p: Principal, input: TriggerInput) {
    const app = await ownedApp(p, input.appId);
    if (app.manifest.socketMode)
      throw invalidRequest('Socket-mode frames are not signed; the signature probe applies to HTTP apps only.');
    const built = buildPayload(
      input.kind,
      app,
      { workspaceId: p.workspaceId, userId: p.workspaceUserId },
      input,
      clock.now(),
    );
    if (!built.url) throw invalidRequest('The app has no URL for this kind of call.');
    const budget = budgetOf(input.timeoutMs);
    const body = JSON.stringify(built.payload);
    const id = newId('dlv');
    const wrong = signedHeaders(newId('wrong', 32), body, clock.now());
    const [wrongSignature, unsigned] = await Promise.all([
      http.post(built.url, body, { ...wrong, [DELIVERY_ID_HEADER]: id }, budget),
      http.post(built.url, body, { [DELIVERY_ID_HEADER]: id }, budget),
    ]);
    const refused = (r: AttemptResult) => r.status !== undefined && r.status >= 400 && r.status < 500;
    return {
      wrongSignature: { ...wrongSignature, refused: refused(wrongSignature) },
      unsigned: { ...unsigned, refused: refused(unsigned) },
      refusedBoth: refused(wrongSignature) && refused(unsigned),
    };
  }

  /**
   * A person types `/command text` in a channel (appreg say): the app installed in the
   * caller's workspace (or, for development, owned by the caller) that has the command gets
   * SLASH_COMMAND within the budget; the record says what the person sees. When several apps
   * have the command, `appId` says whose it is (what a client's command list lets the person
   * pick); without it, one of them gets it.
   */
  async function invokeSlashCommand(
    p: Principal,
    input: { command: string; text: string; channelId: string; threadRootId?: string; appId?: string },
  ): Promise<DeliveryRecord> {
    const app = (await appsFor(p)).find(
      (a) =>
        (input.appId === undefined || a.id === input.appId) &&
        (a.manifest.slashCommands ?? []).some((c) => c.command === input.command),
    );
    if (!app)
      throw notFound(
        input.appId === undefined
          ? `An app with the command ${input.command} in this workspace`
          : `App ${input.appId} with the command ${input.command} in this workspace`,
      );
    return asPerson(p, app, 'slash-command', input);
  }

  /** The apps a person of the workspace can use: those installed in it, and (for development) those the caller owns. */
  async function appsFor(p: Principal): Promise<AppRecord[]> {
    const [installed, own] = await Promise.all([grants.installedApps(p.workspaceId), apps.list(p)]);
    const ids = new Set([...installed, ...own.map((v) => v.id)]);
    const found = await Promise.all([...ids].map((id) => apps.byId(id)));
    return found.filter((a): a is AppRecord => !!a);
  }

  async function asPerson(
    p: Principal,
    app: AppRecord,
    kind: DeliveryKind,
    input: TriggerFields,
  ): Promise<DeliveryRecord> {
    const built = buildPayload(
      kind,
      app,
      { workspaceId: p.workspaceId, userId: p.workspaceUserId },
      input,
      clock.now(),
    );
    const out = dispatcher.outgoing(
      app,
      kind,
      { workspaceId: p.workspaceId, userId: p.workspaceUserId },
      built.url,
      built.payload,
    );
    return dispatcher.settleInteractive(
      out,
      app,
      await dispatcher.track(
        dispatcher.attempt(out, app, { interactive: true, budgetMs: config.deliveryBudgetMs, retryNum: 0 }),
      ),
    );
  }

  /**
   * A person uses an app in the workspace (the console): a click or choice in its message or
   * view (BLOCK_INTERACTION), a view submitted or closed (VIEW_ACTION), a shortcut, a dynamic
   * menu. The app must be installed in the person's workspace (or owned by them); the record
   * holds the app's answer (a view to show, menu options) and what the person sees.
   */
  async function interact(
    p: Principal,
    appId: string,
    kind: Exclude<DeliveryKind, 'event' | 'slash-command'>,
    input: TriggerFields,
  ): Promise<DeliveryRecord> {
    const app = (await appsFor(p)).find((a) => a.id === appId);
    if (!app) throw notFound('App in this workspace');
    return asPerson(p, app, kind, input);
  }

  /**
   * The log, newest first; naming an app that is not the caller's (and has no deliveries listed) is 404, not an empty
   * list.
   */
  async function list(p: Principal, f: Omit<ListFilter, 'ownerId'>) {
    const found = await log.list({ ownerId: p.workspaceUserId, ...f });
    // a deleted app's deliveries stay listed under its id
    if (!found.length && f.appId) await apps.owned(p, f.appId);
    return found;
  }

  return {
    trigger,
    replay,
    replayEdited,
    curlOf,
    cancel,
    invokeSlashCommand,
    interact,
    appsFor,
    probeSignature,
    get,
    list,
  };
}

export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
