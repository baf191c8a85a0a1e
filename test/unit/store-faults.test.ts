/**
 * Failure injection into the journal's file calls: ENOSPC and EIO on write (also after a
 * partial write) and on fdatasync. A failed commit leaves memory as it was, nothing that was
 * not acknowledged is ever visible (in memory, or on disk after a reopen or a crash copy),
 * health() says why the store cannot write, and writes recover once the disk does.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { nodeIo, type StoreIo } from '../../src/store/fsync.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import type { StoreLogger } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-faults-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const newDir = () => path.join(tmpRoot, `d${++n}`);
const copyDir = (from: string) => {
  const to = newDir();
  fs.cpSync(from, to, { recursive: true });
  return to;
};
const silent: StoreLogger = { warn: () => {} };
/** Resolves once `cond` holds, looking again on every turn of the event loop (no fixed wait). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

/** The real file calls, failing while a fault is armed. A 'partial' write fault first writes half the bytes. */
function faultyIo() {
  // fits: a full disk with a few bytes left in the file's last block (writes up to that many succeed)
  const armed = {
    write: null as string | null,
    datasync: null as string | null,
    partial: false,
    random: 0,
    fits: Infinity,
    writes: [] as number[],
  };
  const pick = (kind: 'write' | 'datasync') =>
    armed[kind] ?? (armed.random > 0 && Math.random() < armed.random ? (Math.random() < 0.5 ? 'ENOSPC' : 'EIO') : null);
  const io: StoreIo = {
    async write(h: FileHandle, buf: Buffer, off: number, len: number) {
      armed.writes.push(len);
      if (len > armed.fits) throw errno('ENOSPC');
      const code = pick('write');
      if (code && armed.partial && len > 1) {
        armed.partial = false;
        return nodeIo.write(h, buf, off, Math.floor(len / 2)); // the next call fails
      }
      if (code) throw errno(code);
      return nodeIo.write(h, buf, off, len);
    },
    async datasync(h: FileHandle) {
      const code = pick('datasync');
      if (code) throw errno(code);
      return nodeIo.datasync(h);
    },
    truncate: nodeIo.truncate,
  };
  return { io, armed };
}

const cases = [
  { name: 'ENOSPC on write after a partial write', kind: 'write', code: 'ENOSPC', partial: true },
  { name: 'EIO on write', kind: 'write', code: 'EIO', partial: false },
  { name: 'ENOSPC on fdatasync', kind: 'datasync', code: 'ENOSPC', partial: false },
  { name: 'EIO on fdatasync', kind: 'datasync', code: 'EIO', partial: false },
] as const;

for (const c of cases) {
  t.test(`${c.name}: failed commits are rolled back, health says why, writes recover`, async (t) => {
    const dir = newDir();
    const { io, armed } = faultyIo();
    const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, retryMs: 60_000, logger: silent, io });
    await store.commit([{ table: 'apps', id: 'a', value: { v: 1 } }]);
    t.same(store.health(), { ok: true });

    armed[c.kind] = c.code;
    armed.partial = c.partial;
    const seen: string[] = [];
    const b = store.commit([
      { table: 'apps', id: 'b', value: { v: 2 } },
      { table: 'apps', id: 'a', value: { v: 'changed' } },
    ]);
    const d = store.commit([{ table: 'apps', id: 'a', value: null }]); // queued behind b, depends on it
    const onReject = (id: string) => async (e: NodeJS.ErrnoException) => {
      seen.push(`${id}:${e.code}`);
      // at the moment the caller learns of the failure, memory is already as before
      t.same(await store.get('apps', 'a'), { v: 1 }, `${id}: a restored when the rejection arrives`);
      t.equal(await store.get('apps', 'b'), undefined, `${id}: b not visible when the rejection arrives`);
    };
    await Promise.all([
      b.then(() => t.fail('b acknowledged'), onReject('b')),
      d.then(() => t.fail('d acknowledged'), onReject('d')),
    ]);
    t.same(seen, [`b:${c.code}`, `d:${c.code}`]);
    t.equal(await store.count('apps'), 1);
    t.equal(store.stats().lastSeq, 1, 'seqs of failed commits are given back');
    const h = store.health();
    t.equal(h.ok, false);
    t.match(h, { reason: new RegExp(c.code) });
    await t.rejects(store.compact(), { code: c.code }, 'no compaction while the disk fails');

    // while the disk is still full every write fails, and is not visible either
    await t.rejects(store.commit([{ table: 'apps', id: 'e', value: {} }]), { code: c.code });
    t.equal(await store.get('apps', 'e'), undefined);
    const crash = copyDir(dir); // a crash now: nothing unacknowledged may come back
    const s1 = await openEmbeddedStore<TestTables>({ dir: crash, compactIdleMs: 0, logger: silent });
    t.same(await s1.all('apps'), [{ v: 1 }], 'crash copy holds only the acknowledged record');
    await s1.close();

    // space is back: the next commit succeeds; the store is healthy once a write as large as the failed one passed
    armed[c.kind] = null;
    await store.commit([{ table: 'apps', id: 'f', value: { v: 6 } }]);
    t.equal(store.health().ok, false, 'a write shorter than the one that failed proves nothing');
    await store.commit([{ table: 'apps', id: 'g', value: { pad: 'x'.repeat(200) } }]);
    t.same(store.health(), { ok: true });
    t.equal(store.stats().lastSeq, 3);
    await store.close();
    const s2 = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    t.same(
      (await s2.all('apps')).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
      [{ pad: 'x'.repeat(200) }, { v: 1 }, { v: 6 }],
      'after reopen: the acknowledged records, none of the failed ones',
    );
    await s2.close();
  });
}

