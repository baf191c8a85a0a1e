/**
 * The delivery engine: turns a trigger or an event into a delivery, hands each attempt
 * to a Transport (HTTP, or the socket transport for socketMode apps), classifies the
 * outcome, shows the offline message when an interactive call fails, retries events
 * on a schedule that survives restarts, and records everything in the delivery log.
 */
import { newId } from '../crypto.js';
import { AppError, invalidRequest, notFound } from '../errors.js';
import type { AppsService } from '../services/apps.js';
import type { ServiceContext } from '../services/context.js';
import type { Principal } from '../services/identity.js';
import type { AppRecord } from '../services/records.js';
import { EVENTS_OUTBOX, type OutboxEventRecord } from '../services/oauth-records.js';
import type { HttpTransport } from './http-transport.js';
import type { AttemptEntry, DeliveryLog, DeliveryRecord } from './log.js';
import { buildPayload, eventPayload, KINDS, type TriggerFields } from './payloads.js';
import { signedHeaders, DELIVERY_ID_HEADER } from './sign.js';
import type { AttemptResult, DeliveryKind, Transport } from './types.js';

/** What the engine uses of the socket transport's event queue (socket-transport.ts). */
interface KeptEventQueue {
  onKeptSettled?(cb: (deliveryId: string, appId: string, result: AttemptResult) => void): void;
  discard?(appId: string, deliveryId: string, why: string): boolean;
}

const RAW = Symbol('rawPayload');
type Raw = DeliveryRecord & { [RAW]?: { of: object; text: string } };

/** Events waiting for their next attempt; in the main store so they survive a restart. */
export const PENDING_TABLE = 'pendingDeliveries';

export interface PendingDelivery {
  id: string;
  appId: string;
  workspaceId: string;
  userId: string;
  eventType: string;
  payload: Record<string, unknown>;
  /** Number of the next attempt (0 = first). */
  retryNum: number;
  nextAt: number;
  createdAt: string;
}

/** Unique, unguessable-enough ids without a CSPRNG call per delivery: a random per-process prefix and a counter. */
function idSource(prefix: string) {
  const base = newId(prefix, 9);
  let n = 0;
  return () => `${base}${(n++).toString(36)}`;
}

const FAILURES = new Set(['timeout', 'connection_error', 'http_error', 'redirect', 'signature_rejected', 'egress_denied', 'no_connection']);

export function defaultOfflineMessage(app: AppRecord): string {
  return `${app.manifest.displayName} is not responding right now. Please try again later.`;
}

/** Whether a failed event attempt is worth another try. */
export function retryable(r: AttemptResult): boolean {
  if (r.outcome === 'connection_error' || r.outcome === 'timeout' || r.outcome === 'no_connection') return true;
  if (r.status === 410) return false;
  return (r.outcome === 'http_error' || r.outcome === 'nacked') && r.status !== undefined && (r.status >= 500 || r.status === 429);
}

export function parseSchedule(spec: string): number[] {
  return spec.split(',').map((s) => Number(s.trim())).filter((n) => Number.isFinite(n) && n >= 0);
}

/** Jitter applied to each retry delay: ±20 %. */
const JITTER = 0.2;

/** The longest an event can stay with the engine: every retry delay at its jittered maximum, plus each attempt's timeout. */
export function retryHorizonMs(config: { deliveryRetrySchedule: string; deliveryEventTimeoutMs: number }): number {
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  return Math.ceil(schedule.reduce((sum, s) => sum + s * 1000 * (1 + JITTER), 0) + (schedule.length + 1) * config.deliveryEventTimeoutMs);
}

export interface TriggerInput extends TriggerFields {
  appId: string;
  kind: DeliveryKind;
  /** Overrides the acknowledgement budget (ms) for this trigger. */
  timeoutMs?: number;
}

interface OAuthLike {
  authorizedUsers(appId: string, workspaceId: string): string[];
}

