/**
 * What a compaction writes (src/store/snapshot.ts, file-sink.ts, data-file.ts): the records as they
 * were at the capture, acknowledged commits only, although commits go on while the file is
 * written; and the data file's bytes, streamed through a buffer smaller than the records.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { readDataFile, SnapshotWriter } from '../../src/store/data-file.js';
import { TableSnapshot } from '../../src/store/snapshot.js';
import { Tables, type CommitUndo, type JsonChange } from '../../src/store/tables.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-snapshot-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const newDir = () => fs.mkdtempSync(path.join(tmpRoot, `d${++n}-`));

const put = (table: string, id: string, value: object | null): JsonChange => ({
  table,
  id,
  json: value === null ? null : JSON.stringify(value),
});

/** Everything a snapshot yields: table → [id, text] in its order (a table without records left out). */
function contentOf(snap: TableSnapshot): Record<string, [string, string][]> {
  const out: Record<string, [string, string][]> = {};
  for (const name of snap.names()) {
    const records = [...snap.records(name)];
    if (records.length) out[name] = records;
  }
  return out;
}

/** Acknowledged: k/a, k/b, k/c, gone/x. */
function acknowledged(): Tables {
  const tables = new Tables();
  tables.apply([
    put('k', 'a', { v: 1 }),
    put('k', 'b', { v: 2 }),
    put('k', 'c', { v: 3 }),
    put('gone', 'x', { v: 'x' }),
  ]);
  return tables;
}

const AT_CAPTURE = {
  k: [
    ['a', '{"v":1}'],
    ['b', '{"v":2}'],
    ['c', '{"v":3}'],
  ],
  gone: [['x', '{"v":"x"}']],
};

t.test('a snapshot holds the records as they were when it was taken, whatever commits come later', async (t) => {
  const tables = acknowledged();
  const snap = new TableSnapshot(tables.copyEntries(), []);
  tables.apply([put('k', 'a', { v: 10 }), put('k', 'b', null), put('k', 'd', { v: 4 }), put('gone', 'x', null)]);
  tables.apply([put('new', 'n', { v: 0 }), put('k', 'b', { v: 20 })]);
  t.same(contentOf(snap), AT_CAPTURE);
  t.same([...snap.records('k')], [], "a table's copy is let go once read");
});

t.test('commits not yet acknowledged are undone in the snapshot, each record once', async (t) => {
  const tables = acknowledged();
  const pending: CommitUndo[] = [
    // changes a, deletes b, inserts d, empties (and so drops) the table gone
    tables.applyWithUndo(5, [put('k', 'a', { v: 10 }), put('k', 'b', null), put('k', 'd', { v: 4 })]),
    tables.applyWithUndo(6, [put('gone', 'x', null), put('only-pending', 'p', { v: 'p' })]),
    // touches a, b and d again: the snapshot still holds what was acknowledged before both
    tables.applyWithUndo(7, [put('k', 'a', { v: 11 }), put('k', 'b', { v: 22 }), put('k', 'd', null)]),
  ];
  t.equal(tables.count('gone'), 0, 'the table gone is no longer in memory');
  const snap = new TableSnapshot(tables.copyEntries(), pending);
  tables.apply([put('k', 'c', null)]); // acknowledged later: not in the snapshot
  const got = contentOf(snap);
  t.same(got.gone, AT_CAPTURE.gone, 'a record of a table the pending commits emptied');
  t.same(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.sort()])), AT_CAPTURE);
});

t.test('the data file: one line per record, through a buffer smaller than a record, any character', async (t) => {
  const tables = new Tables();
  const long = { text: 'é🙂x'.repeat(100) }; // 400 code units: larger than the buffer even as ASCII
  tables.apply([
    put('apps', 'a"1', { name: 'Ünïcode 🙂', n: 1 }),
    put('apps', 'b', long),
    put('users', 'u', { v: '\u2028' }),
  ]);
  const dir = newDir();
  const writer = new SnapshotWriter(dir, { seq: 0, bytes: 0, exists: false }, 64);
  await writer.write(() => ({ seq: 7, tables: new TableSnapshot(tables.copyEntries(), []) }));
  const text = fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8');
  const expected =
    '{"formatVersion":2,"journalSeq":7,"tables":{\n' +
    '"apps":{\n' +
    `"a\\"1":${JSON.stringify({ name: 'Ünïcode 🙂', n: 1 })}\n` +
    `,"b":${JSON.stringify(long)}\n` +
    '}\n' +
    ',"users":{\n' +
    `"u":${JSON.stringify({ v: '\u2028' })}\n` +
    '}\n' +
    '}}\n';
  t.equal(text, expected, 'the line layout, byte for byte');
  t.equal(writer.bytes, Buffer.byteLength(expected), 'the size it reports is the file’s');
  t.equal(writer.seq, 7);
  const back = await readDataFile(path.join(dir, 'appreg.json'));
  t.equal(back?.journalSeq, 7);
  t.same(back?.tables.get('apps', 'b'), long, 'read back as written');
  t.same(back?.tables.get('apps', 'a"1'), { name: 'Ünïcode 🙂', n: 1 });
});

t.test('a snapshot with no record at all is still a data file', async (t) => {
  const dir = newDir();
  const writer = new SnapshotWriter(dir, { seq: 0, bytes: 0, exists: false }, 16);
  await writer.write(() => ({ seq: 0, tables: new TableSnapshot(new Tables().copyEntries(), []) }));
  t.equal(fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8'), '{"formatVersion":2,"journalSeq":0,"tables":{\n}}\n');
  t.equal((await readDataFile(path.join(dir, 'appreg.json')))?.tables.count('apps'), 0);
});

t.test('a written snapshot lets go of its texts: sweeps wait for it, then go on', async (t) => {
  const tables = new Tables({ sweepAfterBytes: 1 });
  const pad = 'p'.repeat(20_000);
  tables.apply(Array.from({ length: 200 }, (_, i) => put('q', `r${i}`, { round: 0, pad })));
  let during = 0;
  const dir = newDir();
  await new SnapshotWriter(dir, { seq: 0, bytes: 0, exists: false }).write(() => {
    const snap = new TableSnapshot(tables.copyEntries(), []);
    // commits go on while it is written: two records of three rewritten, two thirds of every slab freed
    for (let i = 0; i < 200; i++) if (i % 3) tables.apply([put('q', `r${i}`, { round: 1, pad })]);
    during = tables.textStats().garbageBytes;
    return { seq: 1, tables: snap };
  });
  t.ok(during > tables.textStats().liveBytes / 3, `no sweep while it is held (${during} bytes of garbage)`);
  tables.apply([put('q', 'r0', { round: 2, pad })]);
  t.ok(tables.textStats().garbageBytes < during / 4, 'written: the next change sweeps');
  const back = await readDataFile(path.join(dir, 'appreg.json'));
  t.same(back?.tables.get('q', 'r1'), { round: 0, pad }, 'the file holds the records as captured');
});
