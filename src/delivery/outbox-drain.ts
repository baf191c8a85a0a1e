/**
 * Draining the events outbox (services/outbox-writer.ts): each record becomes its events exactly
 * once across every daemon of the store. An app event goes to its app; a workspace event is fanned
 * out here, to the apps `recipientsOf` names (installations, authorizations, scopes and who could
 * see it: services/workspace/events.ts), read once for all the records of a drain. A record is
 * removed in the same commit that writes its events' pending records, on condition that it is still
 * there as read: of two daemons draining at once one commit wins, the other conflicts and moves on,
 * so its events are attempted by the winner only. Records are taken in the order they were written.
 *
 * One event and one app make one delivery, whatever happens: its id is derived from the two
 * (`deliveryIdOf`), and is the key of its pending record, so a record drained again (its commit was
 * lost to a crash or a failed write) makes the same delivery again, never a second one. Where the
 * first attempts start before that commit is durable (a daemon alone on its store), such an event may
 * already have reached the app: it goes again marked as a retry.
 *
 * A workspace event's body is encoded once and stored once, in that same commit, for all the apps it
 * goes to: their pending records name it (event-bodies.ts); the text of each app's envelope is built
 * around what they share, encoded once too (envelopeTexts).
 */
import type { Logger } from '../logger.js';
import { StoreConflict, type Change, type Expectation, type Store } from '../store/types.js';
import type { AppRecord } from '../model/identity.js';
import {
  EVENTS_OUTBOX,
  isAppEvent,
  outboxOrder,
  type OutboxEventRecord,
  type WorkspaceOutboxEvent,
} from '../model/events.js';
import { eventPayload } from './payloads.js';
import { bodyRecord, envelopeTexts } from './event-bodies.js';
import type { AppDirectory, EnqueueOptions, EventToSend } from './types.js';
import { must } from '../must.js';
import { sha256 } from '../crypto.js';
import { messageOf } from '../unknown-values.js';

/** Records taken per round of a drain (each a commit; their fan-out reads are shared). */
const ROUND = 100;

/**
 * The delivery of outbox record `eventId` to app `appId`: the same for both every time (`dlv_` and 132
 * bits of their SHA-256), so the store holds at most one pending record for them.
 */
export const deliveryIdOf = (eventId: string, appId: string): string =>
  `dlv_${sha256(`${eventId}\n${appId}`).slice(0, 22)}`;

/** Who a workspace event goes to: for each event given, the apps and the users it concerns there. */
export interface EventAudience {
  recipientsOf(
    events: readonly WorkspaceOutboxEvent[],
  ): Promise<Array<Array<{ app: AppRecord; workspaceUserIds: string[] }>>>;
}

interface OutboxDrainDeps {
  store: Store;
  logger: Logger;
  apps: Pick<AppDirectory, 'byId'>;
  audience: EventAudience;
  /**
   * Queue the events (their pending records and `opts.extra` in one commit, if `opts.expect` holds) and start their
   * first attempts.
   */
  enqueueEvents(
    events: EventToSend[],
    opts: EnqueueOptions,
  ): Promise<{ durable: Promise<void>; attempts: Array<Promise<unknown>> }>;
  /**
   * Whether enqueueEvents starts the first attempts before its write is durable (a daemon alone on its
   * store): then a record found in the store at start (its earlier run may have sent its events before
   * it died) or whose write failed after its attempts started is sent again marked as a retry.
   */
  attemptsBeforeDurable: boolean;
}