t.test('with no commit coming, the store retries by itself and turns healthy once the disk takes writes', async (t) => {
  const dir = newDir();
  const { io, armed } = faultyIo();
  const clock = createTestClock();
  const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, retryMs: 20, logger: silent, io, clock });
  armed.write = 'ENOSPC';
  await t.rejects(store.commit([{ table: 'k', id: 'x', value: {} }]), { code: 'ENOSPC' });
  const tried = armed.writes.length;
  await clock.advance(80);
  t.equal(armed.writes.length - tried, 4, 'a retry every 20 ms');
  t.equal(store.health().ok, false, 'still failing while the disk is full');
  armed.write = null;
  await clock.advance(20);
  t.same(store.health(), { ok: true }, 'healthy again at the next retry, without any caller commit');
  await store.commit([{ table: 'k', id: 'y', value: {} }]);
  await store.close();
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.same(await s.all('k'), [{}]);
  t.equal(await s.get('k', 'x'), undefined);
  await s.close();
});

t.test(
  'a full disk that still takes a short write: health stays not ok until a write as large as the failed one passes',
  async (t) => {
    const dir = newDir();
    const { io, armed } = faultyIo();
    const clock = createTestClock();
    const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, retryMs: 1, logger: silent, io, clock });
    await store.commit([{ table: 'k', id: 'a', value: {} }]);
    armed.fits = 60; // an empty commit's line (about 25 bytes) fits; a record does not
    const record = { text: 'a message of ordinary size '.repeat(4) };
    const err = await store.commit([{ table: 'k', id: 'b', value: record }]).then(
      () => null,
      (e: unknown) => e,
    );
    t.match(
      err,
      { name: 'StoreUnavailable', code: 'ENOSPC', reason: /the store cannot write: ENOSPC/ },
      'refused as unavailable, with health’s reason',
    );
    const failedBytes = must(armed.writes.at(-1));
    // the store's own retries run (every 1 ms here): three of them, each as large as the failed write
    const tried = armed.writes.length;
    await clock.advance(3);
    t.ok(
      armed.writes.slice(tried).every((n) => n >= failedBytes),
      `every retry wrote at least the ${failedBytes} bytes that failed: ${armed.writes.slice(tried, tried + 3).join(', ')}`,
    );
    t.equal(store.health().ok, false, 'still not ok: only short writes fit');
    armed.fits = Infinity; // space is back
    await clock.advance(1);
    t.same(
      store.health(),
      { ok: true },
      'ok once a retry as large as the failed write passed, without any caller commit',
    );
    await store.close();
    const s2 = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    t.same(await s2.all('k'), [{}], 'the padded retries read back as empty entries: only a is stored');
    await s2.close();
  },
);