export interface EngineDeps {
  ctx: ServiceContext;
  apps: AppsService;
  http: HttpTransport;
  log: DeliveryLog;
  oauth?: () => OAuthLike | undefined;
}

export function createDeliveryEngine(deps: EngineDeps) {
  const { ctx, apps, http } = deps;
  const log = { ...deps.log, put: (rec: DeliveryRecord) => deps.log.put(rec, (rec as Raw)[RAW]?.of === rec.payload ? (rec as Raw)[RAW]!.text : undefined) };
  const { store, clock, logger, config } = ctx;
  const schedule = parseSchedule(config.deliveryRetrySchedule);
  let socket: (Transport & KeptEventQueue) | undefined;
  const inFlight = new Set<string>();
  /** How kept socket-mode events ended while an attempt of theirs was in flight (taken by that attempt). */
  const keptWhileInFlight = new Map<string, AttemptResult>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  // In-flight attempts, so stop() can wait for them (a counter: no per-call promise bookkeeping).
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
  const track = <T>(p: Promise<T>): Promise<T> => {
    running++;
    p.then(settle, settle);
    return p;
  };

  // The payload is serialised once: the same bytes are signed, sent and written to the log.
  // (kept under a symbol on the record: JSON.stringify skips it, and it is cheaper than a WeakMap)
  function rawPayloadOf(rec: DeliveryRecord): string {
    const r = rec as Raw;
    const cached = r[RAW];
    if (cached && cached.of === rec.payload) return cached.text;
    const text = JSON.stringify(rec.payload);
    r[RAW] = { of: rec.payload, text };
    return text;
  }

  function transportFor(app: AppRecord): { name: 'http' | 'socket'; t: Transport | undefined } {
    return app.manifest.socketMode ? { name: 'socket', t: socket } : { name: 'http', t: http };
  }

  async function attempt(rec: DeliveryRecord, app: AppRecord, interactive: boolean, budgetMs: number): Promise<AttemptResult> {
    const { t } = transportFor(app);
    const retryNum = rec.attempts.length;
    const attemptId = nextAttemptId();
    let r: AttemptResult;
    if (!t) r = { outcome: 'no_connection', latencyMs: 0, error: 'socket mode is not running in this daemon' };
    else {
      try {
        r = await t.send({ deliveryId: rec.id, attemptId, app, url: rec.url, payload: rec.payload, rawPayload: rawPayloadOf(rec), interactive, budgetMs, retryNum, signingSecret: app.manifest.socketMode ? '' : apps.secretsOf(app).signingSecret });
      } catch (e) {
        logger.error('delivery transport failed', { deliveryId: rec.id, error: (e as Error).message });
        r = { outcome: 'connection_error', latencyMs: 0, error: 'internal transport error' };
      }
    }
    recordAttempt(rec, r, attemptId, retryNum);
    return r;
  }

  function recordAttempt(rec: DeliveryRecord, r: AttemptResult, attemptId: string, retryNum: number): void {
    const at = iso();
    const entry: AttemptEntry = { id: attemptId, at, retryNum, latencyMs: r.latencyMs, outcome: r.outcome };
    if (r.status !== undefined) entry.status = r.status;
    if (r.excerpt) entry.excerpt = r.excerpt;
    if (r.error) entry.error = r.error;
    if (r.message) entry.message = r.message;
    rec.attempts.push(entry);
    rec.outcome = r.outcome;
    rec.updatedAt = at;
    if (r.body !== undefined) rec.response = r.body;
  }

  function settleInteractive(rec: DeliveryRecord, app: AppRecord, r: AttemptResult) {
    rec.state = r.outcome === 'acked' || r.outcome === 'response' ? 'delivered' : 'failed';
    if (r.outcome === 'acked' && r.message) rec.ephemeralMessage = r.message;
    else if (r.outcome === 'nacked') rec.ephemeralMessage = r.message ?? app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    else if (FAILURES.has(r.outcome)) rec.ephemeralMessage = app.manifest.offlineMessage ?? defaultOfflineMessage(app);
    else rec.ephemeralMessage = undefined; // (not `delete`: it would turn the record into a slow dictionary object)
    log.put(rec);
    if (rec.state === 'failed') logger.info('delivery failed', { deliveryId: rec.id, appId: rec.appId, kind: rec.kind, outcome: r.outcome, status: r.status });
  }

  function newRecord(app: AppRecord, kind: DeliveryKind, who: { workspaceId: string; userId: string }, url: string | undefined, payload: Record<string, unknown>, id = nextDeliveryId()): DeliveryRecord {
    const now = iso();
    return {
      id, kind, appId: app.id, appName: app.manifest.name, ownerId: app.ownerId, workspaceId: who.workspaceId, userId: who.userId,
      transport: transportFor(app).name, ...(app.manifest.socketMode ? {} : { url }), createdAt: now, updatedAt: now, state: 'pending', payload, attempts: [],
    };
  }

  // ---- events: durable pending record, first attempt now, retries on the schedule ----

  async function attemptEvent(p: PendingDelivery): Promise<DeliveryRecord | undefined> {
    if (inFlight.has(p.id)) return log.get(p.id);
    inFlight.add(p.id);
    try {
      const app = apps.byId(p.appId);
      if (!app) {
        await store.commit([{ table: PENDING_TABLE, id: p.id, value: null }]);
        return undefined;
      }
      const rec = log.get(p.id) ?? newRecord(app, 'event', p, app.manifest.eventSubscriptions?.url || undefined, p.payload, p.id);
      if (!app.manifest.socketMode) rec.url = app.manifest.eventSubscriptions?.url || undefined;
      let r = await attempt(rec, app, false, config.deliveryEventTimeoutMs);
      let final = false;
      const kept = keptWhileInFlight.get(p.id);
      if (kept) {
        // The socket-mode queue sent (or dropped) this event while the attempt was under way.
        keptWhileInFlight.delete(p.id);
        if (r.outcome !== 'acked') {
          recordAttempt(rec, kept, nextAttemptId(), rec.attempts.length);
          r = kept;
          final = true;
        }
      }
      await finishEvent(p, rec, r, app, final);
      return rec;
    } finally {
      inFlight.delete(p.id);
    }
  }

  /** After an event's attempt: schedule the next one, or end it (delivered or failed) and forget the pending record. */
  async function finishEvent(p: PendingDelivery, rec: DeliveryRecord, r: AttemptResult, app: AppRecord, final: boolean): Promise<void> {
    const delivered = r.outcome === 'acked' || r.outcome === 'response';
    const again = !final && !delivered && retryable(r) && p.retryNum < schedule.length && !stopped;
    if (again) {
      const base = schedule[p.retryNum]! * 1000;
      const delay = Math.round(base * (1 - JITTER + Math.random() * 2 * JITTER));
      const next: PendingDelivery = { ...p, retryNum: p.retryNum + 1, nextAt: clock.now() + delay };
      rec.state = 'retrying';
      rec.nextAttemptAt = new Date(next.nextAt).toISOString();
      await store.commit([{ table: PENDING_TABLE, id: p.id, value: next }]);
    } else {
      rec.state = delivered ? 'delivered' : 'failed';
      rec.nextAttemptAt = undefined;
      if (!stopped || delivered || !retryable(r) || final) await store.commit([{ table: PENDING_TABLE, id: p.id, value: null }]);
      // The engine gave up: a socket-mode app's copy in the queue goes too (the queue is bounded by this schedule).
      if (!delivered && !final && !stopped && app.manifest.socketMode) socket?.discard?.(app.id, p.id, 'the retry schedule ran out before the app connected');
    }
    log.put(rec);
  }

  /** A kept socket-mode event was sent from the queue, or dropped there: the log says so at once. */
  async function keptSettled(id: string, appId: string, result: AttemptResult): Promise<void> {
    if (inFlight.has(id)) {
      keptWhileInFlight.set(id, result);
      return;
    }
    const p = store.get<PendingDelivery>(PENDING_TABLE, id);
    const app = apps.byId(appId);
    const rec = log.get(id) ?? (p && app ? newRecord(app, 'event', p, undefined, p.payload, p.id) : undefined);
    if (!rec) return;
    inFlight.add(id);
    try {
      recordAttempt(rec, result, nextAttemptId(), rec.attempts.length);
      if (p && app) await finishEvent(p, rec, result, app, true);
      else {
        // the engine had already ended it (e.g. before a restart): only the log learns the news
        rec.state = result.outcome === 'acked' ? 'delivered' : 'failed';
        log.put(rec);
      }
    } finally {
      inFlight.delete(id);
    }
  }

  /** Queue an event for one app (durable before the first attempt) and make the first attempt. */
  async function enqueueEvent(app: AppRecord, workspaceId: string, userId: string, eventType: string, payload: Record<string, unknown>, extra: Array<{ table: string; id: string; value: null }> = []): Promise<DeliveryRecord | undefined> {
    const p: PendingDelivery = { id: nextDeliveryId(), appId: app.id, workspaceId, userId, eventType, payload, retryNum: 0, nextAt: clock.now(), createdAt: iso() };
    const rec = newRecord(app, 'event', { workspaceId, userId }, app.manifest.eventSubscriptions?.url || undefined, payload, p.id);
    log.put(rec);
    await store.commit([{ table: PENDING_TABLE, id: p.id, value: p }, ...extra]);
    return track(attemptEvent(p));
  }

  /** APP_UNAUTHORIZED / APP_UNINSTALLED written by the OAuth service: deliver and remove them. */
  async function drainOutbox(): Promise<void> {
    for (const ev of [...store.values<OutboxEventRecord>(EVENTS_OUTBOX)]) {
      if (inFlight.has(ev.id)) continue;
      const app = apps.byId(ev.appId);
      const subscribed = app?.manifest.eventSubscriptions?.events?.includes(ev.eventType);
      if (!app || !subscribed) {
        await store.commit([{ table: EVENTS_OUTBOX, id: ev.id, value: null }]);
        continue;
      }
      inFlight.add(ev.id);
      try {
        const payload = eventPayload(ev.eventType, ev.workspaceId, ev.workspaceUserIds, ev.body);
        void enqueueEvent(app, ev.workspaceId, ev.workspaceUserIds[0] ?? '', ev.eventType, payload, [{ table: EVENTS_OUTBOX, id: ev.id, value: null }]).catch((e) =>
          logger.error('event delivery failed', { error: (e as Error).message }),
        );
      } finally {
        inFlight.delete(ev.id);
      }
    }
  }

  function tick() {
    if (stopped) return;
    const now = clock.now();
    for (const p of store.values<PendingDelivery>(PENDING_TABLE)) {
      if (p.nextAt <= now && !inFlight.has(p.id)) track(attemptEvent(p)).catch((e) => logger.error('event retry failed', { error: (e as Error).message }));
    }
    drainOutbox().catch((e) => logger.error('outbox drain failed', { error: (e as Error).message }));
  }

  // ---- the management-facing operations ----

  function ownedApp(p: Principal, appId: unknown): AppRecord {
    if (typeof appId !== 'string' || !appId) throw invalidRequest('appId is required.');
    return apps.owned(p, appId);
  }

  function budgetOf(timeoutMs: unknown): number {
    if (timeoutMs === undefined || timeoutMs === null) return config.deliveryBudgetMs;
    const n = Number(timeoutMs);
    if (!Number.isInteger(n) || n < 1 || n > 60_000) throw invalidRequest('timeoutMs must be an integer from 1 to 60000.');
    return n;
  }

  async function trigger(p: Principal, input: TriggerInput): Promise<DeliveryRecord> {
    if (!KINDS.includes(input.kind)) throw invalidRequest(`kind must be one of ${KINDS.join(', ')}.`);
    const app = ownedApp(p, input.appId);
    const budget = budgetOf(input.timeoutMs);
    let workspaceUserIds: string[] | undefined;
    if (input.kind === 'event') {
      // the users concerned: those who authorized the app here (else the caller)
      const authorized = deps.oauth?.()?.authorizedUsers(app.id, p.workspaceId) ?? [];
      workspaceUserIds = authorized.length ? authorized : [p.workspaceUserId];
    }
    const who = { workspaceId: p.workspaceId, userId: p.workspaceUserId, workspaceUserIds };
    const built = buildPayload(input.kind, app, who, input);
    if (!built.interactive) {
      if (!app.manifest.socketMode && !built.url) throw invalidRequest('The app has no eventSubscriptions.url to send events to.');
      const rec = await enqueueEvent(app, p.workspaceId, p.workspaceUserId, String(built.payload.eventType), built.payload);
      if (!rec) throw notFound('App');
      return rec;
    }
    // Logged once settled (at most the budget later): one log line per interactive call.
    const rec = newRecord(app, input.kind, { workspaceId: p.workspaceId, userId: p.workspaceUserId }, built.url, built.payload);
    const r = await track(attempt(rec, app, true, budget));
    settleInteractive(rec, app, r);
    return rec;
  }

  function get(p: Principal, id: string): DeliveryRecord {
    const rec = log.get(id);
    if (!rec || rec.ownerId !== p.workspaceUserId) throw notFound('Delivery');
    return rec;
  }

  async function replay(p: Principal, id: string): Promise<DeliveryRecord> {
    const rec = get(p, id);
    const app = apps.owned(p, rec.appId);
    if (!rec.payload) throw new AppError(409, 'payload_not_kept', 'This trigger succeeded before the daemon restarted and its payload is not kept on disk; send it again with deliver-test.');
    const interactive = rec.kind !== 'event';
    const r = await track(attempt(rec, app, interactive, interactive ? config.deliveryBudgetMs : config.deliveryEventTimeoutMs));
    if (interactive) settleInteractive(rec, app, r);
    else {
      rec.state = r.outcome === 'acked' || r.outcome === 'response' ? 'delivered' : 'failed';
      log.put(rec);
    }
    return rec;
  }

  /** Send the trigger once with a wrong signature and once unsigned; a safe app refuses both. */
  async function probeSignature(p: Principal, input: TriggerInput) {
    const app = ownedApp(p, input.appId);
    if (app.manifest.socketMode) throw invalidRequest('Socket-mode frames are not signed; the signature probe applies to HTTP apps only.');
    const built = buildPayload(input.kind, app, { workspaceId: p.workspaceId, userId: p.workspaceUserId }, input);
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
    return { wrongSignature: { ...wrongSignature, refused: refused(wrongSignature) }, unsigned: { ...unsigned, refused: refused(unsigned) }, refusedBoth: refused(wrongSignature) && refused(unsigned) };
  }

  return {
    trigger,
    replay,
    probeSignature,
    get,
    list: (p: Principal, f: { appId?: string; failed?: boolean; limit?: number }) => log.list({ ownerId: p.workspaceUserId, ...f }),
    enqueueEvent,
    setSocketTransport(t: Transport & KeptEventQueue) {
      socket = t;
      t.onKeptSettled?.((id, appId, result) => {
        track(keptSettled(id, appId, result)).catch((e) => logger.error('socket-mode queue update failed', { deliveryId: id, error: (e as Error).message }));
      });
    },
    start() {
      timer = setInterval(tick, 200);
      timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      if (running > 0) await new Promise<void>((r) => (idle = r));
      await log.close();
      await http.close();
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
export const DELIVERY_SHARED_KEY = 'delivery';
export function getDelivery(deps: { shared: Map<string, unknown> }): DeliveryEngine | undefined {
  return deps.shared.get(DELIVERY_SHARED_KEY) as DeliveryEngine | undefined;
}
