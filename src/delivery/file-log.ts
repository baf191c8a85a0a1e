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
 * deliveries are held in memory for list and show as their lines, payload kept, and assembled only
 * when read (held-deliveries.ts; this daemon is the only writer, so they cannot go stale).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { applyEntry, entriesOf, type DeliveryLog, type LogEntry } from './log.js';
import { createHeldDeliveries } from './held-deliveries.js';
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
/** The largest write encoded into the buffer kept for writes (a larger one gets a buffer of its own). */
const MAX_SPARE = 4 * 1024 * 1024;

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
 * An entry's line in two parts, serialised once: the line is `start`, then (when the entry begins its delivery) the
 * payload's JSON, then `end`. The payload is spliced in, not serialised again: the exact text sent (`raw`) in the
 * line held in memory (held-deliveries.ts), and in the line written the same, `null`, or the body referred to.
 */
class EntryText {
  readonly start: string;
  readonly end: string;
  constructor(e: LogEntry) {
    let start = `{"id":${JSON.stringify(e.id)}`;
    if (e.begun) start += `,"begun":${JSON.stringify(e.begun.head).slice(0, -1)}`;
    let end = '';
    if (e.attempt) end += `,"attempt":${JSON.stringify(e.attempt)}`;
    if (e.state) end += `,"state":${JSON.stringify(e.state)}`;
    this.start = start;
    this.end = `${end}}`;
  }

  /** The line, without its newline; `payload`: the payload's JSON, for an entry that begins its delivery. */
  line(payload: string | undefined): string {
    return payload === undefined ? this.start + this.end : `${this.start},"payload":${payload}}${this.end}`;
  }
}

/** Whether `e`'s line is written with its payload: all but a delivered trigger's (whose line keeps none). */
const writesPayload = (e: LogEntry): boolean =>
  !e.begun || e.begun.head.kind === 'event' || e.state?.state !== 'delivered';

/** The payload's JSON as held in memory: always kept. */
const heldPayload = (e: LogEntry): string | undefined => e.begun && (e.begun.raw || JSON.stringify(e.begun.payload));

/**
 * The line written for an entry, without its newline: a delivered trigger's keeps no payload (null). With `ref`, the
 * payload's body is written as `{"$body":ref}`, the id of the line that holds it (linesOf).
 */
function lineOf(e: LogEntry, t: EntryText, ref?: string): string {
  if (!e.begun) return t.line(undefined);
  if (ref !== undefined) {
    const copy = Object.assign({}, e.begun.payload); // the same keys in the same order: read back as sent
    copy.body = { $body: ref };
    return t.line(JSON.stringify(copy));
  }
  return t.line(writesPayload(e) ? heldPayload(e) : 'null');
}

/**
 * An entry waiting to be written: its line when it is known already, or (its event body may be shared with others of
 * its write: linesOf) the entry and its text.
 */
type Queued = string | { e: LogEntry; t: EntryText };

/** `e` as queued; `held`, when given, is its line as held in memory (written as it is when it keeps its payload). */
function queued(e: LogEntry, t: EntryText, held?: string): Queued {
  if (bodyOf(e) !== undefined) return { e, t };
  return writesPayload(e) && held !== undefined ? held : lineOf(e, t);
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
function linesOf(entries: Queued[]): string {
  let seen: Map<string, { ref: string; count: number }> | undefined;
  for (const q of entries) {
    if (typeof q === 'string') continue;
    const body = bodyOf(q.e);
    if (body === undefined) continue;
    seen ??= new Map();
    const s = seen.get(body);
    if (s) s.count++;
    else seen.set(body, { ref: q.e.id, count: 1 });
  }
  // joined, not concatenated: one flat string to write, not a tree of every part of every line
  const out: string[] = [];
  const written = new Set<string>();
  for (const q of entries) {
    if (typeof q === 'string') {
      out.push(q);
      continue;
    }
    const body = bodyOf(q.e);
    const s = body === undefined ? undefined : seen?.get(body);
    if (!s || s.count < 2) {
      out.push(lineOf(q.e, q.t));
      continue;
    }
    if (!written.has(s.ref)) {
      written.add(s.ref);
      out.push(`{"body":${JSON.stringify(s.ref)},"text":${JSON.stringify(body)}}`);
    }
    out.push(lineOf(q.e, q.t, s.ref));
  }
  out.push('');
  return out.join('\n');
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

/** The bodies of held lines: none (they carry their payloads whole, and no held line is a body's). */
const NO_BODIES = new Map<string, string>();

/**
 * The line `read` was read from, as held in memory (held-deliveries.ts): the line itself, or one carrying the shared
 * body its payload referred to.
 */
function heldLine(read: LogEntry | DeliveryRecord, line: string): string {
  if (!isEntry(read) || !read.begun || !line.includes('"$body"')) return line;
  return new EntryText(read).line(JSON.stringify(read.begun.payload));
}
const logFiles = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => FILE_RE.test(f))
    .sort();

/**
 * Read the log files in `dir`, oldest first, each line handed to `keep` as read (an entry, or a whole delivery) with
 * its text as held in memory (heldLine); unreadable files and lines (a torn one from a crash) are skipped. The log
 * keeps the newest MAX_INDEXED deliveries so; `readAllLogFiles` keeps every one.
 */
function readLogFiles(dir: string, keep: (read: LogEntry | DeliveryRecord, line: string) => void): void {
  let names: string[];
  try {
    names = logFiles(dir);
  } catch {
    return;
  }
  for (const f of names) {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(path.join(dir, f));
    } catch {
      continue;
    }
    const bodies = new Map<string, string>();
    for (let from = 0; from < bytes.length;) {
      let end = bytes.indexOf(0x0a, from);
      if (end < 0) end = bytes.length;
      // each line decoded on its own: a string of its own, not a slice keeping the whole file's text alive
      const line = end > from ? bytes.toString('utf8', from, end) : '';
      from = end + 1;
      if (!line) continue;
      try {
        const read = parseLine(line, bodies);
        if (read) keep(read, heldLine(read, line));
      } catch {
        /* a torn line from a crash */
      }
    }
  }
}

