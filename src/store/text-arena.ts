/**
 * Where the in-memory tables keep their record texts: outside the JavaScript heap, as UTF-8 bytes
 * appended to large buffers (slabs), each text named by one number (a handle) instead of a string.
 *
 * Why: the texts are most of what the embedded store holds (~200 MB of the token benchmark's heap of
 * ~290 MB). On the heap, every full collection marks them, and V8 lets the heap grow to a multiple
 * of what it holds before collecting again: peak RSS was about the live heap × 1.2–1.3. Bytes in
 * buffers are neither marked nor multiplied, and a handle is a small integer, which a Map holds in
 * its own slot (no object of its own).
 *
 * A text is written once and never changed: `put` appends `[length: u32][UTF-8 bytes]`, padded to 8
 * bytes, and answers its handle, `slab × 2^17 + offset / 8` (a slab is 1 MiB; a longer text gets a
 * slab of its own). Slab numbers are never used twice, so a handle names one text for the life of
 * the process: equal handles mean the very same text, which the tables use to tell a record read
 * from one changed since. Handles stay small integers for the first 16 GiB written (2^31 / 2^17
 * slabs of 1 MiB); later ones are still exact numbers, only stored boxed.
 *
 * Freed space: `free` counts a text's bytes out of its slab; a slab with nothing live left is let go at
 * once. When the garbage left in partly used slabs passes an eighth of what is live (and 4 MiB), the
 * owner sweeps (Tables.#sweep): the live texts of slabs less than half live are copied to the end
 * and those slabs let go, so moving costs at most the bytes it frees. A reader taken before (`reader`)
 * keeps the slabs it may read alive: a compaction streams the texts it captured while commits go on;
 * sweeps wait until it is released.
 */
import { KeyDictionary } from './key-dictionary.js';
import { must } from '../must.js';

const SLAB_BYTES = 1 << 20;
const UNIT = 8;
/** Handle units per slab: a handle is slab × UNITS + offset / UNIT. */
const UNITS = SLAB_BYTES / UNIT;
const HEAD = 4;
/** Garbage below this never starts a sweep, unless told otherwise (tests). */
const MIN_GARBAGE = 4 << 20;

const slabOf = (handle: number) => Math.floor(handle / UNITS);
const offsetOf = (handle: number) => (handle % UNITS) * UNIT;
const entryBytes = (length: number) => Math.ceil((HEAD + length) / UNIT) * UNIT;
/** The top bit of an entry's length word: its text's keys are coded (key-dictionary.ts). */
const CODED = 2 ** 31;

/** The text of the entry at `at` of `slab`: its bytes as they are, or decoded when its keys are coded. */
function entryText(slab: Buffer, at: number, dict: KeyDictionary): string {
  const length = slab.readUInt32LE(at);
  return length < CODED
    ? slab.toString('utf8', at + HEAD, at + HEAD + length)
    : dict.decode(slab, at + HEAD, at + HEAD + length - CODED);
}

/**
 * Reads the texts of handles taken up to when it was made, whatever is freed or swept after, until
 * it is released (its arena does not sweep before: see TextArena.reader).
 */
export class ArenaReader {
  #slabs: readonly (Buffer | undefined)[];
  readonly #dict: KeyDictionary;
  #onRelease: (() => void) | undefined;

  constructor(slabs: readonly (Buffer | undefined)[], dict: KeyDictionary, onRelease?: () => void) {
    this.#slabs = slabs;
    this.#dict = dict;
    this.#onRelease = onRelease;
  }

  /** Done reading: the slabs it held are let go, and its arena may sweep again. Once is enough; more do nothing. */
  release(): void {
    this.#slabs = [];
    const done = this.#onRelease;
    this.#onRelease = undefined;
    done?.();
  }

