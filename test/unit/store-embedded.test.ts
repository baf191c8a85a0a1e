/**
 * The parts of the Store<TestTables> contract added for several daemons, on both in-process stores:
 * expectations, find through the secondary indexes (after commits, rollbacks and reopen),
 * claim leases, hit windows, publish/subscribe, and reads that return copies.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { StoreConflict, type Store } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-contract-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const newDir = () => path.join(tmpRoot, `d${++n}`);
const silent = { warn: () => {} };

const ids = (rs: { id: string }[]) => rs.map((r) => r.id).sort();

const kinds: Array<[string, () => Promise<Store<TestTables>>]> = [
  ['memory', async () => createMemoryStore<TestTables>()],
  ['embedded', () => openEmbeddedStore<TestTables>({ dir: newDir(), compactIdleMs: 0, logger: silent })],
];

for (const [kind, open] of kinds) {
  t.test(`${kind}: expectations`, async (t) => {
    const s = await open();
    t.equal(s.kind, 'embedded');
    await s.commit([{ table: 'apps', id: 'a', value: { id: 'a', n: 1 } }]);
    const read = await s.get('apps', 'a');
    await s.commit([{ table: 'apps', id: 'a', value: { id: 'a', n: 2 } }], [{ table: 'apps', id: 'a', value: read }]);
    t.same(await s.get('apps', 'a'), { id: 'a', n: 2 }, 'holds: written');
    // what was read before is stale now: nothing of the commit is written
    const stale = s.commit(
      [
        { table: 'apps', id: 'b', value: { id: 'b' } },
        { table: 'apps', id: 'a', value: { id: 'a', n: 3 } },
      ],
      [{ table: 'apps', id: 'a', value: read }],
    );
    await t.rejects(stale, StoreConflict);
    t.same(await s.get('apps', 'a'), { id: 'a', n: 2 }, 'conflict: a unchanged');
    t.equal(await s.get('apps', 'b'), undefined, 'conflict: b not written');
    // absent-expectation: claims a name exactly once
    const claimName = () =>
      s.commit([{ table: 'names', id: 'x', value: { id: 'x' } }], [{ table: 'names', id: 'x', value: undefined }]);
    const results = await Promise.allSettled([claimName(), claimName()]);
    t.same(
      results.map((r) => r.status),
      ['fulfilled', 'rejected'],
      'absent-expectation: the second claim conflicts',
    );
    t.ok((results[1] as PromiseRejectedResult).reason instanceof StoreConflict);
    // an expectation on a record that was deleted
    await s.commit([{ table: 'apps', id: 'a', value: null }]);
    await t.rejects(s.commit([], [{ table: 'apps', id: 'a', value: { id: 'a', n: 2 } }]), StoreConflict);
    // equal as JSON: key order does not matter
    await s.commit([{ table: 'apps', id: 'c', value: { id: 'c', n: 1 } }]);
    await s.commit(
      [{ table: 'apps', id: 'c', value: { id: 'c', n: 2 } }],
      [{ table: 'apps', id: 'c', value: { n: 1, id: 'c' } }],
    );
    t.same(await s.get('apps', 'c'), { id: 'c', n: 2 });
    await s.close();
  });

  t.test(`${kind}: reads return copies`, async (t) => {
    const s = await open();
    const value = { id: 'a', n: 1, nested: { x: 1 } };
    await s.commit([{ table: 'apps', id: 'a', value }]);
    value.nested.x = 99; // the caller's object after commit
    const r1 = await s.get('apps', 'a');
    t.equal(must(r1).nested.x, 1, 'commit stored a copy');
    must(r1).nested.x = 2;
    const [f] = await s.find('apps', 'ownerId', 'nobody').then(() => s.all('apps'));
    must(f).n = 5;
    t.same(
      await s.get('apps', 'a'),
      { id: 'a', n: 1, nested: { x: 1 } },
      'changing what get/all returned changes nothing',
    );
    t.not(await s.get('apps', 'a'), await s.get('apps', 'a'), 'two reads, two objects');
    await s.close();
  });

  t.test(`${kind}: find`, async (t) => {
    const s = await open();
    await s.commit([
      { table: 'deliveryLog', id: 'a', value: { id: 'a', ownerId: 'u1', appId: 'w' } },
      { table: 'deliveryLog', id: 'b', value: { id: 'b', ownerId: 'u1', appId: 'w' } },
      { table: 'deliveryLog', id: 'c', value: { id: 'c', ownerId: 'u2' } },
    ]);
    t.same(ids(await s.find('deliveryLog', 'ownerId', 'u1')), ['a', 'b']);
    t.same(ids(await s.find('deliveryLog', 'appId', 'w')), ['a', 'b']);
    await s.commit([
      { table: 'deliveryLog', id: 'b', value: { id: 'b', ownerId: 'u2' } },
      { table: 'deliveryLog', id: 'a', value: null },
    ]);
    t.same(ids(await s.find('deliveryLog', 'ownerId', 'u1')), [], 'moved and deleted records leave the old key');
    t.same(ids(await s.find('deliveryLog', 'ownerId', 'u2')), ['b', 'c']);
    t.same(ids(await s.find('deliveryLog', 'appId', 'w')), []);
    // @ts-expect-error -- not an indexed field
    await t.rejects(s.find('deliveryLog', 'name', 'x'), TypeError, 'a field without an index is a programming error');
    await s.close();
  });

  t.test(`${kind}: claim`, async (t) => {
    const s = await open();
    await s.commit([
      { table: 'jobs', id: 'j1', value: { id: 'j1', dueAt: 100 } },
      { table: 'jobs', id: 'j2', value: { id: 'j2', dueAt: 200 } },
      { table: 'jobs', id: 'j3', value: { id: 'j3', dueAt: 1600 } },
    ]);
    const req = { table: 'jobs', dueField: 'dueAt', now: 500, leaseUntil: 1500, limit: 10 };
    const [a, b] = await Promise.all([s.claim({ ...req, owner: 'A' }), s.claim({ ...req, owner: 'B' })]);
    t.same(ids(a), ['j1', 'j2'], 'the first claimer leases the due records');
    t.same(b, [], 'the second claimer gets none of them');
    t.same(
      a.map((r) => [r.leaseOwner, r.leaseUntil]),
      [
        ['A', 1500],
        ['A', 1500],
      ],
      'returned with the lease',
    );
    t.same(await s.get('jobs', 'j1'), { id: 'j1', dueAt: 100, leaseOwner: 'A', leaseUntil: 1500 }, 'lease stored');
    t.same(ids(await s.claim({ ...req, owner: 'A' })), ['j1', 'j2'], 'the owner may claim its own again');
    t.same(await s.claim({ ...req, owner: 'B', now: 1499 }), [], 'live lease until leaseUntil');
    const expired = await s.claim({ ...req, owner: 'B', now: 1500, leaseUntil: 3000, limit: 2 });
    t.same(ids(expired), ['j1', 'j2'], 'an expired lease is claimable (limit honoured: j3 waits)');
    t.same(ids(await s.claim({ ...req, owner: 'C', now: 1600, limit: 1 })), ['j3']);
    await s.close();
  });

  t.test(`${kind}: hit windows`, async (t) => {
    const s = await open();
    const count = async (key: string, windowMs: number, now: number) => (await s.hit(key, windowMs, now)).count;
    t.equal(await count('k', 1000, 5000), 1);
    t.equal(await count('k', 1000, 5999), 2, 'same window');
    t.equal(await count('other', 1000, 5999), 1, 'keys are separate');
    t.equal(await count('k', 1000, 6000), 1, 'a new window starts over');
    t.equal(await count('k', 60_000, 6000), 1, 'another window size is another counter');
    // many short-lived keys do not pile up: ended windows are swept
    for (let i = 0; i < 50_000; i++) await s.hit(`burst${i}`, 1, 6000 + (i % 900));
    t.equal(await count('k', 1000, 6950), 2, 'a live window survives the sweeps');
    await s.close();
  });

  t.test(`${kind}: publish/subscribe`, async (t) => {
    const s = await open();
    const got: string[] = [];
    const off = s.subscribe('ch', (p) => got.push(`1:${p}`));
    s.subscribe('ch', () => {
      throw new Error('a failing listener');
    });
    s.subscribe('other', (p) => got.push(`o:${p}`));
    const sent = s.publish('ch', 'hello');
    t.same(got, [], 'delivered asynchronously, not inside publish');
    await sent;
    await new Promise((r) => setImmediate(r));
    t.same(got, ['1:hello'], 'to the listeners of that channel; a throwing listener does not reach the publisher');
    off();
    await s.publish('ch', 'again');
    await new Promise((r) => setImmediate(r));
    t.same(got, ['1:hello'], 'unsubscribed');
    await t.rejects(s.publish('ch', 'x'.repeat(7001)), RangeError, 'payload over 7,000 bytes');
    t.throws(
      () => s.subscribe('Bad-Name', () => {}),
      TypeError,
      'channel names are [a-z0-9_] (what PostgreSQL can LISTEN on)',
    );
    await t.rejects(s.publish('Bad-Name', 'x'), TypeError);
    await s.close();
  });
}

t.test('embedded store: find and leases after rollback and reopen', async (t) => {
  const dir = newDir();
  let fail = false;
  const io = {
    write: async (h: fs.promises.FileHandle, buf: Buffer, off: number, len: number) => {
      if (fail) throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
      return (await h.write(buf, off, len)).bytesWritten;
    },
  };
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent, io, retryMs: 60_000 });
  await s.commit([
    { table: 'apps', id: 'a', value: { id: 'a', ownerId: 'u1' } },
    { table: 'jobs', id: 'j', value: { id: 'j', dueAt: 1 } },
  ]);
  fail = true;
  const moved = s.commit([
    { table: 'apps', id: 'a', value: { id: 'a', ownerId: 'u2' } },
    { table: 'apps', id: 'b', value: { id: 'b', ownerId: 'u2' } },
  ]);
  // applied to the index at once, but a find waits for the write (durable before visible)
  const during = s.find('apps', 'ownerId', 'u2');
  await t.rejects(moved);
  t.same(ids(await during), [], 'a find issued before the write failed never sees its commit');
  t.same(ids(await s.find('apps', 'ownerId', 'u2')), [], 'rolled back out of the index');
  t.same(ids(await s.find('apps', 'ownerId', 'u1')), ['a'], 'the old key is back');
  await t.rejects(s.claim({ table: 'jobs', dueField: 'dueAt', now: 10, owner: 'A', leaseUntil: 100, limit: 5 }));
  t.same(await s.get('jobs', 'j'), { id: 'j', dueAt: 1 }, 'a claim that could not be written leases nothing');
  fail = false;
  t.same(ids(await s.claim({ table: 'jobs', dueField: 'dueAt', now: 10, owner: 'A', leaseUntil: 100, limit: 5 })), [
    'j',
  ]);
  await s.close();
  const again = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.same(ids(await again.find('apps', 'ownerId', 'u1')), ['a'], 'find after reopen (data file)');
  t.same(
    await again.claim({ table: 'jobs', dueField: 'dueAt', now: 50, owner: 'B', leaseUntil: 100, limit: 5 }),
    [],
    'the lease survives reopen',
  );
  await again.commit([{ table: 'apps', id: 'c', value: { id: 'c', ownerId: 'u1' } }]);
  // reopen a copy while the commit is only in the journal
  const copy = newDir();
  fs.cpSync(dir, copy, { recursive: true });
  await again.close();
  const fromJournal = await openEmbeddedStore<TestTables>({ dir: copy, compactIdleMs: 0, logger: silent });
  t.same(ids(await fromJournal.find('apps', 'ownerId', 'u1')), ['a', 'c'], 'find after reopen (journal replay)');
  await fromJournal.close();
});

t.test('embedded store: a format-1 data file (lowdb, indented) opens, and is rewritten as format 2', async (t) => {
  const dir = newDir();
  fs.mkdirSync(dir, { recursive: true });
  const doc = {
    formatVersion: 1,
    journalSeq: 3,
    tables: { apps: { a: { id: 'a', ownerId: 'u' }, __proto__x: { id: 'p' } }, k: { 'we"ird\\id\n': { v: 'é€😀' } } },
  };
  fs.writeFileSync(path.join(dir, 'appreg.json'), JSON.stringify(doc, null, 2));
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.same(ids(await s.find('apps', 'ownerId', 'u')), ['a']);
  t.same(await s.get('k', 'we"ird\\id\n'), { v: 'é€😀' });
  await s.commit([{ table: 'apps', id: 'z', value: { id: 'z' } }]);
  await s.close();
  doc.tables.apps = { ...doc.tables.apps, z: { id: 'z' } } as typeof doc.tables.apps;
  const text = fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8');
  t.match(text, /^\{"formatVersion":2,"journalSeq":4,"tables":\{\n/, 'format 2, one record per line');
  t.same(JSON.parse(text).tables, doc.tables, 'still one JSON document');
  const again = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.same(await again.get('k', 'we"ird\\id\n'), { v: 'é€😀' }, 'format 2 read back (line reader)');
  t.equal(await again.count('apps'), 3);
  await again.close();
});

t.test('a shared read keeps its parse until the record changes (no parse per read of a hot record)', async (t) => {
  const store = createMemoryStore<TestTables>();
  await store.commit([{ table: 'apps', id: 'a1', value: { id: 'a1', n: 1 } }]);
  const [once] = await store.getMany([{ table: 'apps', id: 'a1' }], { shared: true });
  const [x] = await store.getMany([{ table: 'apps', id: 'a1' }], { shared: true });
  const [y] = await store.getMany([{ table: 'apps', id: 'a1' }], { shared: true });
  t.not(once, x, 'a record read once is not kept (a code read to be exchanged)');
  t.equal(x, y, 'from its second read on, the same object while the record is unchanged');
  const [own] = await store.getMany([{ table: 'apps', id: 'a1' }]);
  t.not(own, x, 'a plain read parses a copy');
  await store.commit([{ table: 'apps', id: 'a1', value: { id: 'a1', n: 2 } }]);
  const [z] = await store.getMany([{ table: 'apps', id: 'a1' }], { shared: true });
  t.not(z, x, 'a new parse once it changed');
  t.same(z, { id: 'a1', n: 2 });
});
