/**
 * Record texts kept outside the heap (src/store/text-arena.ts, used by src/store/tables.ts): every
 * text comes back as put, whatever its characters and wherever it falls (the end of a slab, longer
 * than a slab); freed space is let go or swept, and every read, a snapshot taken before, a
 * compaction and a reopen still give back the records written.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { checkExpectations } from '../../src/store/embedded-ops.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { TableSnapshot } from '../../src/store/snapshot.js';
import { Tables } from '../../src/store/tables.js';
import { TextArena } from '../../src/store/text-arena.js';
import { StoreConflict } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';
import { must } from '../../src/must.js';

const SLAB = 1 << 20;
const MB = 1 << 20;

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-text-arena-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

/** A text of `chars` characters cycling through one-, two-, three- and four-byte UTF-8 ones. */
const mixed = (chars: number, seed: number) => {
  const alphabet = ['a', 'é', '€', '🙂', '"', '\\', 'z'];
  let s = '';
  while (s.length < chars) s += alphabet[(s.length + seed) % alphabet.length];
  return s.slice(0, chars).replace(/[\ud800-\udbff]$/, 'x'); // no surrogate half at the cut
};

t.test('texts come back as put: non-ASCII, empty, filling a slab to its last byte, longer than a slab', async (t) => {
  const arena = new TextArena();
  const texts = [
    '',
    '{"a":"é🙂€"}',
    JSON.stringify({ lone: '\ud800' }), // JSON.stringify escapes a lone surrogate: the text is ASCII
    'x'.repeat(SLAB - 4 - 24), // with the 24 bytes before it (two entries of 8 and 16), slab 0 ends at its last byte
    'y', // so this one opens the next slab
    mixed(SLAB / 4, 1), // more bytes than characters: about 2.5 MB of UTF-8 in 262,144 characters, a slab of its own
    'z'.repeat(SLAB - 3), // one byte past what a slab holds with its length: a slab of its own
    mixed(300_000, 2), // fits in characters, not at the end of the slab in bytes: the next slab
  ];
  for (let i = 0; i < 2000; i++) texts.push(mixed(i % 777, i));
  const handles = texts.map((s) => arena.putCoded(s));
  t.equal(new Set(handles).size, handles.length, 'one handle a text');
  texts.forEach((s, i) => {
    if (arena.text(handles[i] as number) !== s) t.fail(`text ${i} (${s.length} characters) came back different`);
  });
  t.equal(arena.text(handles[4] as number), 'y');
  t.equal(arena.byteLength(handles[4] as number), 1, 'its UTF-8 length');
  t.equal(
    arena.byteLength(handles[1] as number),
    Buffer.byteLength(texts[1] as string) - 2,
    'its UTF-8 length, its key `"a":` in a code of 2 bytes',
  );
  const plain = arena.put(texts[1] as string);
  t.equal(arena.byteLength(plain), Buffer.byteLength(texts[1] as string), 'put keeps the text as it is');
  t.equal(arena.text(plain), texts[1]);
  t.ok(Number.isSafeInteger(handles.at(-1)) && (handles.at(-1) as number) < 2 ** 31, 'handles are small integers');
  t.pass('every text came back as put');
});

t.test('a slab is let go once nothing in it is live; a reader taken before still reads its texts', async (t) => {
  const arena = new TextArena();
  const big = 'b'.repeat(100_000);
  const first = Array.from({ length: 20 }, () => arena.put(big)); // about two slabs
  arena.put('keeps the third slab current');
  const slabs = arena.stats().slabs;
  const reader = arena.reader();
  for (const h of first) arena.free(h);
  t.ok(arena.stats().slabs < slabs, `slabs let go (${slabs} → ${arena.stats().slabs})`);
  t.equal(arena.stats().garbageBytes < SLAB, true, 'their bytes are no longer counted as held garbage');
  t.equal(reader.text(first[0] as number), big, 'the reader reads a text freed after it was taken');
  t.throws(() => arena.text(first[0] as number), RangeError, 'the arena does not');
});

