/**
 * The bytes of uploaded files kept in the store itself, for daemons that share a PostgreSQL database
 * (a file uploaded through one daemon is served by every other, which no daemon's own disk can do).
 * A file is cut into chunks of CHUNK_BYTES, each a record (`fileBlobChunks`, id `<fileId>.<n>`,
 * base64), and becomes readable only when its head record (`fileBlobs`, id `<fileId>`, the chunk
 * count and size) is written, after every chunk: a refused or interrupted upload is never read.
 * Same contract as the on-disk blobs (FileBlobs); limits are checked while the bytes arrive.
 */
import { Readable } from 'node:stream';
import { payloadTooLarge } from '../errors.js';
import type { Store } from '../store/types.js';
import type { BlobChunk, BlobHead } from '../model/workspace.js';

export const HEADS = 'fileBlobs';
export const CHUNKS = 'fileBlobChunks';
/** 192 KiB of bytes: 256 KiB of base64 per record, well inside what one commit should carry. */
export const CHUNK_BYTES = 192 * 1024;
const ID = /^[A-Za-z0-9_-]{1,64}$/;

export const chunkId = (id: string, n: number) => `${id}.${n}`;

function checkId(id: string): void {
  if (!ID.test(id)) throw new Error(`not a file id: ${JSON.stringify(id)}`);
}

export function storeFileBlobs(deps: { store: Store }) {
  const { store } = deps;
  async function removeChunks(id: string, count: number): Promise<void> {
    for (let from = 0; from < count; from += 64) {
      const ids = Array.from({ length: Math.min(64, count - from) }, (_x, i) => chunkId(id, from + i));
      await store.commit(ids.map((c) => ({ table: CHUNKS, id: c, value: null })));
    }
  }

  /** Write `data` as the blob `id`; rejects with 413 (and keeps nothing) past `maxBytes`. Resolves to the size. */
  async function write(id: string, data: Readable, maxBytes: number): Promise<number> {
    checkId(id);
    let size = 0;
    let n = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async (all: boolean) => {
      while (pendingBytes >= CHUNK_BYTES || (all && pendingBytes > 0)) {
        const buf = Buffer.concat(pending);
        const take = Math.min(CHUNK_BYTES, buf.length);
        const chunk: BlobChunk = { id: chunkId(id, n), data: buf.subarray(0, take).toString('base64') };
        pending = take < buf.length ? [buf.subarray(take)] : [];
        pendingBytes = buf.length - take;
        n++;
        await store.commit([{ table: CHUNKS, id: chunk.id, value: chunk }]);
      }
    };
    try {
      for await (const c of data) {
        const chunk = Buffer.isBuffer(c) ? c : Buffer.from(c as string);
        size += chunk.length;
        if (size > maxBytes) throw payloadTooLarge(`The file is larger than its limit of ${maxBytes} bytes.`);
        pending.push(chunk);
        pendingBytes += chunk.length;
        await flush(false);
      }
      await flush(true);
      const head: BlobHead = { id, chunks: n, size };
      await store.commit([{ table: HEADS, id, value: head }]);
      return size;
    } catch (e) {
      data.resume();
      await removeChunks(id, n).catch(() => {});
      throw e;
    }
  }

  return {
    write,
    /** The blob's bytes, read chunk by chunk; a stream that fails when there is no such blob. */
    read(id: string): Readable | undefined {
      checkId(id);
      return Readable.from(
        (async function* () {
          const head = await store.get(HEADS, id);
          if (!head) throw new Error(`no blob ${id}`);
          for (let i = 0; i < head.chunks; i++) {
            const c = await store.get(CHUNKS, chunkId(id, i));
            if (!c) throw new Error(`blob ${id} lost its chunk ${i}`);
            yield Buffer.from(c.data, 'base64');
          }
        })(),
      );
    },
    async remove(id: string): Promise<void> {
      checkId(id);
      const head = await store.get(HEADS, id);
      if (!head) return;
      await store.commit([{ table: HEADS, id, value: null }]);
      await removeChunks(id, head.chunks);
    },
    /**
     * Nothing to do: an interrupted upload never wrote its head, so it is never read, and another
     * daemon may be writing one right now. (Its chunks stay until the file id is removed.)
     */
    async removeExcept(): Promise<void> {},
  };
}