export function createOutboxDrain(deps: OutboxDrainDeps) {
  const { store, logger, apps, audience, enqueueEvents } = deps;
  /** Outbox records this daemon is turning into events now (the next drain leaves them). */
  const taking = new Set<string>();
  /**
   * Outbox records whose events may have reached their apps though the record is still here: those of
   * an earlier run (read now, before this daemon serves), and those whose write failed after their
   * attempts started.
   */
  const maybeSent = new Set<string>();
  const earlierRun = deps.attemptsBeforeDurable
    ? store.all(EVENTS_OUTBOX).then(
        (rs) => rs.forEach((r) => maybeSent.add(r.id)),
        (e: unknown) => logger.error('reading the events outbox failed', { error: messageOf(e) }),
      )
    : Promise.resolve();

  /**
   * The events of one record, queued with its removal (and their shared body's record); a conflict means another
   * daemon took it.
   */
  async function take(ev: OutboxEventRecord, to: EventToSend[]): Promise<void> {
    const written: Change[] = [{ table: EVENTS_OUTBOX, id: ev.id, value: null }];
    const still: Expectation[] = [{ table: EVENTS_OUTBOX, id: ev.id, value: ev }];
    try {
      if (to.length === 0) return await store.commit(written, still);
      const shared = to[0]?.bodyId;
      if (shared !== undefined) written.push(bodyRecord(shared, must(to[0]).payload));
      if (maybeSent.has(ev.id)) for (const e of to) e.unrecorded = 1;
      const { durable, attempts } = await enqueueEvents(to, { extra: written, expect: still });
      if (deps.attemptsBeforeDurable) durable.catch(() => maybeSent.add(ev.id)); // the attempts went
      // an attempt's own failure is logged; a write that failed fails the attempts too, and is reported once, below
      const failed = (e: unknown) =>
        logger.error('event delivery failed', { eventType: ev.eventType, error: messageOf(e) });
      for (const a of attempts)
        a.catch((e: unknown) =>
          durable.then(
            () => failed(e),
            () => {},
          ),
        );
      await durable;
      maybeSent.delete(ev.id);
    } catch (e) {
      if (e instanceof StoreConflict) return; // another daemon took it
      logger.error('event delivery failed', { eventType: ev.eventType, error: messageOf(e) }); // left in the outbox: the next drain tries again
    }
  }

  /** The events of each record of a round: to whom, with what payload. */
  async function eventsOf(round: OutboxEventRecord[]): Promise<EventToSend[][]> {
    const forApps = await Promise.all(round.map((ev) => (isAppEvent(ev) ? apps.byId(ev.appId) : undefined)));
    const inWorkspace = round.filter((ev): ev is WorkspaceOutboxEvent => !isAppEvent(ev));
    const fanned = inWorkspace.length ? await audience.recipientsOf(inWorkspace) : [];
    let w = 0;
    return round.map((ev, i) => {
      if (isAppEvent(ev)) {
        const app = forApps[i];
        if (!app?.manifest.eventSubscriptions?.events?.includes(ev.eventType)) return [];
        return [
          {
            id: deliveryIdOf(ev.id, app.id),
            app,
            workspaceId: ev.workspaceId,
            userId: ev.workspaceUserIds[0] ?? '',
            eventType: ev.eventType,
            payload: eventPayload(ev.eventType, ev.workspaceId, ev.workspaceUserIds, ev.body),
          },
        ];
      }
      const body = JSON.stringify(ev.body); // encoded once for every app it goes to, and stored once (event-bodies.ts)
      const textOf = envelopeTexts(ev.eventType, ev.workspaceId, body); // and the envelopes around it, once
      return must(fanned[w++]).map((r) => ({
        id: deliveryIdOf(ev.id, r.app.id),
        app: r.app,
        workspaceId: ev.workspaceId,
        userId: must(r.workspaceUserIds[0]),
        eventType: ev.eventType,
        payload: eventPayload(ev.eventType, ev.workspaceId, r.workspaceUserIds, body),
        bodyId: ev.id,
        raw: textOf(r.workspaceUserIds),
      }));
    });
  }

  /**
   * Turn every outbox record into its events, in the order they were written; resolves (to whether
   * there were any) once each was taken (its events queued, not delivered).
   */
  async function drain(): Promise<boolean> {
    await earlierRun;
    const all = await store.all(EVENTS_OUTBOX);
    const evs = all.filter((ev) => !taking.has(ev.id)).sort(outboxOrder);
    for (const ev of evs) taking.add(ev.id);
    try {
      for (let i = 0; i < evs.length; i += ROUND) {
        const round = evs.slice(i, i + ROUND);
        let to: EventToSend[][];
        try {
          to = await eventsOf(round);
        } catch (e) {
          logger.error('reading who events go to failed', { error: messageOf(e) }); // left in the outbox for the next drain
          return true;
        }
        await Promise.all(round.map((ev, j) => take(ev, must(to[j]))));
      }
    } finally {
      for (const ev of evs) taking.delete(ev.id);
    }
    return all.length > 0;
  }

  return { drain };
}