t.test('Tables: rewritten and deleted keys, the sweep reclaiming freed space, a snapshot taken before', async (t) => {
  const tables = new Tables({ sweepAfterBytes: MB, codedFrom: 0 });
  const N = 6_000;
  const record = (i: number, round: number) => JSON.stringify({ id: `r${i}`, round, pad: mixed(800, i + round) });
  tables.apply(Array.from({ length: N }, (_, i) => ({ table: 'queue', id: `r${i}`, json: record(i, 0) })));
  const snapshot = new TableSnapshot(tables.copyEntries(), []);
  const unchanged = tables.get('queue', 'r3'); // never rewritten
  const rewritten = tables.get('queue', 'r1');
  const held0 = tables.textStats();
  // two records of three rewritten three times over (their first slabs left a third live), then a
  // tenth deleted and written again
  const later = (i: number) => i % 3 !== 0;
  for (let round = 1; round <= 3; round++)
    for (let i = 0; i < N; i += 100)
      tables.apply(
        Array.from({ length: 100 }, (_, k) => i + k)
          .filter(later)
          .map((j) => ({ table: 'queue', id: `r${j}`, json: record(j, round) })),
      );
  for (let i = 0; i < N; i += 10) tables.apply([{ table: 'queue', id: `r${i}`, json: null }]);
  t.equal(tables.get('queue', 'r10'), undefined, 'deleted');
  for (let i = 0; i < N; i += 10) tables.apply([{ table: 'queue', id: `r${i}`, json: record(i, 4) }]);
  t.ok(held0.liveBytes > 8 * MB, `live text ${Math.round(held0.liveBytes / MB)} MB`);
  const unswept = tables.textStats();
  t.ok(
    unswept.garbageBytes > unswept.liveBytes / 2,
    `no sweep while the snapshot holds the slabs: ${Math.round(unswept.garbageBytes / MB)} MB of garbage for ${Math.round(unswept.liveBytes / MB)} MB live`,
  );
  // the snapshot captured before any of it streams the records as they were then
  let n = 0;
  for (const [id, text] of snapshot.records('queue')) {
    if (text !== record(Number(id.slice(1)), 0)) t.fail(`snapshot: ${id} differs`);
    n++;
  }
  t.equal(n, N, 'the snapshot streams every record as captured');
  snapshot.release();
  snapshot.release(); // twice: no more than once
  tables.apply([{ table: 'other', id: 'o1', json: '{"id":"o1"}' }]); // the next change sweeps
  const held = tables.textStats();
  t.ok(
    held.garbageBytes < held.liveBytes / 2,
    `swept once released: ${Math.round(held.garbageBytes / MB)} MB of garbage held for ${Math.round(held.liveBytes / MB)} MB live (a third of the first slabs live, unswept: two thirds)`,
  );
  for (let i = 0; i < N; i++) {
    const want = record(i, i % 10 === 0 ? 4 : later(i) ? 3 : 0);
    if (JSON.stringify(tables.get('queue', `r${i}`)) !== want) t.fail(`r${i} reads back different`);
  }
  t.equal(tables.count('queue'), N);
  t.notOk(tables.isSource(must(rewritten), 'queue', 'r1'), 'a record read before its rewrite is not its source');
  t.notOk(tables.isSource(must(unchanged), 'queue', 'r3'), 'nor one read before a sweep moved its text');
  t.ok(tables.isSource(must(tables.get('queue', 'r3')), 'queue', 'r3'), 'one read now is');
  // as an expectation, a record moved is still the record read (compared as text), a rewritten one is not
  t.doesNotThrow(() => checkExpectations(tables, [{ table: 'queue', id: 'r3', value: unchanged }]));
  t.throws(() => checkExpectations(tables, [{ table: 'queue', id: 'r1', value: rewritten }]), StoreConflict);
});

t.test('a reader held keeps the arena from sweeping until it is released, each reader once', async (t) => {
  const arena = new TextArena({ minGarbage: 1 });
  const handles = Array.from({ length: 40 }, (_, i) => arena.put(mixed(50_000, i)));
  const a = arena.reader();
  const b = arena.reader();
  for (let i = 0; i < handles.length; i += 2) arena.free(handles[i] as number);
  t.notOk(arena.wantsSweep, 'two readers held: no sweep');
  a.release();
  a.release();
  t.notOk(arena.wantsSweep, 'one released twice, the other still held: no sweep');
  t.equal(b.text(handles[0] as number), mixed(50_000, 0), 'the reader still held reads a freed text');
  b.release();
  t.ok(arena.wantsSweep, 'both released: the garbage asks for a sweep');
  t.throws(() => b.text(handles[1] as number), RangeError, 'a released reader holds nothing');
});

t.test('embedded: records rewritten over many slabs, an expectation, a compaction and a reopen', async (t) => {
  const dir = path.join(tmpRoot, 'embedded');
  const open = () => openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, fsync: false, logger: { warn() {} } });
  let s = await open();
  const N = 8_000;
  const value = (i: number, round: number) => ({ id: `q${i}`, dueAt: i, round, note: mixed(1000, i + round) });
  // 20,000 small records first: the table's later texts have their keys coded (tables.ts CODED_FROM)
  const FILL = 20_000;
  for (let i = 0; i < FILL; i += 2_000)
    await s.commit(
      Array.from({ length: 2_000 }, (_, k) => ({
        table: 'queue',
        id: `f${i + k}`,
        value: { id: `f${i + k}`, dueAt: 0 },
      })),
    );
  for (let i = 0; i < N; i += 500)
    await s.commit(
      Array.from({ length: 500 }, (_, k) => ({ table: 'queue', id: `q${i + k}`, value: value(i + k, 0) })),
    );
  const kept = await s.get('queue', `q${N - 1}`); // never rewritten
  for (let round = 1; round <= 3; round++)
    for (let i = 0; i < N - 1; i += 500)
      await s.commit(
        Array.from({ length: Math.min(500, N - 1 - i) }, (_, k) => ({
          table: 'queue',
          id: `q${i + k}`,
          value: value(i + k, round),
        })),
      );
  await s.commit(
    [{ table: 'queue', id: `q${N - 1}`, value: { ...kept, round: 9 } }],
    [{ table: 'queue', id: `q${N - 1}`, value: kept }],
  );
  await t.rejects(
    s.commit(
      [{ table: 'queue', id: `q${N - 1}`, value: kept as object }],
      [{ table: 'queue', id: `q${N - 1}`, value: kept }],
    ),
    StoreConflict,
    'a record read before its rewrite is stale',
  );
  await s.compact();
  await s.close();
  s = await open();
  for (let i = 0; i < N - 1; i++)
    if (JSON.stringify(await s.get('queue', `q${i}`)) !== JSON.stringify(value(i, 3))) t.fail(`q${i} after reopen`);
  t.same(await s.get('queue', `q${N - 1}`), { ...value(N - 1, 0), round: 9 });
  t.equal(await s.count('queue'), N + FILL);
  t.same(await s.get('queue', 'f7'), { id: 'f7', dueAt: 0 }, 'a text written before the table was large, not coded');
  await s.close();
});
