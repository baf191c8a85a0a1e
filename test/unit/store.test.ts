import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded-store.js';
import { DATA_FORMAT_VERSION as FORMAT_VERSION } from '../../src/store/format.js';
import { StoreCorruptError, type Store } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-test-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let dirCounter = 0;
const newDir = () => path.join(tmpRoot, `d${++dirCounter}`);
/**
 * A copy of a live store directory, as a crash would leave it. Compaction may rename its temp
 * file or delete an old journal while the copy runs (ENOENT): then the copy is taken again,
 * a moment later, which is just as valid a crash point.
 */
const copyDir = (from: string) => {
  for (let attempt = 0; ; attempt++) {
    const to = newDir();
    try {
      fs.cpSync(from, to, { recursive: true });
      return to;
    } catch (e) {
      fs.rmSync(to, { recursive: true, force: true });
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 20) throw e;
    }
  }
};
/** Every file in a directory with its bytes, for "nothing was modified" checks. */
const dirBytes = (dir: string) =>
  Object.fromEntries(
    fs
      .readdirSync(dir)
      .sort()
      .map((f) => [f, fs.readFileSync(path.join(dir, f)).toString('base64')]),
  );
const journals = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.startsWith('appreg.journal.'))
    .sort();
const noIdle = { compactIdleMs: 0 };

type Asserts = Pick<typeof t, 'equal' | 'same' | 'rejects'>;

async function exerciseBasics(t: Asserts, store: Store<TestTables>) {
  t.equal(await store.count('apps'), 0);
  t.equal(await store.get('apps', 'a'), undefined);
  t.same(await store.all('apps'), []);
  const p = store.commit([
    { table: 'apps', id: 'a', value: { id: 'a', n: 1 } },
    { table: 'apps', id: 'b', value: { id: 'b', n: 2 } },
    { table: 'users', id: 'u', value: { id: 'u', n: 3 } },
  ]);
  // applied to memory before the promise settles
  t.same(await store.get('apps', 'a'), { id: 'a', n: 1 });
  await p;
  t.equal(await store.count('apps'), 2);
  t.same((await store.all('apps')).map((r) => r.id).sort(), ['a', 'b']);
  await store.commit([
    { table: 'apps', id: 'a', value: { id: 'a', n: 10 } },
    { table: 'apps', id: 'b', value: null },
    { table: 'apps', id: 'missing', value: null },
    { table: 'odd', id: '__proto__', value: { id: '__proto__', n: 0 } },
  ]);
  t.same(await store.get('apps', 'a'), { id: 'a', n: 10 });
  t.equal(await store.get('apps', 'b'), undefined);
  t.equal(await store.count('apps'), 1);
  t.equal(await store.count('users'), 1);
  t.same(await store.get('odd', '__proto__'), { id: '__proto__', n: 0 });
  // invalid changes reject and apply nothing
  await t.rejects(
    store.commit([
      { table: 'apps', id: 'c', value: {} },
      { table: '', id: 'x', value: {} },
    ]),
  );
  await t.rejects(store.commit([{ table: 'apps', id: 'c', value: 5 as unknown as object }]));
  t.equal(await store.get('apps', 'c'), undefined);
}

t.test('memory store: put/get/delete/values/count', async (t) => {
  const store = createMemoryStore<TestTables>();
  await exerciseBasics(t, store);
  await store.close();
  await t.rejects(store.commit([]));
});

t.test(
  'embedded store: a close without compaction (a hand-over) leaves the journal, and the next open replays it',
  async (t) => {
    const dir = newDir();
    const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
    await store.commit([{ table: 'apps', id: 'a', value: { id: 'a', n: 1 } }]);
    await store.commit([{ table: 'apps', id: 'b', value: { id: 'b', n: 2 } }]);
    const before = fs.existsSync(path.join(dir, 'appreg.json')) ? fs.readFileSync(path.join(dir, 'appreg.json')) : null;
    await store.close({ compact: false });
    t.ok(
      fs.readdirSync(dir).some((f) => f.startsWith('appreg.journal')),
      'the journal is still there',
    );
    t.same(
      fs.existsSync(path.join(dir, 'appreg.json')) ? fs.readFileSync(path.join(dir, 'appreg.json')) : null,
      before,
      'the data file was not rewritten',
    );
    const again = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
    t.same(await again.get('apps', 'b'), { id: 'b', n: 2 }, 'every commit is back');
    t.equal(await again.count('apps'), 2);
    await again.close();
    t.same(fs.readdirSync(dir).sort(), ['appreg.json'], 'an ordinary close folds it in');
  },
);

