/**
 * What the embedded delivery log keeps in memory for show, list and the console: its last MAX_INDEXED deliveries,
 * each held as the text of its entries (their JSON lines, one per entry, the payload always kept) and the few fields
 * a list filters and orders by. A delivery is assembled (each line parsed, then applyEntry) only when it is read.
 *
 * Why text and not the assembled records: a delivery as objects is dozens of them (its payload, its attempts, each
 * attempt's signature and answer headers), and 20,000 of them outlive every young collection: each is copied out of
 * the young generation and then traced at every major collection (measured: about 10 µs of a delivery's 85). The
 * line is built anyway to be written (file-log.ts); its bytes are kept outside the heap (held-texts.ts), so the
 * collector neither copies nor marks them.
 */
import { applyEntry, listed, MAX_INDEXED, newestFirst, type ListFilter, type LogEntry } from './log.js';
import type { DeliveryKind, DeliveryRecord, DeliveryState } from '../model/delivery.js';
import { HeldTexts, MAX_HELD_TEXT } from './held-texts.js';
import { must } from '../must.js';

/** A line read: an entry, or (as an earlier appreg wrote it) a whole delivery; undefined when it is neither. */
export type ReadLine = (line: string) => LogEntry | DeliveryRecord | undefined;

const isEntry = (x: LogEntry | DeliveryRecord): x is LogEntry => !('attempts' in x);

/**
 * One delivery held: its lines (joined by newlines, oldest first: in `texts` at `handle`, or when too long for it as
 * `text`) and what a list needs without reading them.
 */
class Held {
  handle = -1;
  text: string | undefined = undefined;
  constructor(
    public ownerId: string,
    public appId: string,
    public kind: DeliveryKind,
    public state: DeliveryState,
    public createdAt: string,
    public updatedAt: string,
    public seq: number,
  ) {}
}

const later = (a: string, b: string | undefined) => (b !== undefined && b > a ? b : a);

/**
 * `s` with its characters in one piece. A concatenation is a tree of its parts (an object each) until something
 * reads it whole; charCodeAt does (V8 flattens the string in place, and the collector then drops the tree).
 */
function flat(s: string): string {
  s.charCodeAt(0);
  return s;
}

/** Where held lines are kept, outside the heap (held-texts.ts). */
function textStore() {
  const texts = new HeldTexts();
  return {
    textOf: (h: Held): string => h.text ?? texts.text(h.handle),
    /** `h` now holds `text` (what it held before let go). */
    keep(h: Held, text: string) {
      this.release(h);
      if (text.length <= MAX_HELD_TEXT) h.handle = texts.put(text);
      else h.text = flat(text);
    },
    release(h: Held) {
      if (h.handle >= 0) texts.drop(h.handle);
      h.handle = -1;
      h.text = undefined;
    },
    get bytes() {
      return texts.bytes;
    },
  };
}

export interface HeldDeliveries {
  /**
   * Hold what `read` (a line's entry, or a whole delivery) makes of its delivery, `line` being its text; undefined
   * (nothing held) for an entry about a delivery not held, whose beginning was not seen.
   */
  add(read: LogEntry | DeliveryRecord, line: string): Held | undefined;
  /** The delivery as its held lines make it: a new object at each call. */
  get(id: string): DeliveryRecord | undefined;
  /** What a held delivery is now. */
  recordOf(held: Held): DeliveryRecord;
  /** Newest first by creation time (the one recorded last first among those created in the same millisecond). */
  list(filter: ListFilter): DeliveryRecord[];
  /** Let go of the deliveries last changed before `cutoffMs`. */
  dropOlderThan(cutoffMs: number): void;
  readonly size: number;
  /** Bytes of the buffers holding the lines (tests). */
  readonly bytes: number;
}

/** `readLine` parses one held line (file-log.ts parseLine; held lines refer to no shared body). */
export function createHeldDeliveries(readLine: ReadLine): HeldDeliveries {
  const index = new Map<string, Held>();
  const store = textStore();
  // the order of entries (newest last), as two arrays of plain values rather than an object per entry. A Map used as a
  // queue (delete the first key on every entry) makes V8 scan its deleted slots each time: measured at ~20 µs per
  // entry with 20,000 deliveries.
  let orderIds: string[] = [];
  let orderSeqs: number[] = [];
  let head = 0;
  let seqNo = 0;

  function remember(id: string, h: Held) {
    const seq = ++seqNo;
    h.seq = seq;
    index.set(id, h);
    orderIds.push(id);
    orderSeqs.push(seq);
    while (index.size > MAX_INDEXED && head < orderIds.length) {
      const at = head++;
      const gone = must(orderIds[at]);
      const old = index.get(gone);
      if (old && old.seq === orderSeqs[at]) {
        store.release(old);
        index.delete(gone);
      }
    }
    if (head > 4096 && head * 2 > orderIds.length) {
      const ids: string[] = [];
      const seqs: number[] = [];
      for (let i = head; i < orderIds.length; i++) {
        const oid = must(orderIds[i]);
        const s = must(orderSeqs[i]);
        if (index.get(oid)?.seq === s) {
          ids.push(oid);
          seqs.push(s);
        }
      }
      orderIds = ids;
      orderSeqs = seqs;
      head = 0;
    }
  }

  function assemble(text: string): DeliveryRecord | undefined {
    let rec: DeliveryRecord | undefined;
    let from = 0;
    while (from <= text.length) {
      let end = text.indexOf('\n', from);
      if (end < 0) end = text.length;
      const read = readLine(from === 0 && end === text.length ? text : text.slice(from, end));
      if (read) rec = isEntry(read) ? applyEntry(rec, read) : read;
      from = end + 1;
    }
    return rec;
  }

  return {
    add(read, line) {
      const prev = index.get(read.id);
      let text = line;
      let h: Held;
      if (!isEntry(read)) {
        h = new Held(read.ownerId, read.appId, read.kind, read.state, read.createdAt, read.updatedAt, 0);
      } else if (read.begun) {
        const b = read.begun.head;
        h = new Held(b.ownerId, b.appId, b.kind, 'pending', b.createdAt, b.createdAt, 0);
      } else if (prev) {
        h = prev;
        text = `${store.textOf(prev)}\n${line}`;
      } else return undefined;
      if (prev && prev !== h) store.release(prev);
      store.keep(h, text);
      if (isEntry(read)) {
        if (read.attempt) h.updatedAt = later(h.updatedAt, read.attempt.at);
        if (read.state) {
          h.state = read.state.state;
          h.updatedAt = later(h.updatedAt, read.state.at);
        }
      }
      remember(read.id, h);
      return h;
    },
    get(id) {
      const h = index.get(id);
      return h && assemble(store.textOf(h));
    },
    recordOf: (h) => must(assemble(store.textOf(h))),
    list(filter) {
      const out: Held[] = [];
      for (const h of index.values()) if (listed(h, filter)) out.push(h);
      out.sort((a, b) => newestFirst(a.createdAt, a.seq, b.createdAt, b.seq));
      return out.slice(0, filter.limit ?? 50).map((h) => must(assemble(store.textOf(h))));
    },
    dropOlderThan(cutoffMs) {
      for (const [id, h] of index)
        if (Date.parse(h.updatedAt) < cutoffMs) {
          store.release(h);
          index.delete(id);
        }
    },
    get size() {
      return index.size;
    },
    get bytes() {
      return store.bytes;
    },
  };
}
