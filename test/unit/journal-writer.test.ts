/**
 * The journal writer's two batches on their way (store/journal-writer.ts): lines queued while a
 * batch's fdatasync runs are written and fdatasynced beside it, on another descriptor, and every
 * batch is acknowledged in order, only once it and the batches before it are durable; a failure
 * of either fails both (and what is queued) and cuts the file back to what was acknowledged.
 * Each fdatasync here waits until the test lets it end (or fail), so the order is the test's.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { JournalWriter } from '../../src/store/journal-writer.js';
import { nodeIo, openForAppend, type StoreIo } from '../../src/store/fsync.js';
import { journalPath } from '../../src/store/format.js';
import type { CommitUndo } from '../../src/store/tables.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-journal-writer-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let dirs = 0;

/** A commit's undo as the writer sees it: passed back untouched on a rollback. */
const undo = (seq: number): CommitUndo => ({ seq, prev: [], changes: [] });

/** fdatasyncs held until the test ends them: each call, with the descriptor it ran on. */
function heldIo() {
  const syncs: { fd: number; end: () => Promise<void>; fail: (err: Error) => void }[] = [];
  const io: StoreIo = {
    write: nodeIo.write,
    truncate: nodeIo.truncate,
    datasync: (h: FileHandle) =>
      new Promise<void>((resolve, reject) => {
        syncs.push({
          fd: h.fd,
          // resolves once the fdatasync ended and the writer was told
          end: () => nodeIo.datasync(h).then(resolve, reject),
          fail: reject,
        });
      }),
  };
  return { io, syncs };
}

/** A writer on a fresh journal whose fdatasyncs the test ends, closed at the test's end. */
async function heldWriter(t: Tap.Test) {
  const { io, syncs } = heldIo();
  const dir = path.join(tmpRoot, `d${++dirs}`);
  fs.mkdirSync(dir);
  const active = await openForAppend(journalPath(dir, 1));
  const rolledBack: number[] = [];
  const acked: number[] = [];
  const writer = new JournalWriter({
    dir,
    active,
    activeNum: 1,
    journalSizes: new Map([[1, 0]]),
    fsync: true,
    acknowledged: (u) => acked.push(u.seq),
    afterBatch: () => {},
    rollback: (undos) => rolledBack.push(...undos.map((u) => u.seq)),
    io,
  });
  const text = () => fs.readFileSync(journalPath(dir, 1), 'utf8');
  t.teardown(() => writer.closeActive());
  return { writer, acked, rolledBack, text, syncs };
}

/** Where a commit's promise stands, looked at without waiting for it. */
function track(p: Promise<void>) {
  const s = { state: 'pending' as 'pending' | 'acked' | 'failed' };
  p.then(
    () => (s.state = 'acked'),
    () => (s.state = 'failed'),
  );
  return s;
}

t.test('lines queued during an fdatasync start their own beside it, on another descriptor', async (t) => {
  const w = await heldWriter(t);
  const { syncs } = w;
  const a = track(w.writer.enqueue('{"a":1}\n', undo(1)));
  await until(() => syncs.length === 1);
  const b = track(w.writer.enqueue('{"b":2}\n', undo(2)));
  const c = track(w.writer.enqueue('{"c":3}\n', undo(3)));
  // b and c go out together, written and fdatasynced while a's fdatasync still runs
  await until(() => syncs.length === 2);
  t.equal(w.text(), '{"a":1}\n{"b":2}\n{"c":3}\n', 'written in order, before the first fdatasync ended');
  t.not(must(syncs[1]).fd, must(syncs[0]).fd, 'the two fdatasyncs run on two descriptors');
  // never a third while two are on their way
  const d = track(w.writer.enqueue('{"d":4}\n', undo(4)));
  await new Promise((r) => setImmediate(r));
  t.equal(syncs.length, 2);
  t.equal(w.text().includes('"d"'), false, 'the third batch waits');
  // the second ends first: nothing is acknowledged before the first is
  await must(syncs[1]).end();
  await new Promise((r) => setImmediate(r));
  t.same([a.state, b.state, c.state], ['pending', 'pending', 'pending']);
  t.equal(w.writer.unacknowledged().length, 4);
  t.same(w.acked, []);
  void must(syncs[0]).end();
  await until(() => c.state === 'acked');
  t.same(w.acked, [1, 2, 3], 'acknowledged in order');
  t.equal(a.state, 'acked');
  // the third batch starts once only one is on its way, and is acknowledged after its own fdatasync
  await until(() => syncs.length === 3);
  t.equal(d.state, 'pending');
  void must(syncs[2]).end();
  await until(() => d.state === 'acked');
  t.same(w.acked, [1, 2, 3, 4]);
  t.equal(w.writer.activeBytes(), Buffer.byteLength(w.text()));
  t.equal(w.writer.batches, 3);
});

t.test('a failed fdatasync fails the batch beside it too, and the file is cut back once both settle', async (t) => {
  const w = await heldWriter(t);
  const { syncs } = w;
  const first = track(w.writer.enqueue('{"a":1}\n', undo(1)));
  await until(() => syncs.length === 1);
  void must(syncs[0]).end();
  await until(() => first.state === 'acked');
  const a = track(w.writer.enqueue('{"b":2}\n', undo(2)));
  await until(() => syncs.length === 2);
  const b = track(w.writer.enqueue('{"c":3}\n', undo(3)));
  await until(() => syncs.length === 3);
  // the first of the two fails while the second still runs: both fail, newest undone first
  must(syncs[1]).fail(Object.assign(new Error('EIO: injected'), { code: 'EIO' }));
  await until(() => a.state === 'failed' && b.state === 'failed');
  t.same(w.rolledBack, [3, 2]);
  t.ok(w.writer.fault, 'faulty');
  t.same(w.writer.unacknowledged(), []);
  // nothing is cut while the second fdatasync still runs; its success then changes nothing
  t.equal(w.text(), '{"a":1}\n{"b":2}\n{"c":3}\n');
  const queued = track(w.writer.enqueue('{"d":4}\n', undo(4)));
  void must(syncs[2]).end();
  // the repair (truncate + fdatasync) runs, then the queued line
  await until(() => syncs.length === 4);
  void must(syncs[3]).end();
  await until(() => syncs.length === 5);
  t.equal(w.text(), '{"a":1}\n{"d":4}\n', 'cut back to what was acknowledged before the next line');
  void must(syncs[4]).end();
  await until(() => queued.state === 'acked');
  t.same(w.acked, [1, 4]);
  t.equal(w.writer.fault, null, 'a batch as large as the failed one clears the fault');
});

t.test('a failure of the second fails the first, even when the first then succeeds', async (t) => {
  const w = await heldWriter(t);
  const { syncs } = w;
  const a = track(w.writer.enqueue('{"a":1}\n', undo(1)));
  await until(() => syncs.length === 1);
  const b = track(w.writer.enqueue('{"b":2}\n', undo(2)));
  await until(() => syncs.length === 2);
  must(syncs[1]).fail(Object.assign(new Error('EIO: injected'), { code: 'EIO' }));
  await until(() => a.state === 'failed' && b.state === 'failed');
  t.same(w.rolledBack, [2, 1], 'every commit not acknowledged is rolled back');
  void must(syncs[0]).end();
  await until(() => syncs.length === 3); // the repair's fdatasync, once the first settled
  void must(syncs[2]).end();
  await until(() => w.text() === '');
  t.same(w.acked, []);
});
