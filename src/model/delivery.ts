/**
 * The records of delivery: the delivery log (what users see of every delivery and its attempts,
 * delivery/log.ts; on PostgreSQL kept as three tables by delivery/store-log.ts), the events waiting
 * for their next attempt (delivery/pending.ts), and socket mode's tables (the tickets, the queue
 * of a disconnected app's events, which daemon holds an app's connections, relayed attempts).
 */

export type DeliveryKind =
  | 'slash-command'
  | 'global-shortcut'
  | 'message-shortcut'
  | 'block-interaction'
  | 'view-action'
  | 'dynamic-menu'
  | 'event';
/** How one attempt ended (docs/protocol.md §5). */
export type Outcome =
  | 'acked' // 2xx, `{}` or `{message}` (or text `ok` for events)
  | 'nacked' // 4xx/5xx with `{message}` (socket: reply with status >= 400)
  | 'response' // a modal (`{view, action…}`) or dynamic-menu options answer
  | 'timeout' // no answer within the budget
  | 'connection_error' // refused, reset, DNS failure, TLS failure
  | 'http_error' // non-2xx without a usable message, 429, 5xx without message
  | 'redirect' // a 3xx (never followed)
  | 'signature_rejected' // 403 (the SDK's `Invalid signature!`)
  | 'egress_denied' // the operator's egress policy refused the target
  | 'no_connection';

// ---- the delivery log ----

export interface AttemptEntry {
  id: string;
  at: string;
  retryNum: number;
  status?: number;
  latencyMs: number;
  outcome: Outcome;
  excerpt?: string;
  error?: string;
  message?: string;
  /** Set on an attempt made by a replay (appreg deliveries replay), not by the schedule. */
  replay?: true;
  /** The signature headers this attempt was sent with (HTTP only): `timestamp` and `signature`. */
  signed?: { timestamp: string; signature: string };
  /** The headers the app answered with (HTTP only), in order, lowercase names; capped (see http-transport.ts). */
  answerHeaders?: Array<[string, string]>;
}
/** An attempt as the log keeps it: what users see of it, and what the delivery takes from it. */
export interface AttemptRecord extends AttemptEntry {
  /** The app's answer body (a modal, menu options, an ack's body): the delivery's `response` from then on. */
  response?: unknown;
  /**
   * Where an HTTP attempt went (an event's URL is the manifest's at each attempt): the delivery's `url` from then on.
   */
  url?: string;
}
/** `cancelled`: a retrying event ended by `deliveries cancel`, or because its app was deleted. */
export type DeliveryState = 'pending' | 'delivered' | 'failed' | 'retrying' | 'cancelled';
/** What a delivery is: written once, when it begins. */
export interface DeliveryHead {
  id: string;
  kind: DeliveryKind;
  /** What it is about: the command, shortcut, element, view action, menu or event type (payloads.ts subjectOf). */
  subject?: string;
  /** An edited replay: the delivery whose body was edited and sent again as this one. */
  editedFrom?: string;
  appId: string;
  appName: string;
  /** Owner of the app: who may list and replay it. */
  ownerId: string;
  workspaceId: string;
  userId: string;
  transport: 'http' | 'socket';
  url?: string;
  createdAt: string;
}
/** The state a delivery is in from `at` on; each field not given is unset. */
export interface StateChange {
  at: string;
  state: DeliveryState;
  nextAttemptAt?: string;
  /** Why a cancelled delivery was cancelled. */
  cancelReason?: string;
  /** An interactive call: what the triggering user sees (the app's message, or the offline message). */
  ephemeralMessage?: string;
}
/** A delivery as users see it (the API, the CLI, the console): assembled from its entries. */
export interface DeliveryRecord extends DeliveryHead {
  updatedAt: string;
  state: DeliveryState;
  outcome?: Outcome;
  /** What the triggering user sees: the app's message, or the offline message on failure. */
  ephemeralMessage?: string;
  /** The app's answer body (modal or menu response, ack body). */
  response?: unknown;
  /** What was sent; null when read back from disk for a trigger that succeeded (not kept there). */
  payload: Record<string, unknown>;
  attempts: AttemptEntry[];
  nextAttemptAt?: string;
  /** Why a cancelled delivery was cancelled. */
  cancelReason?: string;
}

// ---- the log's tables on PostgreSQL (delivery/store-log.ts) ----

/**
 * A delivery's beginning: what lists and prunes need at the top level. `rec`: a whole delivery, as an earlier appreg
 * wrote it.
 */
export interface StoredHead {
  id: string;
  appId: string;
  ownerId: string;
  createdAt: string;
  /** Order of beginnings (the later of two created in the same millisecond lists first). */
  seq: number;
  head?: DeliveryHead;
  payload?: Record<string, unknown>;
  rec?: DeliveryRecord;
}
export interface StoredAttempt {
  id: string;
  deliveryId: string;
  seq: number;
  attempt: AttemptRecord;
}
export interface StoredState {
  id: string;
  state: StateChange;
}

// ---- events waiting for an attempt (delivery/pending.ts) ----

export interface PendingDelivery {
  id: string;
  appId: string;
  workspaceId: string;
  userId: string;
  eventType: string;
  /**
   * What is sent; where `bodyId` names a shared body, only the payload's `workspaceUserIds` (the rest is built again
   * from this record and that body).
   */
  payload: Record<string, unknown>;
  /**
   * The event body this delivery shares with the others of its event (delivery/event-bodies.ts): the id
   * of its record, which holds the payload's `body`. Absent in records holding their own body (an
   * app event, deliver-test, and every record an earlier appreg wrote).
   */
  bodyId?: string;
  /** Number of the next attempt of the schedule (0 = first). */
  retryNum: number;
  /** Attempts replays made meanwhile (numbered among the event's attempts, outside its schedule). */
  replays?: number;
  /**
   * Attempts that may have reached the app though their outcome was never recorded (the daemon making
   * them died, or could not write): numbered among the event's attempts, outside its schedule, so that
   * the event comes again marked as a retry (delivery/pending.ts mayHaveBeenSent).
   */
  unrecorded?: number;
  /** When the next attempt is due (ms); while leased, when the lease holder is presumed dead. */
  nextAt: number;
  createdAt: string;
  /** The daemon making the attempt now, and until when it may (set by store.claim). */
  leaseOwner?: string;
  leaseUntil?: number;
  /** The daemon whose lease (one that ran out) this one took over: set by store.claim. */
  leaseTakenFrom?: string;
}

/**
 * The body of a workspace event, stored once for every app it goes to (delivery/event-bodies.ts): `body` is the
 * payload's JSON-encoded `body` string, as sent. `id`: the event's outbox id.
 */
export interface EventBody {
  id: string;
  body: string;
}

// ---- socket mode ----

export interface TicketRecord {
  id: string;
  appId: string;
  exp: number;
}
export interface QueuedEvent {
  id: string;
  appId: string;
  seq: number;
  payload: Record<string, unknown>;
  queuedAt: number;
  expiresAt: number;
}
/** A kept event that went out: a later engine retry of the same delivery id is acked without resending. */
export interface SentMark {
  id: string;
  appId: string;
  sentAt: number;
  expiresAt: number;
}
/** `connections`: the holder's open connections of the app when written (absent in records of older daemons: one). */
export interface HolderRecord {
  id: string;
  appId: string;
  instanceId: string;
  expiresAt: number;
  connections?: number;
}
/**
 * A relayed attempt's payload or reply too large for a store hint (socket-relay.ts): read once by the daemon it is for.
 */
export interface RelayRecord {
  id: string;
  msg: unknown;
  expiresAt: number;
}