t.test('embedded store: put/get/delete/values/count, then persisted across close/reopen', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await exerciseBasics(t, store);
  // a value JSON cannot hold fails the whole commit, nothing applied
  await t.rejects(store.commit([{ table: 'apps', id: 'big', value: { n: 1n } }]));
  t.equal(await store.get('apps', 'big'), undefined);
  await store.close();
  await store.close(); // idempotent
  await t.rejects(store.commit([{ table: 'apps', id: 'z', value: {} }]), /closed/);
  t.same(fs.readdirSync(dir).sort(), ['appreg.json'], 'after close the data file alone holds everything');
  const doc = JSON.parse(fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8'));
  t.equal(doc.formatVersion, FORMAT_VERSION);
  t.equal(doc.journalSeq, 2);
  t.same(doc.tables.apps, { a: { id: 'a', n: 10 } });

  const again = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  t.same(await again.get('apps', 'a'), { id: 'a', n: 10 });
  t.equal(await again.get('apps', 'b'), undefined);
  t.same(await again.get('odd', '__proto__'), { id: '__proto__', n: 0 });
  t.equal(again.stats().lastSeq, 2);
  await again.commit([{ table: 'apps', id: 'c', value: { id: 'c', n: 3 } }]);
  t.equal(again.stats().lastSeq, 3);
  await again.close();
  const third = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  t.equal(await third.count('apps'), 2);
  await third.close();
});

t.test('persisted across a crash: a copy of the directory taken right after the commit resolves', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  for (let i = 0; i < 20; i++) await store.commit([{ table: 'k', id: `i${i}`, value: { i } }]);
  const copy = copyDir(dir);
  t.notOk(fs.existsSync(path.join(copy, 'appreg.json')), 'only the journal holds the data');
  const reopened = await openEmbeddedStore<TestTables>({ dir: copy, ...noIdle });
  t.equal(await reopened.count('k'), 20);
  t.same(await reopened.get('k', 'i19'), { i: 19 });
  await reopened.close();
  await store.close();
});

t.test('a torn last journal line is ignored and cut away before appending', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  await store.commit([{ table: 'k', id: 'b', value: { v: 2 } }]);
  const copy = copyDir(dir);
  await store.close();
  const [j] = journals(copy);
  if (j === undefined) throw new Error('the store left no journal file');
  const jf = path.join(copy, j);
  const good = fs.readFileSync(jf);
  fs.appendFileSync(jf, '{"seq":3,"changes":[{"table":"k","id":"c","val');
  const s2 = await openEmbeddedStore<TestTables>({ dir: copy, ...noIdle });
  t.same(await s2.get('k', 'b'), { v: 2 });
  t.equal(await s2.get('k', 'c'), undefined);
  t.same(fs.readFileSync(jf), good, 'torn tail truncated');
  await s2.commit([{ table: 'k', id: 'd', value: { v: 4 } }]);
  t.equal(s2.stats().lastSeq, 3);
  const copy2 = copyDir(copy); // crash again: the journal must now be clean
  await s2.close();
  const s3 = await openEmbeddedStore<TestTables>({ dir: copy2, ...noIdle });
  t.same(await s3.get('k', 'd'), { v: 4 });
  t.equal(await s3.count('k'), 3);
  await s3.close();

  // a complete but unparsable final line is a torn write too
  const copy3 = newDir();
  fs.mkdirSync(copy3, { mode: 0o700 });
  fs.writeFileSync(path.join(copy3, 'appreg.journal.1'), good.toString() + '\u0000\u0000\u0000\n');
  const s4 = await openEmbeddedStore<TestTables>({ dir: copy3, ...noIdle });
  t.equal(await s4.count('k'), 2);
  await s4.close();
});

