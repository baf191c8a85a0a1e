/**
 * The delivery log of the embedded store's one daemon: JSON lines under <data-dir>/deliveries/,
 * out of the main data document (appending here never slows app and token writes). One line per
 * entry (log.ts), appended and never rewritten:
 *   {"id":"dlv_…","begun":{…what it is…,"payload":…},"attempt":{…},"state":{…}}
 * with any of begun, attempt and state. A delivered trigger's line keeps no payload (null; a third
 * of the bytes, and the log is the delivery path's main cost): it stays in memory for show and replay
 * until evicted. An event body shared by several deliveries of one write (a fan-out) is written once,
 * on a line {"body":…,"text":…} before theirs, and their payloads refer to it (linesOf). A line an
 * earlier appreg wrote (the whole delivery as it then was, the latest line of an id winning) is read
 * as such.
 *
 * Files are rotated by size, the oldest removed past deliveryLogMaxBytes or deliveryLogRetentionDays;
 * entries whose delivery began in a removed file are skipped when read back. The last MAX_INDEXED
 * deliveries are assembled in memory for list and show (this daemon is the only writer, so they
 * cannot go stale); each is replaced, never changed, by the next entry about it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { applyEntry, byCreationDesc, entriesOf, listed, MAX_INDEXED, type DeliveryLog, type LogEntry } from './log.js';
import type { AttemptRecord, DeliveryHead, DeliveryRecord, StateChange } from '../model/delivery.js';
import { must } from '../must.js';
import { fieldOf, messageOf } from '../unknown-values.js';

const FILE_RE = /^log-(\d{8})\.jsonl$/;
/**
 * Lines are gathered this long and written together: at thousands of deliveries a second, one write instead of
 * hundreds. On the runtime's timer, not the daemon's clock: it groups writes, it keeps no time anyone sees (reads
 * come from memory; close and flush write what is gathered).
 */
const GATHER_MS = 5;

export interface FileLogOptions {
  dir: string;
  maxBytes: number;
  retentionDays: number;
  clock: Clock;
  logger: Logger;
}

/**
 * An event's body (the JSON-encoded string of its payload's `body`) at least this long, carried by two entries or
 * more of one write, is written once, on a line of its own before them, and each of them refers to it: a fan-out to
 * a hundred apps writes the message once, not a hundred times.
 */
const SHARED_BODY_MIN = 128;

/** The payload's shared body, or undefined when its line keeps the body itself. */
function bodyOf(e: LogEntry): string | undefined {
  const b = e.begun;
  if (!b || b.head.kind !== 'event') return undefined;
  const body = b.payload.body;
  return typeof body === 'string' && body.length >= SHARED_BODY_MIN ? body : undefined;
}

/**
 * The line of one entry; the payload's JSON is the exact text sent (`raw`), spliced in, not serialised again. With
 * `ref`, the payload's body is written as `{"$body":ref}`, the id of the line that holds it (linesOf).
 */
function lineOf(e: LogEntry, ref?: string): string {
  let line = `{"id":${JSON.stringify(e.id)}`;
  if (e.begun) {
    const keepPayload = e.begun.head.kind === 'event' || e.state?.state !== 'delivered';
    let payload = keepPayload ? e.begun.raw : 'null';
    if (ref !== undefined) {
      const copy = Object.assign({}, e.begun.payload); // the same keys in the same order: read back as sent
      copy.body = { $body: ref };
      payload = JSON.stringify(copy);
    }
    line += `,"begun":${JSON.stringify(e.begun.head).slice(0, -1)},"payload":${payload}}`;
  }
  if (e.attempt) line += `,"attempt":${JSON.stringify(e.attempt)}`;
  if (e.state) line += `,"state":${JSON.stringify(e.state)}`;
  return line + '}\n';
}

/** A line as lineOf writes it: an entry, the head and the payload of its beginning side by side. */
interface EntryLine {
  id: string;
  begun?: DeliveryHead & { payload: Record<string, unknown> };
  attempt?: AttemptRecord;
  state?: StateChange;
}

/** A line an earlier appreg wrote: a whole delivery (its state a word, its attempts a list). */
const isWholeDelivery = (o: EntryLine | DeliveryRecord): o is DeliveryRecord =>
  'attempts' in o && Array.isArray(o.attempts) && typeof o.state === 'string';

