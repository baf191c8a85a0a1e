/**
 * Uploaded files' bytes moved between the stores by `appreg db import` and `db export`: the
 * embedded store keeps one file per upload under <data-dir>/files/ (blob-store.ts), PostgreSQL
 * records of a head and its chunks (store-blobs.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { CHUNK_BYTES, CHUNKS, HEADS, chunkId } from './store-blobs.js';
import type { BlobChunk, BlobHead } from '../model/workspace.js';
import { fieldOf, stringOr } from '../unknown-values.js';

export { CHUNKS, HEADS };

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Every completed upload under `<dataDir>/files/` as the database's records: heads and chunks. */
export function readBlobDir(dataDir: string): { heads: Map<string, BlobHead>; chunks: Map<string, BlobChunk> } {
  const heads = new Map<string, BlobHead>();
  const chunks = new Map<string, BlobChunk>();
  const dir = path.join(dataDir, 'files');
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((f) => ID.test(f)); // not the .part of an upload cut short
  } catch {
    return { heads, chunks };
  }
  for (const id of names.sort()) {
    const bytes = fs.readFileSync(path.join(dir, id));
    let n = 0;
    for (let at = 0; at < bytes.length; at += CHUNK_BYTES, n++)
      chunks.set(chunkId(id, n), { id: chunkId(id, n), data: bytes.subarray(at, at + CHUNK_BYTES).toString('base64') });
    heads.set(id, { id, chunks: n, size: bytes.length });
  }
  return { heads, chunks };
}

/** Write each blob of the database's records as a file under `<dataDir>/files/` (0600); the number written. */
export function writeBlobDir(dataDir: string, heads: Map<string, object>, chunks: Map<string, object>): number {
  if (!heads.size) return 0;
  const dir = path.join(dataDir, 'files');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const head of heads.values()) {
    // read as the BlobHead and BlobChunk records store-blobs.ts writes, each field checked
    const id = stringOr(fieldOf(head, 'id'));
    const count = fieldOf(head, 'chunks');
    if (id === undefined || typeof count !== 'number')
      throw new Error(`a record of ${HEADS} in the database is not a file's head: ${JSON.stringify(head)}`);
    const parts: Buffer[] = [];
    for (let i = 0; i < count; i++) {
      const data = stringOr(fieldOf(chunks.get(chunkId(id, i)), 'data'));
      if (data === undefined) throw new Error(`file ${id} lost its chunk ${i} in the database`);
      parts.push(Buffer.from(data, 'base64'));
    }
    fs.writeFileSync(path.join(dir, id), Buffer.concat(parts), { mode: 0o600, flag: 'wx' });
  }
  return heads.size;
}