  text(handle: number): string {
    const slab = this.#slabs[slabOf(handle)];
    if (!slab) throw new RangeError(`text arena: no text at ${handle}`);
    return entryText(slab, offsetOf(handle), this.#dict);
  }
}

export class TextArena {
  readonly #minGarbage: number;
  /** By slab number; a slab let go is undefined (its number is not used again). */
  #slabs: (Buffer | undefined)[] = [];
  /** Bytes written into each slab, and bytes of its texts still live. */
  readonly #used: number[] = [];
  readonly #live: number[] = [];
  /** The slab being appended to (-1: none yet) and where its next text goes. */
  #cur = -1;
  #pos = SLAB_BYTES;
  #liveBytes = 0;
  /** Bytes freed but still held by their slabs. */
  #garbage = 0;
  /** Garbage a sweep could not free (its slabs more than half live): the next sweep waits for more than this. */
  #unmovable = 0;

  constructor(opts?: { minGarbage?: number }) {
    this.#minGarbage = opts?.minGarbage ?? MIN_GARBAGE;
  }

  /** Object keys written as codes, for every text stored here and its readers. */
  readonly #dict = new KeyDictionary();

  /** Stores `text` as it is; answers its handle. */
  put(text: string): number {
    let n = this.#cur;
    let at = this.#pos;
    let slab: Buffer;
    let length: number;
    if (at + HEAD + text.length * 3 <= SLAB_BYTES) {
      // room in the current slab for any text of this many characters: written without measuring it first
      slab = must(this.#slabs[n]);
      length = slab.write(text, at + HEAD, 'utf8');
    } else {
      length = Buffer.byteLength(text, 'utf8');
      if (entryBytes(length) > SLAB_BYTES) {
        // a text longer than a slab: a slab of its own, full at once
        n = this.#slabs.length;
        slab = Buffer.allocUnsafeSlow(entryBytes(length));
        this.#slabs.push(slab);
        this.#used.push(slab.length);
        this.#live.push(0);
        at = 0;
      } else {
        if (at + entryBytes(length) > SLAB_BYTES) this.#newSlab();
        n = this.#cur;
        at = this.#pos;
        slab = must(this.#slabs[n]);
      }
      slab.write(text, at + HEAD, length, 'utf8');
    }
    const size = entryBytes(length);
    if (n === this.#cur) {
      this.#pos = at + size;
      this.#used[n] = this.#pos;
    }
    slab.writeUInt32LE(length, at);
    this.#live[n] = must(this.#live[n]) + size;
    this.#liveBytes += size;
    return n * UNITS + at / UNIT;
  }

  /**
   * Stores `text` with its object keys coded (key-dictionary.ts); answers its handle. It is put as it
   * is, then coded where it lies and the arena's end moved back by what that saved: put itself, which
   * every table not coded calls, does exactly what it did before coding existed. A text in a slab of
   * its own stays as it is (that slab is sized to it).
   */
  putCoded(text: string): number {
    const handle = this.put(text);
    const n = slabOf(handle);
    if (n !== this.#cur) return handle;
    const slab = must(this.#slabs[n]);
    const at = offsetOf(handle);
    const length = slab.readUInt32LE(at);
    const end = this.#dict.encode(slab, at + HEAD, at + HEAD + length);
    // a byte below 0x20 (JSON whitespace, from a file edited by hand): written again as it is
    if (end < 0) slab.write(text, at + HEAD, length, 'utf8');
    if (end < 0 || end - at - HEAD === length) return handle;
    const coded = end - at - HEAD;
    slab.writeUInt32LE(CODED + coded, at);
    const saved = entryBytes(length) - entryBytes(coded);
    this.#pos -= saved;
    this.#used[n] = this.#pos;
    this.#live[n] = must(this.#live[n]) - saved;
    this.#liveBytes -= saved;
    return handle;
  }

  #newSlab(): void {
    const cur = this.#cur;
    // what the slab left behind did not fill is garbage from now on
    if (cur >= 0) this.#garbage += SLAB_BYTES - must(this.#used[cur]);
    this.#cur = this.#slabs.length;
    this.#slabs.push(Buffer.allocUnsafeSlow(SLAB_BYTES));
    this.#used.push(0);
    this.#live.push(0);
    this.#pos = 0;
    if (cur >= 0) this.#dropIfEmpty(cur);
  }

  /** The text of `handle` (a handle put and not freed, or freed since a reader was taken: use the reader). */
  text(handle: number): string {
    const slab = this.#slabs[slabOf(handle)];
    if (!slab) throw new RangeError(`text arena: no text at ${handle}`);
    return entryText(slab, offsetOf(handle), this.#dict);
  }

  /** The bytes the text of `handle` takes here (UTF-8, its keys coded). */
  byteLength(handle: number): number {
    const slab = must(this.#slabs[slabOf(handle)]);
    const length = slab.readUInt32LE(offsetOf(handle));
    return length < CODED ? length : length - CODED;
  }

  /** The text of `handle` is no longer needed (by this arena: readers taken before keep reading it). */
  free(handle: number): void {
    const n = slabOf(handle);
    const size = entryBytes(this.byteLength(handle));
    this.#live[n] = must(this.#live[n]) - size;
    this.#liveBytes -= size;
    this.#garbage += size;
    this.#dropIfEmpty(n);
  }

  #dropIfEmpty(n: number): void {
    const slab = this.#slabs[n];
    if (n === this.#cur || this.#live[n] !== 0 || !slab) return;
    // all of it was garbage: the part written and freed, and the tail left unwritten (#newSlab)
    this.#garbage -= slab.length;
    this.#unmovable = Math.min(this.#unmovable, this.#garbage);
    this.#slabs[n] = undefined;
  }

  /**
   * A reader of every text stored now (a copy of the list of slabs: the slabs themselves are shared).
   * Until it is released the arena does not sweep: a sweep copies live texts out of slabs that the
   * reader keeps all the same, so while a compaction streams (seconds, on the token benchmark's
   * 740,000 records) each sweep only added its copies to what the process held.
   */
  reader(): ArenaReader {
    this.#readers++;
    return new ArenaReader([...this.#slabs], this.#dict, () => this.#readers--);
  }

  /** Readers taken and not yet released. */
  #readers = 0;

  /** Whether enough garbage is held to sweep (see the top of this file) and no reader holds the slabs it empties. */
  get wantsSweep(): boolean {
    return this.#readers === 0 && this.#garbage - this.#unmovable > Math.max(this.#minGarbage, this.#liveBytes / 8);
  }

  /** The slabs a sweep empties (less than half live, not the one appended to), as a set of slab numbers. */
  sweepable(): Set<number> {
    const out = new Set<number>();
    for (let n = 0; n < this.#slabs.length; n++)
      if (n !== this.#cur && this.#slabs[n] && must(this.#live[n]) * 2 < must(this.#used[n])) out.add(n);
    return out;
  }

  /** Whether `handle` is in one of `slabs`. */
  static within(slabs: ReadonlySet<number>, handle: number): boolean {
    return slabs.has(slabOf(handle));
  }

  /** Copies the text of `handle` to the end, coded if it was, and frees it there: its new handle. */
  move(handle: number): number {
    const coded = must(this.#slabs[slabOf(handle)]).readUInt32LE(offsetOf(handle)) >= CODED;
    const moved = coded ? this.putCoded(this.text(handle)) : this.put(this.text(handle));
    this.free(handle);
    return moved;
  }

  /** After a sweep moved every live text out of `slabs`: they are let go; what garbage is left cannot be moved. */
  swept(slabs: ReadonlySet<number>): void {
    for (const n of slabs) this.#dropIfEmpty(n);
    this.#unmovable = this.#garbage;
  }

  /** Bytes held: slabs allocated, and of them the bytes of live texts. */
  stats(): { slabs: number; bytes: number; liveBytes: number; garbageBytes: number } {
    let slabs = 0;
    let bytes = 0;
    for (const s of this.#slabs)
      if (s) {
        slabs++;
        bytes += s.length;
      }
    return { slabs, bytes, liveBytes: this.#liveBytes, garbageBytes: this.#garbage };
  }
}
