/**
 * Where the delivery log's held lines live (held-deliveries.ts): UTF-8 bytes appended to buffers of 1 MiB (slabs)
 * outside the JavaScript heap, each text named by a number. A slab whose texts are all let go is reused.
 *
 * Why: a held line on the heap is a kilobyte copied out of the young generation and then promoted with every
 * delivery, and the old generation's growth at thousands of deliveries a second paces the full collections, each
 * marking the daemon's whole heap (measured: holding 20,000 lines as strings cost 14 µs of a 90 µs delivery). Bytes
 * in a buffer written over and over are neither copied nor marked. The log lets go of its deliveries roughly in the
 * order it wrote them (the oldest change first), so slabs empty whole and no live text ever needs moving.
 */
import { must } from '../must.js';

const SLAB = 1 << 20;
const EMPTY = Buffer.alloc(0);
/** Each text is `[byte length: u32][bytes]`. */
const HEAD = 4;
/** A text longer than this is not put here (the caller keeps it as a string): a slab holds several. */
export const MAX_HELD_TEXT = SLAB >> 3;

export class HeldTexts {
  readonly #slabs: Buffer[] = [];
  /** Bytes of live texts in each slab. */
  readonly #live: number[] = [];
  /** Slabs with nothing live, to be written again. */
  readonly #idle: number[] = [];
  #cur = -1;
  #pos = SLAB;

  /** Stores `text` (at most MAX_HELD_TEXT characters); answers its handle. */
  put(text: string): number {
    if (this.#pos + HEAD + text.length * 3 > SLAB) this.#next();
    const n = this.#cur;
    const slab = must(this.#slabs[n]);
    const at = this.#pos;
    const length = slab.write(text, at + HEAD, 'utf8');
    slab.writeUInt32LE(length, at);
    this.#pos = at + HEAD + length;
    this.#live[n] = must(this.#live[n]) + HEAD + length;
    return n * SLAB + at;
  }

  text(handle: number): string {
    const slab = must(this.#slabs[Math.floor(handle / SLAB)]);
    const at = handle % SLAB;
    return slab.toString('utf8', at + HEAD, at + HEAD + slab.readUInt32LE(at));
  }

  /** The text of `handle` is no longer needed. */
  drop(handle: number): void {
    const n = Math.floor(handle / SLAB);
    const slab = must(this.#slabs[n]);
    const left = must(this.#live[n]) - HEAD - slab.readUInt32LE(handle % SLAB);
    this.#live[n] = left;
    if (left === 0 && n !== this.#cur) this.#idled(n);
  }

  /** Bytes of the slabs allocated now (tests). */
  get bytes(): number {
    return this.#slabs.reduce((n, s) => n + s.length, 0);
  }

  #next(): void {
    const was = this.#cur;
    if (was >= 0 && this.#live[was] === 0) this.#idled(was);
    let n = this.#idle.pop();
    if (n === undefined) {
      n = this.#slabs.length;
      this.#slabs.push(EMPTY);
      this.#live.push(0);
    }
    if (must(this.#slabs[n]).length === 0) this.#slabs[n] = Buffer.allocUnsafeSlow(SLAB);
    this.#cur = n;
    this.#pos = 0;
  }

  /** Slab `n` holds nothing live: kept for the next (two at most), else its memory let go and its number kept. */
  #idled(n: number): void {
    if (this.#idle.length >= 2) this.#slabs[n] = EMPTY;
    this.#idle.push(n);
  }
}
