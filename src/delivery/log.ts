/**
 * The delivery log: every delivery and each of its attempts. Two implementations behind one
 * interface; the composition root picks one with the store:
 * - embedded store (one daemon): kept out of the main data document (appending here never slows
 *   app and token writes): JSON lines under <data-dir>/deliveries/, one line per change of a
 *   delivery (the latest line of an id wins), files rotated by size, the oldest removed past
 *   deliveryLogMaxBytes or deliveryLogRetentionDays. Recent deliveries are indexed in memory
 *   for list/show (that daemon is the only writer, so the index cannot go stale).
 * - PostgreSQL (several daemons): records in the database (store-log.ts), so every daemon
 *   shows every delivery.
 * Reads are async for both, so callers do not care which one they have.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { DeliveryKind, Outcome } from './types.js';

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

/** `cancelled`: a retrying event ended by `deliveries cancel`, or because its app was deleted. */
type DeliveryState = 'pending' | 'delivered' | 'failed' | 'retrying' | 'cancelled';

export interface DeliveryRecord {
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

export interface DeliveryLog {
  /**
   * Record the delivery's current state (written in the background: a get right after answers it);
   * `rawPayload` is JSON.stringify(rec.payload) when the caller has it.
   */
  put(rec: DeliveryRecord, rawPayload?: string): void;
  /** The record as last put (on PostgreSQL a copy: change it and put it again). */
  get(id: string): Promise<DeliveryRecord | undefined>;
  list(filter: { ownerId: string; appId?: string; failed?: boolean; limit?: number }): Promise<DeliveryRecord[]>;
  /** Call `listener` after every put, by any daemon of the store (the console's live pages); returns the unsubscribe. */
  onChange(listener: (rec: DeliveryRecord) => void): () => void;
  /** Bytes written to disk so far (tests, benchmarks). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

const FILE_RE = /^log-(\d{8})\.jsonl$/;
export const MAX_INDEXED = 20_000;

export interface DeliveryLogOptions {
  dir: string;
  maxBytes: number;
  retentionDays: number;
  clock: Clock;
  logger: Logger;
}

/** A delivered trigger is kept without its payload (a third of the bytes; the payload is null when read back). */
const keepsPayload = (rec: DeliveryRecord): boolean => rec.kind === 'event' || rec.state !== 'delivered';

/** Newest first by creation time (what the list shows); created in the same millisecond: the one recorded last first. */
export const byCreationDesc = (a: { rec: DeliveryRecord; seq: number }, b: { rec: DeliveryRecord; seq: number }): number =>
  a.rec.createdAt < b.rec.createdAt ? 1 : a.rec.createdAt > b.rec.createdAt ? -1 : b.seq - a.seq;

/** Whether `r` is listed under `filter`. */
export function listed(r: DeliveryRecord, f: { ownerId: string; appId?: string; failed?: boolean }): boolean {
  if (r.ownerId !== f.ownerId) return false;
  if (f.appId && r.appId !== f.appId) return false;
  return !f.failed || r.state === 'failed' || r.state === 'retrying';
}

/** The delivery log of a daemon that is its store's only one: JSON lines in `dir`. */
export function openFileDeliveryLog(opts: DeliveryLogOptions): DeliveryLog {
  const { dir, clock, logger } = opts;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fileBytes = Math.max(64 * 1024, Math.floor(opts.maxBytes / 4));
  const retentionMs = opts.retentionDays * 86_400_000;
  // id → latest state, plus the order of puts (newest last). A Map used as a queue
  // (delete the first key on every put) makes V8 scan its deleted slots each time:
  // measured at ~20 µs per put with 20,000 entries, so the order lives in an array.
  const index = new Map<string, { rec: DeliveryRecord; seq: number }>();
  let order: Array<{ id: string; seq: number }> = [];
  let head = 0;
  let seqNo = 0;
  const remember = (rec: DeliveryRecord) => {
    const seq = ++seqNo;
    index.set(rec.id, { rec, seq });
    order.push({ id: rec.id, seq });
    while (index.size > MAX_INDEXED && head < order.length) {
      const o = order[head++]!;
      if (index.get(o.id)?.seq === o.seq) index.delete(o.id);
    }
    if (head > 4096 && head * 2 > order.length) {
      order = order.slice(head).filter((o) => index.get(o.id)?.seq === o.seq);
      head = 0;
    }
  };

  const files = () =>
    fs.readdirSync(dir).filter((f) => FILE_RE.test(f)).sort();

  // Rebuild the index from what is on disk, oldest first; unreadable lines are skipped.
  const cutoff = clock.now() - retentionMs;
  for (const f of files()) {
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, f), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const rec = JSON.parse(line) as DeliveryRecord;
        if (!rec || typeof rec.id !== 'string') continue;
        if (Date.parse(rec.updatedAt) < cutoff) continue;
        remember(rec);
      } catch {
        /* a torn line from a crash */
      }
    }
  }

  const listeners = new Set<(rec: DeliveryRecord) => void>();

  let current = files().at(-1);
  let currentSize = current ? fs.statSync(path.join(dir, current)).size : 0;
  let queue: string[] = [];
  let writing: Promise<void> | null = null;
  // Lines are gathered for a few milliseconds and written together: at thousands of
  // deliveries a second that is one write instead of hundreds. (The log is a record for
  // people; what must survive a crash, pending retries, is in the main store.)
  let scheduled: NodeJS.Timeout | undefined;
  const GATHER_MS = 5;
  const startDrain = () => {
    scheduled = undefined;
    writing ??= drain();
  };
  let handle: fs.promises.FileHandle | undefined;
  let handleFor: string | undefined;

  function prune() {
    const list = files();
    let total = list.reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    for (const f of list.slice(0, -1)) {
      const p = path.join(dir, f);
      const st = fs.statSync(p);
      if (total > opts.maxBytes || st.mtimeMs < clock.now() - retentionMs) {
        fs.rmSync(p, { force: true });
        total -= st.size;
      }
    }
  }

  function rotate() {
    const next = current ? Number(FILE_RE.exec(current)![1]) + 1 : 1;
    current = `log-${String(next).padStart(8, '0')}.jsonl`;
    currentSize = 0;
    prune();
  }

  async function drain() {
    while (queue.length) {
      const batch = queue.join('');
      queue = [];
      if (!current || currentSize + batch.length > fileBytes) rotate();
      try {
        if (handleFor !== current) {
          await handle?.close();
          handle = await fs.promises.open(path.join(dir, current!), 'a', 0o600);
          handleFor = current;
        }
        await handle!.write(batch);
        currentSize += Buffer.byteLength(batch);
      } catch (e) {
        logger.error('delivery log write failed', { error: (e as Error).message });
      }
    }
    writing = null;
    if (queue.length && !scheduled) scheduled = setTimeout(startDrain, GATHER_MS);
  }

  async function flush() {
    if (scheduled) {
      clearTimeout(scheduled);
      startDrain();
    }
    while (writing) await writing;
  }

  return {
    put(rec, rawPayload) {
      remember(rec);
      let line: string | undefined;
      // A trigger the app answered well is recorded without its payload (it stays in memory for
      // show/replay until evicted): a third of the bytes, and the log is the delivery path's main cost.
      const keepPayload = keepsPayload(rec);
      if (!keepPayload || rawPayload !== undefined) {
        // Serialise the record with a stand-in and splice the payload's JSON (or null) in.
        // `,"payload":0` cannot occur inside a JSON string (a quote there is always escaped).
        const payload = rec.payload;
        (rec as { payload: unknown }).payload = 0;
        const text = JSON.stringify(rec);
        rec.payload = payload;
        const at = text.indexOf(',"payload":0');
        if (at !== -1) line = `${text.slice(0, at)},"payload":${keepPayload ? rawPayload : 'null'}${text.slice(at + 12)}\n`;
      }
      queue.push(line ?? JSON.stringify(rec) + '\n');
      if (!writing && !scheduled) scheduled = setTimeout(startDrain, GATHER_MS);
      for (const l of listeners) {
        try {
          l(rec);
        } catch (e) {
          logger.error('delivery log listener failed', { error: (e as Error).message });
        }
      }
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get: async (id) => index.get(id)?.rec,
    /** Newest first by creation time (what the list shows), whatever was updated last. */
    async list(filter) {
      const out: Array<{ rec: DeliveryRecord; seq: number }> = [];
      for (const e of index.values()) if (listed(e.rec, filter)) out.push(e);
      out.sort(byCreationDesc);
      return out.slice(0, filter.limit ?? 50).map((e) => e.rec);
    },
    flush,
    async close() {
      await flush();
      await handle?.close();
      handle = undefined;
      handleFor = undefined;
    },
  };
}