t.test('a torn tail followed only by an empty journal (crash right after a compaction switched files)', async (t) => {
  const dir = newDir();
  fs.mkdirSync(dir, { mode: 0o700 });
  const line = (seq: number, id: string) =>
    JSON.stringify({ seq, changes: [{ table: 'k', id, value: { seq } }] }) + '\n';
  fs.writeFileSync(path.join(dir, 'appreg.journal.4'), line(1, 'a') + line(2, 'b') + '{"seq":3,"ch', { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'appreg.journal.5'), '', { mode: 0o600 });
  const s = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  t.equal(await s.count('k'), 2);
  t.equal(fs.readFileSync(path.join(dir, 'appreg.journal.4'), 'utf8'), line(1, 'a') + line(2, 'b'));
  await s.commit([{ table: 'k', id: 'c', value: { seq: 3 } }]);
  t.equal(
    fs.readFileSync(path.join(dir, 'appreg.journal.5'), 'utf8'),
    line(3, 'c'),
    'appends go to the newest journal',
  );
  const copy = copyDir(dir);
  await s.close();
  const s2 = await openEmbeddedStore<TestTables>({ dir: copy, ...noIdle });
  t.equal(await s2.count('k'), 3);
  await s2.close();
});

t.test('garbage in the middle of a journal: StoreCorruptError, files unchanged', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  const copy = copyDir(dir);
  await store.close();
  const jf = path.join(copy, 'appreg.journal.1');
  fs.appendFileSync(jf, 'garbage!\n' + JSON.stringify({ seq: 5, changes: [] }) + '\n');
  const before = dirBytes(copy);
  const err = await openEmbeddedStore<TestTables>({ dir: copy, ...noIdle }).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, StoreCorruptError);
  t.equal((err as StoreCorruptError).file, jf);
  t.match((err as StoreCorruptError).problem, /line 2/);
  t.same(dirBytes(copy), before, 'files byte-for-byte unchanged');

  // a torn line ending a journal that a non-empty journal follows is corrupt too
  const copy2 = copyDir(dir);
  fs.appendFileSync(path.join(copy2, 'appreg.journal.1'), '{"seq":2,"chan');
  fs.writeFileSync(path.join(copy2, 'appreg.journal.2'), JSON.stringify({ seq: 3, changes: [] }) + '\n');
  const before2 = dirBytes(copy2);
  await t.rejects(openEmbeddedStore<TestTables>({ dir: copy2, ...noIdle }), StoreCorruptError);
  t.same(dirBytes(copy2), before2);
});

t.test('a damaged appreg.json: StoreCorruptError, file unchanged', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  await store.close();
  const file = path.join(dir, 'appreg.json');
  const full = fs.readFileSync(file, 'utf8');
  const cases: [string, string | Buffer, RegExp][] = [
    ['truncated', full.slice(0, Math.floor(full.length / 2)), /not valid JSON/],
    ['empty', '', /not valid JSON/],
    ['null', 'null', /not an object/],
    ['wrong shape', JSON.stringify({ formatVersion: 1, journalSeq: 0, tables: [] }), /tables/],
    ['bad record', JSON.stringify({ formatVersion: 1, journalSeq: 0, tables: { k: { a: 3 } } }), /record/],
    ['newer format', JSON.stringify({ formatVersion: FORMAT_VERSION + 1, journalSeq: 0, tables: {} }), /newer/],
  ];
  for (const [name, content, problem] of cases) {
    const d = newDir();
    fs.mkdirSync(d, { mode: 0o700 });
    fs.writeFileSync(path.join(d, 'appreg.json'), content, { mode: 0o600 });
    fs.writeFileSync(path.join(d, 'appreg.journal.3'), JSON.stringify({ seq: 1, changes: [] }) + '\n', { mode: 0o600 });
    const before = dirBytes(d);
    const err = await openEmbeddedStore<TestTables>({ dir: d }).then(
      () => null,
      (e: unknown) => e,
    );
    t.type(err, StoreCorruptError, name);
    t.equal((err as StoreCorruptError).file, path.join(d, 'appreg.json'), name);
    t.match((err as StoreCorruptError).problem, problem, name);
    t.same(dirBytes(d), before, `${name}: files unchanged`);
  }
});

