/**
 * One attempt of one delivery, for the worker (events) and the deliveries service (triggers,
 * replays) alike: pick the transport (HTTP, or the socket transport for socketMode apps), send,
 * and describe the attempt as the delivery log records it (a new entry: nothing is changed in
 * place); for interactive calls decide what the user sees (the app's message, or its
 * offlineMessage when it failed: docs/protocol.md §5) and log the call. Attempts in flight are
 * counted so shutdown can wait for them.
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { AppRecord } from '../model/identity.js';
import type { HttpTransport } from './http-transport.js';
import { applyEntry, type DeliveryLog, type LogEntry, type Outgoing } from './log.js';
import type { AttemptRecord, DeliveryHead, DeliveryRecord, StateChange } from '../model/delivery.js';
import type { SocketTransport } from './socket-transport.js';
import { subjectOf } from './payloads.js';
import type { AppDirectory, AttemptResult } from './types.js';
import type { DeliveryKind } from '../model/delivery.js';
import { must } from '../must.js';
import { messageOf } from '../unknown-values.js';
import { isoTime } from '../iso-time.js';

const FAILURES = new Set([
  'timeout',
  'connection_error',
  'http_error',
  'redirect',
  'signature_rejected',
  'egress_denied',
  'no_connection',
]);

const defaultOfflineMessage = (app: AppRecord): string =>
  `${app.manifest.displayName} is not responding right now. Please try again later.`;

/** Unique, unguessable-enough ids without a CSPRNG call per delivery: a random per-process prefix and a counter. */
function idSource(prefix: string) {
  const base = newId(prefix, 9);
  let n = 0;
  return () => `${base}${(n++).toString(36)}`;
}

/**
 * One readable log line per attempt, as a webhook listener shows them:
 * `slash-command /standup → standup: 200 acked in 3.2 ms`, `event NEW_MESSAGE → standup: connection_error in 1 ms
 * (retry 2)`.
 */
function attemptLine(rec: Pick<DeliveryRecord, 'kind' | 'subject' | 'appName'>, a: AttemptRecord): string {
  const subject = rec.subject;
  const extra = a.replay ? ' (replay)' : a.retryNum > 0 ? ` (retry ${a.retryNum})` : '';
  return `${rec.kind}${subject ? ` ${subject}` : ''} → ${rec.appName}: ${a.status === undefined ? '' : `${a.status} `}${a.outcome} in ${a.latencyMs} ms${extra}`;
}

export interface DispatcherDeps {
  clock: Clock;
  logger: Logger;
  apps: AppDirectory;
  http: HttpTransport;
  socket: SocketTransport;
  log: DeliveryLog;
}

/** How an attempt is made: `retryNum` is the number of attempts made before it; `replay` marks one a replay made. */
export interface AttemptOptions {
  interactive: boolean;
  budgetMs: number;
  retryNum: number;
  replay?: boolean;
}

/** An attempt made: how it ended, and the attempt as the log records it. */
export interface Attempted {
  result: AttemptResult;
  entry: AttemptRecord;
}