/** A shared body's line, as linesOf writes it: the id it is known by and its text. */
interface BodyLine {
  body: string;
  text: string;
  id?: undefined;
}

/**
 * The lines of `entries`, written together: a body two or more of them share (SHARED_BODY_MIN) goes first, once, as
 * `{"body":ref,"text":…}` (ref: the id of the first delivery that carries it, unique in the log), and their lines
 * refer to it. A write never spans two files, so a body is always in the file of the lines that refer to it, before
 * them.
 */
function linesOf(entries: LogEntry[]): string {
  let seen: Map<string, { ref: string; count: number }> | undefined;
  for (const e of entries) {
    const body = bodyOf(e);
    if (body === undefined) continue;
    seen ??= new Map();
    const s = seen.get(body);
    if (s) s.count++;
    else seen.set(body, { ref: e.id, count: 1 });
  }
  let out = '';
  const written = new Set<string>();
  for (const e of entries) {
    const body = bodyOf(e);
    const s = body === undefined ? undefined : seen?.get(body);
    if (!s || s.count < 2) {
      out += lineOf(e);
      continue;
    }
    if (!written.has(s.ref)) {
      written.add(s.ref);
      out += `{"body":${JSON.stringify(s.ref)},"text":${JSON.stringify(body)}}\n`;
    }
    out += lineOf(e, s.ref);
  }
  return out;
}

/**
 * A line read back: an entry, or (written by an earlier appreg) a whole delivery; undefined when it is neither. A
 * shared body's line is kept in `bodies` (of this file); an entry whose body is not there (its line torn) is none.
 */
function parseLine(line: string, bodies: Map<string, string>): LogEntry | DeliveryRecord | undefined {
  // the file is this log's own: its lines are what linesOf (or an earlier appreg) wrote
  const o = JSON.parse(line) as EntryLine | DeliveryRecord | BodyLine | null;
  if (o && 'body' in o && typeof o.body === 'string' && typeof o.text === 'string' && o.id === undefined) {
    bodies.set(o.body, o.text);
    return undefined;
  }
  if (!o || typeof o.id !== 'string') return undefined;
  if (isWholeDelivery(o)) return o;
  const entry: LogEntry = { id: o.id };
  if (o.begun && typeof o.begun === 'object') {
    const { payload, ...head } = o.begun;
    const shared = fieldOf(payload?.body, '$body');
    if (payload && typeof shared === 'string') {
      const text = bodies.get(shared);
      if (text === undefined) return undefined;
      payload.body = text;
    }
    entry.begun = { head, payload, raw: '' };
  }
  if (o.attempt && typeof o.attempt === 'object') entry.attempt = o.attempt;
  if (o.state && typeof o.state === 'object') entry.state = o.state;
  return entry;
}

function endsWithNewline(file: string, size: number): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const last = Buffer.alloc(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    fs.closeSync(fd);
  }
}

const isEntry = (x: LogEntry | DeliveryRecord): x is LogEntry => !('attempts' in x);

const logFiles = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => FILE_RE.test(f))
    .sort();

/**
 * Read the log files in `dir`, oldest first, each line applied to the delivery `keep` holds of its
 * id and the result handed back to `keep`; unreadable files and lines (a torn one from a crash) are
 * skipped. The log keeps the newest MAX_INDEXED so; `readAllLogFiles` keeps every one.
 */
function readLogFiles(
  dir: string,
  keep: { get(id: string): DeliveryRecord | undefined; set(rec: DeliveryRecord): void },
): void {
  let names: string[];
  try {
    names = logFiles(dir);
  } catch {
    return;
  }
  for (const f of names) {
    let text: string;
    try {
      text = fs.readFileSync(path.join(dir, f), 'utf8');
    } catch {
      continue;
    }
    const bodies = new Map<string, string>();
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const read = parseLine(line, bodies);
        if (!read) continue;
        const rec = isEntry(read) ? applyEntry(keep.get(read.id), read) : read;
        if (rec) keep.set(rec);
      } catch {
        /* a torn line from a crash */
      }
    }
  }
}

