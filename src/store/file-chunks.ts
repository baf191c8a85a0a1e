/**
 * Reading a store file as a stream of Buffers: the data file and a journal are read in chunks, not
 * whole, since either may be as big as everything the store keeps.
 */
import { createReadStream } from 'node:fs';

/** The bytes of `file`, in chunks of up to 1 MiB. */
export async function* fileChunks(file: string): AsyncGenerator<Buffer> {
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    // a stream opened without an encoding gives Buffers: one check per MiB
    if (!Buffer.isBuffer(chunk)) throw new TypeError(`${file}: the read stream gave no bytes`);
    yield chunk;
  }
}