t.test('compaction while 1000 commits race it; reopen sees everything', async (t) => {
  const dir = newDir();
  const clock = createTestClock();
  const store = await openEmbeddedStore<TestTables>({ dir, compactEveryBytes: 8 * 1024, compactIdleMs: 5, clock });
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < 1000; i++) {
    inflight.push(store.commit([{ table: 'r', id: `id${i}`, value: { i, pad: 'p'.repeat(50) } }]));
    if (i % 10 === 9) await Promise.all(inflight.splice(0));
    if (i % 250 === 100) void store.compact(); // explicit ones too, racing the size trigger
    if (i === 600) await clock.advance(5); // the idle trigger fires once, with commits still to come
  }
  await Promise.all(inflight);
  const st = store.stats();
  t.ok(st.compactions >= 3, `compacted ${st.compactions} times`);
  t.ok(fs.existsSync(path.join(dir, 'appreg.json')), 'data file written');
  t.ok(journals(dir).length <= 2, `old journals removed (${journals(dir).join(',')})`);
  const crashCopy = copyDir(dir); // state without a final close
  await store.close();
  t.same(fs.readdirSync(dir), ['appreg.json']);
  for (const d of [crashCopy, dir]) {
    const s = await openEmbeddedStore<TestTables>({ dir: d, ...noIdle });
    t.equal(await s.count('r'), 1000, d === dir ? 'after close' : 'after crash');
    let ok = true;
    for (let i = 0; i < 1000; i++) ok &&= (await s.get('r', `id${i}`))?.i === i;
    t.ok(ok, 'every record present');
    await s.close();
  }
});

t.test('snapshot holds later seqs than the old journal: replay skips them', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  const c = store.compact();
  // committed after compaction began: may be in the snapshot and the new journal both
  const p = store.commit([{ table: 'k', id: 'a', value: { v: 2 } }]);
  const q = store.commit([{ table: 'k', id: 'b', value: { v: 3 } }]);
  await Promise.all([c, p, q]);
  await store.commit([{ table: 'k', id: 'b', value: null }]);
  const copy = copyDir(dir);
  await store.close();
  const s = await openEmbeddedStore<TestTables>({ dir: copy, ...noIdle });
  t.same(await s.get('k', 'a'), { v: 2 });
  t.equal(await s.get('k', 'b'), undefined);
  t.equal(s.stats().lastSeq, 4);
  await s.close();
});

t.test('idle compaction folds the journal into the data file', async (t) => {
  const dir = newDir();
  const clock = createTestClock();
  const store = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 30, clock });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  await clock.advance(29);
  t.equal(store.stats().compactions, 0, 'not before 30 ms without a commit');
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  await clock.advance(29);
  t.equal(store.stats().compactions, 0, 'a commit starts the 30 ms again');
  await clock.advance(1);
  t.equal(store.stats().compactions, 1, 'then it compacts');
  t.equal(store.stats().journalBytes, 0);
  const doc = JSON.parse(fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8'));
  t.same(doc.tables.k.a, { v: 1 });
  t.equal(doc.journalSeq, 2);
  t.same(journals(dir), ['appreg.journal.2']);
  await clock.advance(1000);
  t.equal(store.stats().compactions, 1, 'no compaction of an empty journal');
  await store.close();
});

t.test('group commit: 200 concurrent commits share few writes', async (t) => {
  const dir = newDir();
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'g', id: 'warm', value: {} }]);
  const before = store.stats().batches;
  const all: Promise<void>[] = [];
  for (let i = 0; i < 200; i++) all.push(store.commit([{ table: 'g', id: `c${i}`, value: { i } }]));
  await Promise.all(all);
  const st = store.stats();
  const batches = st.batches - before;
  t.ok(batches <= 10, `${batches} batches for 200 commits`);
  t.equal(st.commits, 201);
  // staggered commits (some arriving while a write is in flight) also coalesce
  const staggered: Promise<void>[] = [];
  for (let i = 0; i < 200; i++) {
    staggered.push(store.commit([{ table: 'g', id: `s${i}`, value: { i } }]));
    if (i % 20 === 0) await new Promise((r) => setImmediate(r));
  }
  await Promise.all(staggered);
  t.ok(
    store.stats().batches - st.batches < 100,
    `${store.stats().batches - st.batches} batches for 200 staggered commits`,
  );
  await store.close();
  const s = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  t.equal(await s.count('g'), 401);
  await s.close();
});