/** Every delivery of the log files in `dir`, in the order of its last change (oldest first); none without them. */
export function readAllLogFiles(dir: string): DeliveryRecord[] {
  const all = new Map<string, DeliveryRecord>();
  readLogFiles(dir, {
    get: (id) => all.get(id),
    set(rec) {
      all.delete(rec.id); // a later line moves it to the end
      all.set(rec.id, rec);
    },
  });
  return [...all.values()];
}

/**
 * Write `recs` as a new log in `dir` (which holds none): their entries, one line each, oldest first; 0600 in a 0700
 * folder.
 */
export function writeLogFile(dir: string, recs: DeliveryRecord[]): void {
  if (!recs.length) return;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'log-00000001.jsonl'), linesOf(recs.flatMap(entriesOf)), {
    mode: 0o600,
    flag: 'wx',
  });
}

export function openFileDeliveryLog(opts: FileLogOptions): DeliveryLog {
  const { dir, clock, logger } = opts;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fileBytes = Math.max(64 * 1024, Math.floor(opts.maxBytes / 4));
  const retentionMs = opts.retentionDays * 86_400_000;
  // id → the delivery as its entries make it, plus the order of entries (newest last). A Map used as
  // a queue (delete the first key on every entry) makes V8 scan its deleted slots each time:
  // measured at ~20 µs per entry with 20,000 deliveries, so the order lives in an array.
  const index = new Map<string, { rec: DeliveryRecord; seq: number }>();
  let order: Array<{ id: string; seq: number }> = [];
  let head = 0;
  let seqNo = 0;
  const remember = (rec: DeliveryRecord) => {
    const seq = ++seqNo;
    Object.freeze(rec.attempts);
    index.set(rec.id, { rec: Object.freeze(rec), seq });
    order.push({ id: rec.id, seq });
    while (index.size > MAX_INDEXED && head < order.length) {
      const o = must(order[head++]);
      if (index.get(o.id)?.seq === o.seq) index.delete(o.id);
    }
    if (head > 4096 && head * 2 > order.length) {
      order = order.slice(head).filter((o) => index.get(o.id)?.seq === o.seq);
      head = 0;
    }
  };

  const files = () => logFiles(dir);

  // Assemble the deliveries from what is on disk, oldest first (the newest MAX_INDEXED stay).
  readLogFiles(dir, { get: (id) => index.get(id)?.rec, set: remember });
  const cutoff = clock.now() - retentionMs;
  for (const [id, e] of index) if (Date.parse(e.rec.updatedAt) < cutoff) index.delete(id);

  const listeners = new Set<(rec: DeliveryRecord) => void>();

  let current = files().at(-1);
  let currentSize = current ? fs.statSync(path.join(dir, current)).size : 0;
  // a crash may have torn the last line: the next write starts on a line of its own, not glued to it
  let tornTail = currentSize > 0 && !endsWithNewline(path.join(dir, must(current)), currentSize);
  let queue: LogEntry[] = [];
  let writing: Promise<void> | null = null;
  // (The log is a record for people; what must survive a crash, pending retries, is in the main store.)
  let scheduled: NodeJS.Timeout | undefined;
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
    const next = current ? Number(must(FILE_RE.exec(current))[1]) + 1 : 1;
    current = `log-${String(next).padStart(8, '0')}.jsonl`;
    currentSize = 0;
    tornTail = false;
    prune();
  }

  async function drain() {
    while (queue.length) {
      let batch = linesOf(queue);
      queue = [];
      if (!current || currentSize + batch.length > fileBytes) rotate();
      if (tornTail) {
        batch = '\n' + batch;
        tornTail = false;
      }
      try {
        if (handleFor !== current) {
          await handle?.close();
          handle = await fs.promises.open(path.join(dir, must(current)), 'a', 0o600);
          handleFor = current;
        }
        await must(handle).write(batch);
        currentSize += Buffer.byteLength(batch);
      } catch (e) {
        logger.error('delivery log write failed', { error: messageOf(e) });
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
    append(e) {
      const rec = applyEntry(index.get(e.id)?.rec, e);
      if (rec) remember(rec);
      queue.push(e);
      if (!writing && !scheduled) scheduled = setTimeout(startDrain, GATHER_MS);
      if (!rec) return;
      for (const l of listeners) {
        try {
          l(rec);
        } catch (err) {
          logger.error('delivery log listener failed', { error: messageOf(err) });
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
