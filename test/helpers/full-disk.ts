/**
 * The embedded store's journal on a disk that fills on cue, through the store's failure-injection seam
 * (no real disk has to fill): each write that `refuses` picks fails with ENOSPC, as a full disk fails it.
 */
import type { FileHandle } from 'node:fs/promises';
import { nodeIo, type StoreIo } from '../../src/store/fsync.js';

/** `refuses(bytes)`: whether the disk refuses this write (`bytes`, what it would write). `disk` counts the writes. */
export function fullDiskIo(refuses: (bytes: Buffer) => boolean) {
  const disk = { writes: 0, refused: 0 };
  const io: Partial<StoreIo> = {
    async write(h: FileHandle, buf: Buffer, off: number, len: number) {
      disk.writes++;
      if (refuses(buf.subarray(off, off + len))) {
        disk.refused++;
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
      return nodeIo.write(h, buf, off, len);
    },
  };
  return { io, disk };
}