export function createDispatcher(deps: DispatcherDeps) {
  const { clock, logger, apps, http, socket, log } = deps;
  let running = 0;
  let idle: (() => void) | undefined;
  /** Now as toISOString's text (iso-time.ts keeps the text of the current second). */
  const iso = () => isoTime(clock.now());
  const nextDeliveryId = idSource('dlv');
  const nextAttemptId = idSource('att');

  const settle = () => {
    if (--running === 0 && idle) idle();
  };
  /** Count `p` as in flight until it settles. */
  const track = <T>(p: Promise<T>): Promise<T> => {
    running++;
    p.then(settle, settle);
    return p;
  };

  const transportOf = (app: AppRecord) => (app.manifest.socketMode ? socket : http);

  /**
   * A new delivery of `payload` to `app`: what it is, and its payload serialised once (the same bytes
   * are signed, sent and written to the log). `id`: the pending event's; `createdAt`: its creation;
   * `raw`: `payload` serialised already, exactly as JSON.stringify would (event-bodies.ts envelopeTexts).
   */
  function outgoing(
    app: AppRecord,
    kind: DeliveryKind,
    who: { workspaceId: string; userId: string },
    url: string | undefined,
    payload: Record<string, unknown>,
    o: { id?: string; createdAt?: string; editedFrom?: string; raw?: string } = {},
  ): Outgoing {
    const id = o.id ?? nextDeliveryId();
    const subject = subjectOf(kind, payload);
    const socketMode = app.manifest.socketMode === true;
    // a literal in the key order the log writes, not conditional spreads (a clone per spread on Node 20, per
    // delivery); a socket-mode head's url is undefined, so neither written nor shown
    const plain: DeliveryHead = {
      id,
      kind,
      subject,
      appId: app.id,
      appName: app.manifest.name,
      ownerId: app.ownerId,
      workspaceId: who.workspaceId,
      userId: who.userId,
      transport: socketMode ? 'socket' : 'http',
      url: socketMode ? undefined : url,
      createdAt: o.createdAt ?? iso(),
    };
    // an edited replay names its source after the subject, where the log has always had it
    const head = o.editedFrom ? Object.assign({ id, kind, subject, editedFrom: o.editedFrom }, plain) : plain;
    return { head, payload, raw: o.raw ?? JSON.stringify(payload) };
  }

  /** A delivery already made, to be sent again (a replay): as it is logged. */
  function resend(rec: DeliveryRecord): Outgoing {
    const { id, kind, subject, editedFrom, appId, appName, ownerId, workspaceId, userId, transport, url, createdAt } =
      rec;
    const head = {
      id,
      kind,
      subject,
      ...(editedFrom ? { editedFrom } : {}),
      appId,
      appName,
      ownerId,
      workspaceId,
      userId,
      transport,
      ...(url !== undefined ? { url } : {}),
      createdAt,
    };
    return { head, payload: rec.payload, raw: JSON.stringify(rec.payload) };
  }

  /** The log's record of an attempt that ended with `r`. */
  function entryOf(
    r: AttemptResult,
    retryNum: number,
    o: { id?: string; replay?: boolean; url?: string } = {},
  ): AttemptRecord {
    const entry: AttemptRecord = {
      id: o.id ?? nextAttemptId(),
      at: iso(),
      retryNum,
      latencyMs: r.latencyMs,
      outcome: r.outcome,
    };
    if (o.replay) entry.replay = true;
    if (r.status !== undefined) entry.status = r.status;
    if (r.excerpt) entry.excerpt = r.excerpt;
    if (r.error) entry.error = r.error;
    if (r.message) entry.message = r.message;
    if (r.signed) entry.signed = r.signed;
    if (r.answerHeaders?.length) entry.answerHeaders = r.answerHeaders;
    if (r.body !== undefined) entry.response = r.body;
    if (o.url !== undefined) entry.url = o.url;
    return entry;
  }

  /** One attempt of `out` now. Nothing is logged: the caller appends the attempt with the state it leaves. */
  async function attempt(out: Outgoing, app: AppRecord, o: AttemptOptions): Promise<Attempted> {
    const attemptId = nextAttemptId();
    const { id, url } = out.head;
    let result: AttemptResult;
    try {
      result = await transportOf(app).send({
        deliveryId: id,
        attemptId,
        app,
        url,
        payload: out.payload,
        rawPayload: out.raw,
        interactive: o.interactive,
        budgetMs: o.budgetMs,
        retryNum: o.retryNum,
        signingSecret: app.manifest.socketMode ? '' : (await apps.secretsOf(app)).signingSecret,
      });
    } catch (e) {
      logger.error('delivery transport failed', { deliveryId: id, error: messageOf(e) });
      result = { outcome: 'connection_error', latencyMs: 0, error: 'internal transport error' };
    }
    const entry = entryOf(result, o.retryNum, { id: attemptId, replay: o.replay, url });
    // the line is built only when it is written (the daemon often runs at warn)
    if (logger.enabled('info')) logger.info(attemptLine(out.head, entry), { deliveryId: id, appId: app.id });
    return { result, entry };
  }

  /** What an interactive call ended as: delivered or failed, and the message the user sees. */
  function interactiveState(app: AppRecord, r: AttemptResult): StateChange {
    const state = r.outcome === 'acked' || r.outcome === 'response' ? 'delivered' : 'failed';
    let shown: string | undefined;
    if (r.outcome === 'acked' && r.message) shown = r.message;
    else if (r.outcome === 'nacked') shown = r.message ?? app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    else if (FAILURES.has(r.outcome)) shown = app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    return { at: iso(), state, ...(shown !== undefined ? { ephemeralMessage: shown } : {}) };
  }

  /**
   * An interactive call ended: logged (with the delivery itself when it is new, else after `prev`,
   * the delivery as read), and the delivery as it now is.
   */
  function settleInteractive(out: Outgoing, app: AppRecord, a: Attempted, prev?: DeliveryRecord): DeliveryRecord {
    const state = interactiveState(app, a.result);
    const entry: LogEntry = { id: out.head.id, ...(prev ? {} : { begun: out }), attempt: a.entry, state };
    log.append(entry);
    return must(applyEntry(prev, entry));
  }

  return {
    log,
    iso,
    nextDeliveryId,
    track,
    outgoing,
    resend,
    entryOf,
    attempt,
    settleInteractive,
    /** Resolves once no attempt is in flight. */
    idle: (): Promise<void> => (running === 0 ? Promise.resolve() : new Promise<void>((r) => (idle = r))),
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