t.test('files are 0600 and a new directory 0700, even with a permissive umask', async (t) => {
  const old = process.umask(0o000);
  t.teardown(() => void process.umask(old));
  const dir = path.join(newDir(), 'nested', 'data');
  const store = await openEmbeddedStore<TestTables>({ dir, ...noIdle });
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  const mode = (p: string) => fs.statSync(p).mode & 0o777;
  t.equal(mode(dir), 0o700, 'dir');
  t.equal(mode(path.join(dir, 'appreg.journal.1')), 0o600, 'journal');
  await store.compact();
  t.equal(mode(path.join(dir, 'appreg.json')), 0o600, 'data file after compaction');
  t.equal(mode(path.join(dir, 'appreg.journal.2')), 0o600, 'new journal');
  // a leftover steno temp file with a loose mode does not leak it
  fs.writeFileSync(path.join(dir, '.appreg.json.tmp'), '', { mode: 0o644 });
  fs.chmodSync(path.join(dir, '.appreg.json.tmp'), 0o644);
  await store.commit([{ table: 'k', id: 'b', value: { v: 2 } }]);
  await store.close();
  t.same(fs.readdirSync(dir), ['appreg.json']);
  t.equal(mode(path.join(dir, 'appreg.json')), 0o600, 'data file after close');
});

t.test('a commit that cannot be written rejects and fails the store', async (t) => {
  const dir = newDir();
  const store = (await openEmbeddedStore<TestTables>({ dir, ...noIdle })) as EmbeddedStore<TestTables>;
  await store.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
  // Pull the journal's descriptor out from under the store (test-only sabotage).
  const fdDir = '/proc/self/fd';
  if (!fs.existsSync(fdDir)) {
    t.pass('skipped: needs /proc');
    return store.close();
  }
  const target = fs.realpathSync(path.join(dir, 'appreg.journal.1'));
  for (const fd of fs.readdirSync(fdDir)) {
    try {
      if (fs.readlinkSync(path.join(fdDir, fd)) === target) fs.closeSync(Number(fd));
    } catch {
      /* fd went away */
    }
  }
  await t.rejects(store.commit([{ table: 'k', id: 'b', value: { v: 2 } }]));
  await t.rejects(store.commit([{ table: 'k', id: 'c', value: { v: 3 } }]));
  await store.close(); // does not compact a failed store
  const s = await openEmbeddedStore<TestTables>({ dir: dir, ...noIdle });
  t.same(await s.get('k', 'a'), { v: 1 });
  t.equal(await s.get('k', 'c'), undefined);
  await s.close();
});

t.test('SIGKILLed writer: every acknowledged commit survives (three crashes in a row)', async (t) => {
  const dir = newDir();
  const acked: string[] = [];
  // killed once this many commits were acknowledged (not after a time: a busy machine made too few),
  // at a different point of the compaction cycle each round (one every 100-odd commits)
  for (const [round, commits] of [
    ['a', 120],
    ['b', 250],
    ['c', 400],
  ] as const) {
    const before = acked.length;
    await runAndKill(dir, round, acked, commits);
    t.ok(
      acked.length - before >= commits,
      `round ${round}: ${acked.length - before} commits acknowledged before the kill`,
    );
    // until the last round, check a copy: the next writer starts from the directory
    // exactly as the crash left it, and the checking store can be closed (a store left
    // open leaks its journal handle to the garbage collector)
    const s = await openEmbeddedStore<TestTables>({ dir: round === 'c' ? dir : copyDir(dir), ...noIdle });
    const missing: string[] = [];
    for (const id of acked) if ((await s.get('items', id)) === undefined) missing.push(id);
    t.same(missing, [], `round ${round}: no acknowledged commit lost`);
    t.ok((await s.count('items')) >= acked.length);
    await s.close();
  }
});

/** Run the crash child on `dir` and SIGKILL it once it acknowledged `commits` commits (its writers still writing). */
async function runAndKill(dir: string, prefix: string, acked: string[], commits: number): Promise<void> {
  const child = fileURLToPath(new URL('../helpers/store-crash-child.js', import.meta.url));
  await new Promise<void>((resolve, reject) => {
    const cp = spawn(process.execPath, [child, dir, prefix], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let n = 0;
    cp.stdout.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      const lines = buf.split('\n');
      buf = must(lines.pop());
      for (const l of lines) {
        if (l === 'ready') continue;
        acked.push(l);
        if (++n === commits) cp.kill('SIGKILL');
      }
    });
    cp.on('error', reject);
    cp.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve();
      else reject(new Error(`child exited early: code ${code} signal ${signal}`));
    });
  });
}
