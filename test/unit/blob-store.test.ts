/**
 * The disk half of uploads (src/files/blob-store.ts): a write refused past its limit keeps
 * nothing, not even its .part, by the time it rejects, whatever the order in which the
 * write stream opens and closes its file.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { openFileBlobs } from '../../src/files/blob-store.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-blob-store-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

/** Files of this process still open under `dir` (Linux: /proc/self/fd; elsewhere none are seen). */
function openUnder(dir: string): string[] {
  if (!fs.existsSync('/proc/self/fd')) return [];
  return fs.readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const to = fs.readlinkSync(`/proc/self/fd/${fd}`);
      return to.startsWith(dir + path.sep) ? [to] : [];
    } catch {
      return []; // the fd readdir itself used, closed since
    }
  });
}

t.test('a write refused at its first chunk leaves no .part and no open file when it rejects', async (t) => {
  const dir = path.join(tmpRoot, 'refused');
  const blobs = openFileBlobs({ dir, fsync: false });
  // Node 20 rejects the pipeline before the write stream has opened its file: removed too early, it came back
  const left: string[] = [];
  for (let i = 0; i < 100; i++) {
    await t.rejects(blobs.write(`f${i}`, Readable.from([Buffer.alloc(11, 1)]), 10), { code: 'payload_too_large' });
    left.push(...fs.readdirSync(dir), ...openUnder(dir));
  }
  t.same(left, [], 'nothing on disk or open after any of the 100 refusals');
});

t.test('a write within its limit is kept under its id, 0600, and nothing else', async (t) => {
  const dir = path.join(tmpRoot, 'kept');
  const blobs = openFileBlobs({ dir, fsync: true });
  t.equal(await blobs.write('f1', Readable.from([Buffer.alloc(6, 2), Buffer.alloc(4, 3)]), 10), 10);
  t.same(fs.readdirSync(dir), ['f1']);
  t.equal(fs.statSync(path.join(dir, 'f1')).mode & 0o777, 0o600);
  t.same(fs.readFileSync(path.join(dir, 'f1')), Buffer.concat([Buffer.alloc(6, 2), Buffer.alloc(4, 3)]));
});
