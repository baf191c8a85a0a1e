/**
 * Text written to a file through one reusable buffer: each string is encoded straight into it and
 * the buffer goes out when full, so a large file streams out without a chunk string and a fresh
 * Buffer per chunk (a compaction of the token benchmark's 250 MB data file left some 30 MB of both
 * waiting for the garbage collector at a time).
 */
import type { FileHandle } from 'node:fs/promises';

/** At most this many UTF-8 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3;

export class FileSink {
  readonly #h: FileHandle;
  readonly #buf: Buffer;
  #len = 0;
  /** Bytes written to the file so far (flushed). */
  bytes = 0;

  constructor(h: FileHandle, size = 1 << 20) {
    this.#h = h;
    this.#buf = Buffer.allocUnsafe(size);
  }

  /** Whether `chars` more UTF-16 code units surely fit in the buffer, whatever they are. */
  fits(chars: number): boolean {
    return this.#len + chars * MAX_BYTES_PER_UNIT <= this.#buf.length;
  }

  /** Append `s`; the caller made sure it fits (fits(s.length)). */
  put(s: string): void {
    this.#len += this.#buf.write(s, this.#len, 'utf8');
  }

  /** Append `s` whatever its size: flushes first when it may not fit; one larger than the buffer goes on its own. */
  async putAny(s: string): Promise<void> {
    if (!this.fits(s.length)) await this.flush();
    if (this.fits(s.length)) return this.put(s);
    await this.#writeAll(Buffer.from(s, 'utf8'));
  }

  /** Write out what the buffer holds. */
  async flush(): Promise<void> {
    if (this.#len) await this.#writeAll(this.#buf.subarray(0, this.#len));
    this.#len = 0;
  }

  async #writeAll(buf: Buffer): Promise<void> {
    for (let off = 0; off < buf.length;) off += (await this.#h.write(buf, off, buf.length - off)).bytesWritten;
    this.bytes += buf.length;
  }
}
