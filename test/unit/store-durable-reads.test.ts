/**
 * Durable before visible on the embedded store (src/store/durable-reads.ts): while a commit's journal
 * batch waits for its fdatasync, no read answers with what it changed; once the batch settles, reads
 * answer with what is then true: the old records if the fdatasync failed and the commit was undone,
 * the new ones if it succeeded. Reads of records no pending commit touches answer at once.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { nodeIo, type StoreIo } from '../../src/store/fsync.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded-store.js';
import type { StoreLogger } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-durable-reads-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const silent: StoreLogger = { warn: () => {} };
/** A few turns of the event loop: enough for any read that does not wait to have answered (no time passes). */
async function turns(k = 20): Promise<void> {
  for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r));
}

/** fdatasync held while `hold` is set, until the test lets it pass or fail. */
function heldSync() {
  const gate = { hold: false, held: null as null | { pass: () => void; fail: (code: string) => void } };
  const io: Partial<StoreIo> = {
    datasync(h: FileHandle) {
      if (!gate.hold) return nodeIo.datasync(h);
      return new Promise<void>((resolve, reject) => {
        gate.held = {
          pass: () => void nodeIo.datasync(h).then(resolve, reject),
          fail: (code) => reject(Object.assign(new Error(`${code}: injected`), { code })),
        };
      });
    },
  };
  return { io, gate };
}

/** The next batch whose fdatasync is held (taken: the gate holds the one after it anew). */
async function nextHeld(gate: ReturnType<typeof heldSync>['gate']) {
  while (!gate.held) await turns(1);
  const held = gate.held;
  gate.held = null;
  return held;
}

const byV = (rs: { v: unknown }[]) => rs.map((r) => String(r.v)).sort();

/** Every read kind of the records the pending commit touches, each answer kept as it arrives. */
function readAll(store: EmbeddedStore<TestTables>) {
  const answers: Record<string, unknown> = {};
  const read = (name: string, p: Promise<unknown>) =>
    p.then((v) => {
      answers[name] = v;
    });
  const all = Promise.all([
    read('get a', store.get('apps', 'a')),
    read('get b', store.get('apps', 'b')),
    read('get d', store.get('apps', 'd')),
    read(
      'getMany',
      store.getMany([
        { table: 'links', id: 'l' }, // not pending itself: names b
        { table: 'apps', idFrom: { key: 0, field: 'to' } },
        { table: 'apps', id: 'a' },
        { table: 'apps', id: 'd' },
      ]),
    ),
    read('getMany shared', store.getMany([{ table: 'apps', id: 'a' }], { shared: true })),
    read(
      'find',
      store.find('apps', 'ownerId', 'o').then((rs) => byV(rs)),
    ),
    read('countWhere', store.countWhere('apps', 'ownerId', 'o')),
    read(
      'findPage',
      store
        .findPage('apps', 'ownerId', 'o', { orderBy: 'n', limit: 10 })
        .then((rs) => rs.map((r: { v: unknown }) => String(r.v))),
    ),
    read(
      'all',
      store.all('apps').then((rs) => byV(rs)),
    ),
    read(
      'scan',
      (async () => {
        const seen: unknown[] = [];
        await store.scan('apps', (r: { v: unknown }) => void seen.push(String(r.v)));
        return seen.sort();
      })(),
    ),
    read('count', store.count('apps')),
  ]);
  return { answers, all };
}

/** A new store whose journal's fdatasync the returned gate holds on cue. */
async function openHeld() {
  const { io, gate } = heldSync();
  const store = await openEmbeddedStore<TestTables>({
    dir: path.join(tmpRoot, `d${++n}`),
    compactIdleMs: 0,
    retryMs: 60_000,
    logger: silent,
    io,
  });
  return { store, gate };
}

async function setUp() {
  const { store, gate } = await openHeld();
  await store.commit([
    { table: 'apps', id: 'a', value: { v: 'a1', ownerId: 'o', n: 1 } },
    { table: 'apps', id: 'd', value: { v: 'd1', ownerId: 'o', n: 4 } },
    { table: 'links', id: 'l', value: { to: 'b' } },
    { table: 'other', id: 'x', value: { v: 'x1' } },
  ]);
  gate.hold = true;
  // one group: a changed, b inserted, d deleted
  const commit = store.commit([
    { table: 'apps', id: 'a', value: { v: 'a2', ownerId: 'o', n: 1 } },
    { table: 'apps', id: 'b', value: { v: 'b2', ownerId: 'o', n: 2 } },
    { table: 'apps', id: 'd', value: null },
  ]);
  // a commit after it checks its expectation against the pending one (order), and stands or falls with it
  const later = store.commit(
    [{ table: 'apps', id: 'e', value: { v: 'e2', ownerId: 'o', n: 5 } }],
    [{ table: 'apps', id: 'b', value: { v: 'b2', ownerId: 'o', n: 2 } }],
  );
  while (!gate.held) await turns(1);
  return { store, gate, commit, later };
}

