/**
 * The contract between the delivery dispatcher and its transports: HTTP, and socket mode.
 * The dispatcher builds the payload (docs/protocol.md §5), records every attempt in the
 * delivery log, and hands one attempt at a time to a Transport: HTTP for ordinary apps,
 * the websocket transport for apps with `socketMode: true`.
 */
import type { AppRecord, AppSecrets } from '../model/identity.js';
import type { Change, Expectation } from '../store/types.js';
import type { Outcome } from '../model/delivery.js';

// socket mode: no open connection for the app

export interface SendRequest {
  deliveryId: string;
  attemptId: string;
  app: AppRecord;
  /** HTTP target (undefined for socket mode). */
  url?: string;
  /** The exact body object of docs/protocol.md §5. */
  payload: Record<string, unknown>;
  /** JSON.stringify(payload), when the engine has it already (HTTP signs and sends exactly these bytes). */
  rawPayload?: string;
  interactive: boolean;
  /** Milliseconds from the start of the attempt until it counts as a timeout. */
  budgetMs: number;
  retryNum: number;
  signingSecret: string;
}

/**
 * What socket mode sends with: a SendRequest whose app is known by its id alone (a connection is
 * picked by it; an attempt relayed from another daemon carries no more of the app).
 */
export type SocketSendRequest = Omit<SendRequest, 'app'> & { app: Pick<AppRecord, 'id'> };

export interface AttemptResult {
  outcome: Outcome;
  /** HTTP status (or the socket reply's status). */
  status?: number;
  latencyMs: number;
  /** Parsed JSON answer when there was one. */
  body?: unknown;
  /** Capped text excerpt of the answer for the log. */
  excerpt?: string;
  /** The `message` of an ack/nack, to show to the user as an ephemeral message. */
  message?: string;
  /** A short, secret-free description of a failure. */
  error?: string;
  /** HTTP: the timestamp and signature headers the attempt was sent with. */
  signed?: { timestamp: string; signature: string };
  /** HTTP: the headers of the app's answer (name, value), capped. */
  answerHeaders?: Array<[string, string]>;
}

/**
 * The apps delivery reads (an event's app, a signing secret): defined here, implemented by
 * services/apps.ts and handed in by the composition root, so delivery imports no service.
 */
export interface AppDirectory {
  byId(id: string): Promise<AppRecord | undefined>;
  secretsOf(app: AppRecord): AppSecrets;
}

export interface Transport {
  send(req: SendRequest): Promise<AttemptResult>;
}

/** One event for one app: to whom it goes, and what. */
export interface EventToSend {
  app: AppRecord;
  workspaceId: string;
  userId: string;
  eventType: string;
  payload: Record<string, unknown>;
  /** The delivery's id, when it is decided by what the event is (outbox-drain.ts deliveryIdOf); else a new one. */
  id?: string;
  /**
   * The shared body record (event-bodies.ts) that holds `payload.body` (an event envelope, as eventPayload builds
   * it), written in the same commit: the pending record names it and keeps the payload's users.
   */
  bodyId?: string;
  /** Attempts that may have reached the app already, unrecorded (its first one here is then marked a retry). */
  unrecorded?: number;
  /** `payload` serialised, when the drain built it from text shared by the event's apps (event-bodies.ts). */
  raw?: string;
}

/** Conditions of the write that queues events: `extra` changes in the same commit, if `expect` holds. */
export interface EnqueueOptions {
  extra?: Change[];
  expect?: Expectation[];
  /** The first attempt's timeout (deliver-test --timeout-ms); retries use the configured one. */
  timeoutMs?: number;
}
