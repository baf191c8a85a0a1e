/**
 * Shared event bodies. A workspace event goes to every app that qualifies (outbox-drain.ts): one
 * pending record per app, all with the same `body` (the payload's JSON-encoded string, docs/protocol.md
 * §5.2). That body is stored once, as a record of its own keyed by the event's outbox id, written
 * in the commit that writes the event's pending records; each of them names it (`bodyId`) and holds
 * of its payload only the users it concerns. An attempt builds the payload again as the drain built it (payloads.ts
 * eventPayload, from the record's fields and the body: `payloadOf`), so every attempt sends the bytes
 * the first one sent, whichever daemon makes it and whatever order the store gives a record's keys
 * back in (PostgreSQL's jsonb has its own). A record without `bodyId` holds its own body, as every
 * record of an earlier appreg does: it is sent as it is.
 *
 * A body is deleted once no pending record names it (`unreferenced`, called by the worker's sweep).
 * The sweep reads the bodies before the pending records: a body and its pending records appear in
 * one commit, and none is written for a body after that (the event's outbox record is removed in the
 * same commit), so a body that no pending record named at the later read never will again. Whoever
 * holds a pending record therefore finds its body, unless the record itself went meanwhile
 * (cancelled, or ended by another daemon).
 */
import type { EventBody, PendingDelivery } from '../model/delivery.js';
import type { Change, Store } from '../store/types.js';
import { eventPayload } from './payloads.js';
import { itemsOf } from '../unknown-values.js';

const USERS_KEY = '"workspaceUserIds":';

/**
 * The texts of a workspace event's envelopes (eventPayload's, JSON-encoded) for the apps it goes to, which differ in
 * `workspaceUserIds` only: the rest is encoded once, for all of them, and each text is that around its users. The
 * bytes are JSON.stringify's of the envelope: JSON text is made of its values' texts, in the envelope's key order,
 * and the key's text `"workspaceUserIds":` occurs once in it (every string value is escaped, so none holds it).
 */
export function envelopeTexts(
  eventType: string,
  workspaceId: string,
  body: string,
): (workspaceUserIds: string[]) => string {
  const text = JSON.stringify(eventPayload(eventType, workspaceId, [], body));
  const at = text.indexOf(USERS_KEY);
  // (an envelope without the key: each is encoded whole)
  if (at < 0) return (users) => JSON.stringify(eventPayload(eventType, workspaceId, users, body));
  const [head, tail] = [text.slice(0, at + USERS_KEY.length), text.slice(at + USERS_KEY.length + 2)];
  return (users) => head + JSON.stringify(users) + tail;
}

/** The users of a stored envelope (the drain wrote strings; anything else is left out). */
const stringsOf = (v: unknown): string[] => itemsOf(v).filter((x): x is string => typeof x === 'string');

export const BODIES_TABLE = 'eventBodies';

/**
 * What a pending record of a shared body keeps of `payload` (an event envelope, as eventPayload built it): its users.
 * The envelope's other fields are the record's own (eventType, workspaceId) or follow from them (messageType).
 */
export const withoutBody = (payload: Record<string, unknown>): Record<string, unknown> => ({
  workspaceUserIds: payload.workspaceUserIds,
});

/** The body record of `payload` (an event envelope, as eventPayload built it) for the event `eventId`. */
export const bodyRecord = (eventId: string, payload: Record<string, unknown>): Change => {
  const rec: EventBody = { id: eventId, body: String(payload.body) };
  return { table: BODIES_TABLE, id: eventId, value: rec };
};

/** `p`'s payload with its body: its own, or built again with the shared one; undefined when that body is gone. */
export async function payloadOf(store: Store, p: PendingDelivery): Promise<Record<string, unknown> | undefined> {
  if (p.bodyId === undefined) return p.payload;
  const shared = await store.get(BODIES_TABLE, p.bodyId);
  return shared && eventPayload(p.eventType, p.workspaceId, stringsOf(p.payload.workspaceUserIds), shared.body);
}

/**
 * The deletions of the bodies of `bodies` (read first) that no record of `pending` (read after them)
 * names. No expectation: a body never changes, and another daemon's sweep deleting it too is no harm.
 */
export function unreferenced(bodies: readonly EventBody[], pending: readonly PendingDelivery[]): Change[] {
  if (bodies.length === 0) return [];
  const named = new Set<string>();
  for (const p of pending) if (p.bodyId !== undefined) named.add(p.bodyId);
  return bodies.filter((b) => !named.has(b.id)).map((b): Change => ({ table: BODIES_TABLE, id: b.id, value: null }));
}