t.test('an fdatasync that fails: no read ever answered with the undone records', async (t) => {
  const { store, gate, commit, later } = await setUp();
  const { answers, all } = readAll(store);
  t.same(await store.get('other', 'x'), { v: 'x1' }, 'a record no pending commit touches is read at once');
  t.same(await store.count('other'), 1, 'so is a table no pending commit touches');
  await turns();
  t.same(Object.keys(answers), [], 'no read of a pending record answered while its fdatasync was pending');

  must(gate.held).fail('EIO');
  await t.rejects(commit, { code: 'EIO' });
  await t.rejects(later, { code: 'EIO' }, 'the commit queued behind it is undone with it');
  await all;
  t.same(answers, {
    'get a': { v: 'a1', ownerId: 'o', n: 1 },
    'get b': undefined,
    'get d': { v: 'd1', ownerId: 'o', n: 4 },
    getMany: [{ to: 'b' }, undefined, { v: 'a1', ownerId: 'o', n: 1 }, { v: 'd1', ownerId: 'o', n: 4 }],
    'getMany shared': [{ v: 'a1', ownerId: 'o', n: 1 }],
    find: ['a1', 'd1'],
    countWhere: 2,
    findPage: ['a1', 'd1'],
    all: ['a1', 'd1'],
    scan: ['a1', 'd1'],
    count: 2,
  });
  gate.hold = false;
  await store.close();
});

t.test('an fdatasync that succeeds: the reads waiting answer with the new records', async (t) => {
  const { store, gate, commit, later } = await setUp();
  const { answers, all } = readAll(store);
  await turns();
  t.same(Object.keys(answers), [], 'nothing answered before the fdatasync');
  gate.hold = false; // the later group's fdatasync passes at once
  must(gate.held).pass();
  await commit;
  await later;
  await all;
  t.same(answers, {
    'get a': { v: 'a2', ownerId: 'o', n: 1 },
    'get b': { v: 'b2', ownerId: 'o', n: 2 },
    'get d': undefined,
    getMany: [{ to: 'b' }, { v: 'b2', ownerId: 'o', n: 2 }, { v: 'a2', ownerId: 'o', n: 1 }, undefined],
    'getMany shared': [{ v: 'a2', ownerId: 'o', n: 1 }],
    find: ['a2', 'b2', 'e2'],
    countWhere: 3,
    findPage: ['a2', 'b2', 'e2'],
    all: ['a2', 'b2', 'e2'],
    scan: ['a2', 'b2', 'e2'],
    count: 3,
  });
  await store.close();
});

t.test(
  'reads wait only for the commits pending when they began: a table written without pause is still read',
  async (t) => {
    const { store, gate } = await openHeld();
    await store.commit([{ table: 'apps', id: 'a', value: { v: 'a1', ownerId: 'o', n: 1 } }]);
    gate.hold = true;
    const first = store.commit([{ table: 'apps', id: 'a', value: { v: 'a2', ownerId: 'o', n: 1 } }]);
    const held1 = await nextHeld(gate);
    const answers: Record<string, unknown> = {};
    const reads = Promise.all([
      store.get('apps', 'a').then((v) => (answers.get = v)),
      store.getMany([{ table: 'apps', id: 'a' }]).then((v) => (answers.getMany = v)),
      store.all('apps').then((v) => (answers.all = byV(v))),
      store.find('apps', 'ownerId', 'o').then((v) => (answers.find = byV(v))),
      store.findPage('apps', 'ownerId', 'o', { orderBy: 'n', limit: 5 }).then((v) => (answers.findPage = byV(v))),
      store.countWhere('apps', 'ownerId', 'o').then((v) => (answers.countWhere = v)),
      store.count('apps').then((v) => (answers.count = v)),
    ]);
    // while the first batch is written, the next commits queue: a changed a again, b added
    const second = store.commit([
      { table: 'apps', id: 'a', value: { v: 'a3', ownerId: 'o', n: 1 } },
      { table: 'apps', id: 'b', value: { v: 'b3', ownerId: 'o', n: 2 } },
    ]);
    await turns();
    t.same(Object.keys(answers), [], 'nothing answered before the first batch is durable');
    held1.pass();
    await first;
    const held2 = await nextHeld(gate); // the second batch is being written, its fdatasync held
    await reads; // answered without waiting for it
    t.same(
      answers,
      {
        get: { v: 'a2', ownerId: 'o', n: 1 },
        getMany: [{ v: 'a2', ownerId: 'o', n: 1 }],
        all: ['a2'],
        find: ['a2'],
        findPage: ['a2'],
        countWhere: 1,
        count: 1,
      },
      'each read answered with the durable records: a2, not a3 nor b3 of the batch still pending',
    );
    let later: unknown = 'not yet';
    const readB = store.get('apps', 'b').then((v) => (later = v));
    await turns();
    t.equal(later, 'not yet', 'a read of b begun now waits for the second batch');
    held2.fail('ENOSPC');
    await t.rejects(second, { code: 'ENOSPC' });
    await readB;
    t.equal(later, undefined, 'which failed: b never was');
    t.same(await store.get('apps', 'a'), { v: 'a2', ownerId: 'o', n: 1 }, 'a is a2, as every read said');
    gate.hold = false;
    await store.close();
  },
);