/** Every delivery of the log files in `dir`, in the order of its last change (oldest first); none without them. */
export function readAllLogFiles(dir: string): DeliveryRecord[] {
  const all = new Map<string, DeliveryRecord>();
  readLogFiles(dir, (read) => {
    const rec = isEntry(read) ? applyEntry(all.get(read.id), read) : read;
    if (!rec) return;
    all.delete(rec.id); // a later line moves it to the end
    all.set(rec.id, rec);
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
  const lines = linesOf(recs.flatMap(entriesOf).map((e) => queued(e, new EntryText(e))));
  fs.writeFileSync(path.join(dir, 'log-00000001.jsonl'), lines, {
    mode: 0o600,
    flag: 'wx',
  });
}

export function openFileDeliveryLog(opts: FileLogOptions): DeliveryLog {
  const { dir, clock, logger } = opts;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fileBytes = Math.max(64 * 1024, Math.floor(opts.maxBytes / 4));
  const retentionMs = opts.retentionDays * 86_400_000;
  // the newest MAX_INDEXED deliveries, held as their lines (read back from disk, oldest first, then as appended)
  const held = createHeldDeliveries((line) => parseLine(line, NO_BODIES));
  const files = () => logFiles(dir);
  readLogFiles(dir, (read, line) => held.add(read, line));
  held.dropOlderThan(clock.now() - retentionMs);

  const listeners = new Set<(rec: DeliveryRecord) => void>();

  let current = files().at(-1);
  let currentSize = current ? fs.statSync(path.join(dir, current)).size : 0;
  // a crash may have torn the last line: the next write starts on a line of its own, not glued to it
  let tornTail = currentSize > 0 && !endsWithNewline(path.join(dir, must(current)), currentSize);
  let queue: Queued[] = [];
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

  // The bytes of the write under way (one at a time: drain waits for it), kept for the next. Node encodes a string it
  // is given to write into a buffer of three bytes a character allocated for that write: for a gathering of a few
  // hundred lines, an mmap and its page faults each time (measured: 2 µs a delivery, against 0.3 encoded here).
  let spare = Buffer.allocUnsafeSlow(0);
  const encoded = (text: string): Buffer => {
    const most = text.length * 3;
    if (most > MAX_SPARE) return Buffer.from(text);
    if (spare.length < most) spare = Buffer.allocUnsafeSlow(Math.max(most, 64 * 1024));
    return spare.subarray(0, spare.write(text));
  };

  /**
   * Write what is gathered, once: lines appended meanwhile wait for the next gathering (GATHER_MS), not for the end of
   * this write. Writing them at once made a write per few lines under load, each costing the thread pool's round trip
   * (~40 µs of CPU) that one write of a gathering shares among hundreds.
   */
  async function drain() {
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
      const bytes = encoded(batch);
      currentSize += (await must(handle).write(bytes, 0, bytes.length)).bytesWritten;
    } catch (e) {
      logger.error('delivery log write failed', { error: messageOf(e) });
    }
    writing = null;
    if (queue.length && !scheduled) scheduled = setTimeout(startDrain, GATHER_MS);
  }

  async function flush() {
    for (;;) {
      if (scheduled) {
        clearTimeout(scheduled);
        startDrain();
      }
      if (!writing) return;
      await writing;
    }
  }

  return {
    append(e) {
      const t = new EntryText(e);
      const line = t.line(heldPayload(e));
      const h = held.add(e, line);
      queue.push(queued(e, t, line));
      if (!writing && !scheduled) scheduled = setTimeout(startDrain, GATHER_MS);
      if (!h || !listeners.size) return;
      const rec = held.recordOf(h);
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
    get: async (id) => held.get(id),
    /** Newest first by creation time (what the list shows), whatever was updated last. */
    list: async (filter) => held.list(filter),
    flush,
    async close() {
      await flush();
      await handle?.close();
      handle = undefined;
      handleFor = undefined;
    },
  };
}
