/**
 * The bytes of uploaded files, one file per upload under `<dataDir>/files/`, named by the
 * file's id (never the name the client gave), mode 0600. A write goes to `<id>.part` and is
 * renamed into place only when complete and within its limit (fsynced first when `fsync`),
 * so a crash or a refused upload leaves no file behind under its id.
 * This is the disk half of the workspace's files service, which sees it only as `FileBlobs`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { payloadTooLarge } from '../errors.js';
import { fsyncPath } from '../store/fsync.js';

const ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface FileBlobsDeps {
  /** `<dataDir>/files`, made 0700 if missing. */
  dir: string;
  /** fsync each blob before it is renamed into place. */
  fsync: boolean;
}

export function openFileBlobs(deps: FileBlobsDeps) {
  const { dir, fsync } = deps;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // a write cut short by a crash
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.part')) fs.rmSync(path.join(dir, f), { force: true });

  const fileOf = (id: string) => {
    if (!ID.test(id)) throw new Error(`not a file id: ${JSON.stringify(id)}`);
    return path.join(dir, id);
  };

  /** Write `data` as the blob `id`; rejects with 413 (and keeps nothing) past `maxBytes`. Resolves to the size. */
  async function write(id: string, data: Readable, maxBytes: number): Promise<number> {
    const final = fileOf(id);
    const part = `${final}.part`;
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        cb(size > maxBytes ? payloadTooLarge(`The file is larger than its limit of ${maxBytes} bytes.`) : null, chunk);
      },
    });
    // The .part is created before any byte flows and removed only once its stream has closed: a stream
    // opening its file lazily could create it after the removal (Node 20 does, when the first chunk is refused).
    let h: fs.promises.FileHandle;
    try {
      h = await fs.promises.open(part, 'wx', 0o600);
    } catch (e) {
      data.resume();
      throw e;
    }
    const out = h.createWriteStream();
    try {
      await pipeline(data, count, out);
      if (fsync) await fsyncPath(part);
      await fs.promises.rename(part, final);
      if (fsync) await fsyncPath(dir);
      return size;
    } catch (e) {
      data.resume();
      if (!out.closed) await new Promise<void>((r) => out.destroy().once('close', () => r()));
      await h.close().catch(() => {});
      await fs.promises.rm(part, { force: true });
      throw e;
    }
  }

  return {
    write,
    /** The blob's bytes, or undefined when there is none. */
    read(id: string): Readable | undefined {
      const f = fileOf(id);
      return fs.existsSync(f) ? fs.createReadStream(f) : undefined;
    },
    async remove(id: string): Promise<void> {
      await fs.promises.rm(fileOf(id), { force: true });
    },
    /** Remove every blob whose id `keep` refuses (uploads never completed before a restart). */
    async removeExcept(keep: (id: string) => boolean): Promise<void> {
      for (const f of await fs.promises.readdir(dir))
        if (ID.test(f) && !keep(f)) await fs.promises.rm(path.join(dir, f), { force: true });
    },
  };
}
