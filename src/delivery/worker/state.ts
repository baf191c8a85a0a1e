/**
 * What the delivery worker's stages share (worker.ts runs them: claim → prepare → send → classify →
 * record → schedule): the worker's dependencies, the state kept across attempts (which events this
 * daemon holds, what the socket-mode queue settled meanwhile, whether it stops), and the state of
 * one attempt, carried from stage to stage.
 */
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/types.js';
import type { AppRecord } from '../../model/identity.js';
import type { AttemptRecord, PendingDelivery } from '../../model/delivery.js';
import type { Dispatcher } from '../dispatcher.js';
import type { Outgoing } from '../log.js';
import type { EventAudience } from '../outbox-drain.js';
import { mayHaveBeenSent, type Ours } from '../pending.js';
import { parseSchedule } from '../retry-policy.js';
import type { SocketTransport } from '../socket-transport.js';
import type { AppDirectory, AttemptResult } from '../types.js';
import { createEndBatches, type EndBatches } from './end-batch.js';

export interface WorkerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'deliveryRetrySchedule' | 'deliveryEventTimeoutMs'> & Partial<Pick<Config, 'deliveryLeaseMs'>>;
  apps: AppDirectory;
  dispatcher: Dispatcher;
  socket: SocketTransport;
  /** This daemon, as the owner of the leases it takes. */
  instanceId: string;
  /**
   * Whether this daemon is the store's only one (the embedded store): then leases left by its earlier
   * run are void at start and taken over at once, not when they run out (pending.ts takeOverDeadLeases).
   */
  soleDaemon: boolean;
  /** Who a workspace event in the outbox goes to (services/workspace/events.ts). */
  audience: EventAudience;
  /** Told whenever the events outbox may have been written, by this daemon or another (services/outbox-writer.ts). */
  outboxWritten(listener: () => void): () => void;
}

/** The worker's state across attempts, and what its stages use. */
export interface WorkerState {
  readonly deps: WorkerDeps;
  /**
   * How long an attempt's lease lasts (another daemon takes the event over when it runs out): never
   * shorter than an attempt can take, or a slow attempt would be made twice.
   */
  readonly leaseMs: number;
  /** The retry schedule's delays (retry-policy.ts). */
  readonly schedule: readonly number[];
  /** Events this daemon is attempting (or settling) now. */
  readonly inFlight: Set<string>;
  /**
   * Events that left inFlight while a claim was under way: the claim may have renewed this daemon's
   * lease on one of them just before its attempt ended (and the record went), and still return it.
   */
  leftDuringClaim: Set<string> | undefined;
  /** How kept socket-mode events ended while an attempt of theirs was in flight (taken by that attempt). */
  readonly keptWhileInFlight: Map<string, AttemptResult>;
  /** No new attempts: the worker stops. */
  stopped: boolean;
  /** A record this daemon holds stays its own to change while the lease is its own (our claim may renew it). */
  readonly mine: Ours;
  /** Whoever holds the record: the socket-mode queue's word on an event stands. */
  readonly anyone: Ours;
  /** Look for due events at `at` at the latest (the poller's pace may be slower while idle). */
  wakeAt(at: number): void;
  /** The deletions of ended events, committed in batches (end-batch.ts). */
  readonly ends: EndBatches;
}

export function createWorkerState(deps: WorkerDeps, wakeAt: (at: number) => void): WorkerState {
  return {
    deps,
    leaseMs: Math.max(deps.config.deliveryLeaseMs ?? 30_000, deps.config.deliveryEventTimeoutMs + 1000),
    schedule: parseSchedule(deps.config.deliveryRetrySchedule),
    inFlight: new Set(),
    leftDuringClaim: undefined,
    keptWhileInFlight: new Map(),
    stopped: false,
    mine: (cur) => cur.leaseOwner === deps.instanceId,
    anyone: () => true,
    wakeAt,
    ends: createEndBatches(deps.store),
  };
}

/** An event is no longer held here (its attempt or settling ended). */
export function settled(w: WorkerState, id: string): void {
  w.inFlight.delete(id);
  w.leftDuringClaim?.add(id);
}

/**
 * What follows an attempt: `delivered` (acked or answered), `retry` (at `retryAt`), `failed` (refused
 * for good, the schedule ran out, or the socket-mode queue's word was final), `released` (the worker
 * stops: the event stays pending, free for the next daemon at once).
 */
type Verdict = 'delivered' | 'retry' | 'failed' | 'released';

/**
 * How an attempt of an event ended, and what follows (classify fills it): what record writes and
 * schedule acts on. The socket-mode queue's word on a kept event (worker.ts keptSettled) is one too.
 */
export interface Finished {
  readonly p: PendingDelivery;
  readonly app: AppRecord;
  /** Whose change of the pending record stands. */
  readonly ours: Ours;
  /** The attempts to log: this one, and the queue's if it settled the event meanwhile. */
  attempts: readonly AttemptRecord[];
  result: AttemptResult;
  /** The socket-mode queue's word: no retry, whatever it was. */
  final: boolean;
  verdict: Verdict;
  /** For a retry: when. */
  retryAt: number;
  /** For a retry: the pending record that waits for it (record writes it). */
  next: PendingDelivery | undefined;
}

/**
 * One attempt of an event this daemon holds, carried from prepare to schedule: the one object an
 * attempt allocates beyond what its steps make anyway. prepare fills the first part.
 */
export interface Attempt extends Finished {
  readonly out: Outgoing;
  /** Attempts made before this one (the header apps see). */
  readonly retryNum: number;
  readonly timeoutMs: number;
}

/** Before send: no attempt made, no result yet (classify replaces both). */
export const NO_ATTEMPTS: readonly AttemptRecord[] = Object.freeze([]);
export const NOT_SENT: AttemptResult = Object.freeze({ outcome: 'connection_error', latencyMs: 0, error: 'not sent' });

/** Where an app's events go now (its manifest may change between attempts). */
const eventUrl = (app: AppRecord) => app.manifest.eventSubscriptions?.url || undefined;

/**
 * The event as a delivery to send: built again from the pending record for each retry. `payload`: the record's with
 * its body (event-bodies.ts payloadOf), where the record holds a shared one; `raw`: its text, when the drain has it.
 */
export function outgoingOf(
  w: WorkerState,
  app: AppRecord,
  p: PendingDelivery,
  payload: Record<string, unknown> = p.payload,
  raw?: string,
): Outgoing {
  return w.deps.dispatcher.outgoing(app, 'event', p, eventUrl(app), payload, { id: p.id, createdAt: p.createdAt, raw });
}

/**
 * The number of attempts made before the next one: the schedule's, the replays', and those that may
 * have reached the app unrecorded (pending.ts mayHaveBeenSent): an event that comes again is marked.
 */
export const attemptNumber = (p: PendingDelivery) => p.retryNum + (p.replays ?? 0) + mayHaveBeenSent(p);
