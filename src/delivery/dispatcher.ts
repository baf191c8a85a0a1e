/**
 * One attempt of one delivery, for the worker (events) and the deliveries service (triggers,
 * replays) alike: pick the transport (HTTP, or the socket transport for socketMode apps),
 * send, record the attempt on the delivery record, and for interactive calls decide what the
 * user sees (the app's message, or its offlineMessage when it failed: docs/protocol.md §5).
 * Attempts in flight are counted so shutdown can wait for them.
 */
import { newId } from '../crypto.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { AppsService } from '../services/apps.js';
import type { AppRecord } from '../services/records.js';
import type { HttpTransport } from './http-transport.js';
import type { AttemptEntry, DeliveryLog, DeliveryRecord } from './log.js';
import type { SocketTransport } from './socket-transport.js';
import { subjectOf } from './payloads.js';
import type { AttemptResult, DeliveryKind } from './types.js';

const RAW = Symbol('rawPayload');
type Raw = DeliveryRecord & { [RAW]?: { of: object; text: string } };

const FAILURES = new Set(['timeout', 'connection_error', 'http_error', 'redirect', 'signature_rejected', 'egress_denied', 'no_connection']);

const defaultOfflineMessage = (app: AppRecord): string => `${app.manifest.displayName} is not responding right now. Please try again later.`;

/** Unique, unguessable-enough ids without a CSPRNG call per delivery: a random per-process prefix and a counter. */
function idSource(prefix: string) {
  const base = newId(prefix, 9);
  let n = 0;
  return () => `${base}${(n++).toString(36)}`;
}

/**
 * One readable log line per attempt, as a webhook listener shows them:
 * `slash-command /standup → standup: 200 acked in 3.2 ms`, `event NEW_MESSAGE → standup: connection_error in 1 ms (retry 2)`.
 */
function attemptLine(rec: DeliveryRecord, a: AttemptEntry): string {
  const subject = rec.subject;
  const extra = a.replay ? ' (replay)' : a.retryNum > 0 ? ` (retry ${a.retryNum})` : '';
  return `${rec.kind}${subject ? ` ${subject}` : ''} → ${rec.appName}: ${a.status === undefined ? '' : `${a.status} `}${a.outcome} in ${a.latencyMs} ms${extra}`;
}

export interface DispatcherDeps {
  clock: Clock;
  logger: Logger;
  apps: AppsService;
  http: HttpTransport;
  socket: SocketTransport;
  log: DeliveryLog;
}

export function createDispatcher(deps: DispatcherDeps) {
  const { clock, logger, apps, http, socket } = deps;
  // The payload is serialised once: the same bytes are signed, sent and written to the log
  // (kept under a symbol on the record: JSON.stringify skips it, and it is cheaper than a WeakMap).
  const log: DeliveryLog = { ...deps.log, put: (rec) => deps.log.put(rec, (rec as Raw)[RAW]?.of === rec.payload ? (rec as Raw)[RAW]!.text : undefined) };
  let running = 0;
  let idle: (() => void) | undefined;
  let isoAt = -1;
  let isoText = '';
  const iso = () => {
    const now = clock.now();
    if (now !== isoAt) {
      isoAt = now;
      isoText = new Date(now).toISOString();
    }
    return isoText;
  };
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

  function rawPayloadOf(rec: DeliveryRecord): string {
    const r = rec as Raw;
    const cached = r[RAW];
    if (cached && cached.of === rec.payload) return cached.text;
    const text = JSON.stringify(rec.payload);
    r[RAW] = { of: rec.payload, text };
    return text;
  }

  const transportOf = (app: AppRecord) => (app.manifest.socketMode ? socket : http);

  function recordAttempt(rec: DeliveryRecord, r: AttemptResult, attemptId: string, retryNum: number, replay = false): void {
    const at = iso();
    const entry: AttemptEntry = { id: attemptId, at, retryNum, latencyMs: r.latencyMs, outcome: r.outcome };
    if (replay) entry.replay = true;
    if (r.status !== undefined) entry.status = r.status;
    if (r.excerpt) entry.excerpt = r.excerpt;
    if (r.error) entry.error = r.error;
    if (r.message) entry.message = r.message;
    if (r.signed) entry.signed = r.signed;
    if (r.answerHeaders?.length) entry.answerHeaders = r.answerHeaders;
    rec.attempts.push(entry);
    rec.outcome = r.outcome;
    rec.updatedAt = at;
    if (r.body !== undefined) rec.response = r.body;
    logger.info(attemptLine(rec, entry), { deliveryId: rec.id, appId: rec.appId });
  }

  /** One attempt now; `replay` marks it as made by a replay rather than by the schedule. */
  async function attempt(rec: DeliveryRecord, app: AppRecord, interactive: boolean, budgetMs: number, replay = false): Promise<AttemptResult> {
    const retryNum = rec.attempts.length;
    const attemptId = nextAttemptId();
    let r: AttemptResult;
    try {
      r = await transportOf(app).send({ deliveryId: rec.id, attemptId, app, url: rec.url, payload: rec.payload, rawPayload: rawPayloadOf(rec), interactive, budgetMs, retryNum, signingSecret: app.manifest.socketMode ? '' : (await apps.secretsOf(app)).signingSecret });
    } catch (e) {
      logger.error('delivery transport failed', { deliveryId: rec.id, error: (e as Error).message });
      r = { outcome: 'connection_error', latencyMs: 0, error: 'internal transport error' };
    }
    recordAttempt(rec, r, attemptId, retryNum, replay);
    return r;
  }

  /** An interactive call ended: delivered or failed, and the message the user sees. */
  function settleInteractive(rec: DeliveryRecord, app: AppRecord, r: AttemptResult) {
    rec.state = r.outcome === 'acked' || r.outcome === 'response' ? 'delivered' : 'failed';
    if (r.outcome === 'acked' && r.message) rec.ephemeralMessage = r.message;
    else if (r.outcome === 'nacked') rec.ephemeralMessage = r.message ?? app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    else if (FAILURES.has(r.outcome)) rec.ephemeralMessage = app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    else rec.ephemeralMessage = undefined; // (not `delete`: it would turn the record into a slow dictionary object)
    log.put(rec);
  }

  function newRecord(app: AppRecord, kind: DeliveryKind, who: { workspaceId: string; userId: string }, url: string | undefined, payload: Record<string, unknown>, id = nextDeliveryId()): DeliveryRecord {
    const now = iso();
    return {
      id, kind, subject: subjectOf(kind, payload), appId: app.id, appName: app.manifest.name, ownerId: app.ownerId, workspaceId: who.workspaceId, userId: who.userId,
      transport: app.manifest.socketMode ? 'socket' : 'http', ...(app.manifest.socketMode ? {} : { url }), createdAt: now, updatedAt: now, state: 'pending', payload, attempts: [],
    };
  }

  return {
    log,
    iso,
    nextDeliveryId,
    nextAttemptId,
    track,
    attempt,
    recordAttempt,
    settleInteractive,
    newRecord,
    /** Resolves once no attempt is in flight. */
    idle: (): Promise<void> => (running === 0 ? Promise.resolve() : new Promise<void>((r) => (idle = r))),
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