t.test(
  'random ENOSPC/EIO on writes and fdatasyncs during concurrent commits and compactions: only acknowledged commits are ever visible',
  async (t) => {
    const dir = newDir();
    const { io, armed } = faultyIo();
    const store = await openEmbeddedStore<TestTables>({
      dir,
      compactEveryBytes: 4096,
      compactIdleMs: 5,
      retryMs: 5,
      logger: silent,
      io,
    });
    armed.random = 0.15;
    const acked = new Set<string>();
    const rejected = new Set<string>();
    let violations = 0;
    let failures = 0;
    const writer = async (w: number) => {
      for (let i = 0; i < 150; i++) {
        const id = `w${w}-${i}`;
        try {
          await store.commit([{ table: 'apps', id, value: { id, ownerId: `o${w}`, pad: 'p'.repeat(40) } }]);
          acked.add(id);
          if (!(await store.get('apps', id))) violations++;
        } catch {
          failures++;
          rejected.add(id);
          if (await store.get('apps', id)) violations++;
        }
        // no rejected record is visible at any point
        if (i % 10 === 0) for (const r of rejected) if (await store.get('apps', r)) violations++;
        if (i % 50 === 25) void store.compact().catch(() => {});
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(writer));
    armed.random = 0;
    t.ok(failures > 20, `${failures} commits failed`);
    t.ok(acked.size > 200, `${acked.size} commits acknowledged`);
    t.ok(store.stats().compactions > 0, `${store.stats().compactions} compactions ran between the faults`);
    t.equal(violations, 0, 'memory never showed a rejected commit, nor missed an acknowledged one');
    // the secondary index (find) follows commits and rollbacks: it equals a scan of memory
    const all = await store.all('apps');
    for (const w of [0, 1, 2, 3, 4, 5]) {
      const found = (await store.find('apps', 'ownerId', `o${w}`)).map((r) => r.id).sort();
      t.same(
        found,
        all
          .filter((r) => r.ownerId === `o${w}`)
          .map((r) => r.id)
          .sort(),
        `find(ownerId o${w}) equals memory, rollbacks included`,
      );
    }
    const crash = copyDir(dir);
    await until(() => store.health().ok); // the store's retries (every 5 ms) find the disk taking writes
    t.same(store.health(), { ok: true });
    await store.close();
    for (const d of [crash, dir]) {
      const s = await openEmbeddedStore<TestTables>({ dir: d, compactIdleMs: 0, logger: silent });
      const ids = new Set((await s.all('apps')).map((r) => r.id));
      t.same(
        [...acked].filter((id) => !ids.has(id)),
        [],
        `${d === dir ? 'after close' : 'crash copy'}: every acknowledged commit present`,
      );
      t.same(
        [...ids].filter((id) => !acked.has(id)),
        [],
        `${d === dir ? 'after close' : 'crash copy'}: no commit that failed`,
      );
      await s.close();
    }
  },
);

t.test('closing while the disk still fails: close resolves, the journal keeps every acknowledged commit', async (t) => {
  const dir = newDir();
  const { io, armed } = faultyIo();
  const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, retryMs: 60_000, logger: silent, io });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  armed.write = 'ENOSPC'; // the file is cut back at once (truncate works on a full disk): nothing left to repair
  await t.rejects(store.commit([{ table: 'k', id: 'b', value: { v: 2 } }]), { code: 'ENOSPC' });
  await t.resolves(store.close(), 'close does not fold a failing store into appreg.json, and does not throw');
  t.equal(store.health().ok, false, 'an empty barrier at close does not count as a successful write');
  t.notOk(fs.existsSync(path.join(dir, 'appreg.json')), 'no snapshot written');
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.same(await s.all('k'), [{ v: 1 }]);
  await s.close();
});

/** This process's open files under `dir` (Linux: /proc/self/fd; elsewhere none are seen). */
function openUnder(dir: string): string[] {
  if (!fs.existsSync('/proc/self/fd')) return [];
  return fs.readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const to = fs.readlinkSync(`/proc/self/fd/${fd}`);
      return to.startsWith(dir + path.sep) ? [path.basename(to)] : [];
    } catch {
      return []; // the fd readdir itself used, closed since
    }
  });
}

t.test('a compaction whose journal switch is refused by a failing write closes the journal it opened', async (t) => {
  const dir = newDir();
  const { io, armed } = faultyIo();
  // a write waits while held: the compaction starts while the writer is not yet faulty
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  let holding = false;
  let waiting = false;
  const gated: StoreIo = {
    ...io,
    async write(h, buf, off, len) {
      if (holding) {
        waiting = true;
        await held;
      }
      return io.write(h, buf, off, len);
    },
  };
  const store = await openEmbeddedStore<TestTables>({
    dir,
    compactIdleMs: 0,
    retryMs: 60_000,
    logger: silent,
    io: gated,
  });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  holding = true;
  const failing = store.commit([{ table: 'k', id: 'b', value: { v: 2 } }]);
  await until(() => waiting);
  const compaction = store.compact(); // opens journal 2, then asks the writer to switch to it
  // the write fails and the file cannot be repaired: the switch is refused, whether asked before or after
  armed.write = 'EIO';
  armed.datasync = 'EIO';
  release();
  await t.rejects(failing, { code: 'EIO' });
  await t.rejects(compaction, { code: 'EIO' }, 'the switch is refused: the writer is faulty');
  t.same(openUnder(dir), ['appreg.journal.1'], 'only the active journal is open, not the one the switch refused');
  armed.write = null;
  armed.datasync = null;
  await store.close();
  t.same(openUnder(dir), [], 'nothing open after close');
});
