/**
 * Object keys of record texts written as two-byte codes in the text arena (text-arena.ts): a
 * dictionary learned as texts are stored, `"appId":` → 2 bytes. Field names are about a third of a
 * token or code record's bytes (`"workspaceUserId":`, `"authorizationId":`, …), repeated in each of
 * the token benchmark's 740,000 records.
 *
 * Why this is exact: a JSON text holds no byte below 0x20 (JSON.stringify escapes every control
 * character in strings, and JSON allows none elsewhere but whitespace). A code is such a byte (its
 * first, 0x01–0x1f) and one more (0x20–0x7f), so decoding cannot mistake text for a code. The
 * encoder tokenises strings as JSON does (a string runs from an unescaped `"` to the next one), and
 * only a string directly followed by `:` is a key. A text holding a byte below 0x20 anyway (JSON
 * whitespace in a file edited by hand) is stored as it is: encode says so (-1) on meeting one.
 *
 * The dictionary only grows, to CODES keys of 4 to MAX_KEY bytes (a key seen after that stays as
 * it is): it lives as long as the arena, whose readers share it. Nothing here reaches a file.
 */

const QUOTE = 0x22;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const FIRST_LEAD = 0x01;
const SECOND_BASE = 0x20;
const SECONDS = 0x80 - SECOND_BASE;
/** 31 leads × 96 second bytes. */
export const CODES = (0x20 - FIRST_LEAD) * SECONDS;
/** The longest key kept, `"` to `:` included (a longer one stays as it is). */
const MAX_KEY = 64;
/** The shortest: a code of 2 bytes for fewer than 4 saves nothing. */
const MIN_KEY = 4;
/** A string value this long is moved by copyWithin (one call), a shorter one byte by byte. */
const LONG_COPY = 32;
/** The largest buffer a decode keeps for the next (a longer text gets one of its own). */
const SCRATCH_MOST = 1 << 20;

export class KeyDictionary {
  /** By code number: the key's bytes, `"` to `:` included. */
  readonly #keys: Uint8Array[] = [];
  /** A key's hash → its code number (a second key of the same hash is not coded). */
  readonly #byHash = new Map<number, number>();
  #scratch = Buffer.allocUnsafe(1 << 16);

  /** Keys known. */
  get size(): number {
    return this.#keys.length;
  }

  /**
   * Replaces the keys of the JSON text in `buf[from, to)` by their codes, in place (a text only
   * shrinks); returns where it ends now, or -1 when it holds a byte below 0x20 (then the bytes
   * are left changed in part: the caller writes the text again, as it is).
   */
  encode(buf: Buffer, from: number, to: number): number {
    let w = from;
    let i = from;
    while (i < to) {
      const c = must8(buf, i);
      if (c !== QUOTE) {
        if (c < SECOND_BASE) return -1;
        buf[w++] = c;
        i++;
        continue;
      }
      // a string: to its closing quote
      let j = i + 1;
      while (j < to) {
        const d = must8(buf, j);
        if (d === QUOTE) break;
        if (d < SECOND_BASE || (d === BACKSLASH && must8(buf, j + 1) < SECOND_BASE && j + 1 < to)) return -1;
        j += d === BACKSLASH ? 2 : 1;
      }
      const end = j + 2; // after `":`
      if (end <= to && buf[j + 1] === COLON && end - i >= MIN_KEY && end - i <= MAX_KEY) {
        const n = this.#code(buf, i, end);
        if (n >= 0) {
          buf[w++] = FIRST_LEAD + Math.floor(n / SECONDS);
          buf[w++] = SECOND_BASE + (n % SECONDS);
          i = end;
          continue;
        }
      }
      const stop = Math.min(j + 1, to);
      if (w === i) w = i = stop;
      else if (stop - i > LONG_COPY) {
        buf.copyWithin(w, i, stop);
        w += stop - i;
        i = stop;
      } else while (i < stop) buf[w++] = must8(buf, i++);
    }
    return w;
  }

  /** The code number of the key `buf[a, b)`, learned if new and there is room; -1: none. */
  #code(buf: Buffer, a: number, b: number): number {
    let h = 0;
    for (let k = a + 1; k < b - 2; k++) h = (Math.imul(h, 31) + must8(buf, k)) | 0;
    const n = this.#byHash.get(h);
    if (n !== undefined) {
      const key = this.#keys[n] ?? NONE;
      if (key.length !== b - a) return -1;
      for (let k = 0; k < key.length; k++) if (key[k] !== buf[a + k]) return -1;
      return n;
    }
    if (this.#keys.length >= CODES) return -1;
    this.#keys.push(Uint8Array.prototype.slice.call(buf, a, b));
    this.#byHash.set(h, this.#keys.length - 1);
    return this.#keys.length - 1;
  }

  /** The text in `buf[from, to)`, its codes written out as their keys. */
  decode(buf: Buffer, from: number, to: number): string {
    const keys = this.#keys;
    let out = this.#scratch;
    // each code of 2 bytes stands for MAX_KEY at most; past that, the text is measured first
    if ((to - from) * (MAX_KEY / 2) > out.length) {
      let length = 0;
      for (let i = from; i < to; i++) {
        const c = must8(buf, i);
        length +=
          c >= SECOND_BASE ? 1 : (keys[(c - FIRST_LEAD) * SECONDS + must8(buf, ++i) - SECOND_BASE] ?? NONE).length;
      }
      if (length > out.length) out = Buffer.allocUnsafe(length);
      if (length <= SCRATCH_MOST) this.#scratch = out;
    }
    let w = 0;
    for (let i = from; i < to; i++) {
      const c = must8(buf, i);
      if (c >= SECOND_BASE) out[w++] = c;
      else {
        const key = keys[(c - FIRST_LEAD) * SECONDS + must8(buf, ++i) - SECOND_BASE] ?? NONE;
        out.set(key, w);
        w += key.length;
      }
    }
    return out.toString('utf8', 0, w);
  }
}

/** The byte at `i` of `buf` (the callers keep `i` in bounds). */
function must8(buf: Uint8Array, i: number): number {
  return buf[i] ?? 0;
}

const NONE = new Uint8Array(0);
