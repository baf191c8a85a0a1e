/**
 * Journal damage is never accepted silently: only a torn final line without its newline
 * (or a zero-filled one) is cut, with a warning; anything else refuses to open, naming the
 * file and line, with every file byte-for-byte unchanged. A directory that holds state but
 * lost its data file refuses unless allowFresh.
 */
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { StoreCorruptError, type StoreLogger } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-damage-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const newDir = () => {
  const d = path.join(tmpRoot, `d${++n}`);
  fs.mkdirSync(d, { mode: 0o700 });
  return d;
};
/** sha256 of every file under dir (recursively), by relative path. */
function hashes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
    }
  };
  walk(dir);
  return out;
}
const silent: StoreLogger = { warn: () => {} };
const line = (seq: number, id: string) => JSON.stringify({ seq, changes: [{ table: 'k', id, value: { seq } }] }) + '\n';
const write = (dir: string, name: string, content: string) =>
  fs.writeFileSync(path.join(dir, name), content, { mode: 0o600 });

async function refuses(
  t: Tap.Test,
  dir: string,
  file: string,
  problem: RegExp,
  opts: { allowFresh?: boolean; stateFiles?: string[] } = {},
) {
  const before = hashes(dir);
  const err = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent, ...opts }).then(
    async (s) => {
      await s.close();
      return null;
    },
    (e: unknown) => e,
  );
  t.type(err, StoreCorruptError, 'refused with StoreCorruptError');
  t.equal((err as StoreCorruptError | null)?.file, path.join(dir, file), 'names the file');
  t.match((err as StoreCorruptError | null)?.problem, problem);
  t.same(hashes(dir), before, 'every file byte-for-byte unchanged');
}

t.test('a complete final line that does not parse refuses (an acknowledged record is never cut away)', async (t) => {
  const dir = newDir();
  // one byte of the acknowledged record seq 3 flipped: still ends in its newline
  write(dir, 'appreg.journal.1', line(1, 'a') + line(2, 'b') + line(3, 'c').replace('"changes"', '"changes"x'));
  await refuses(t, dir, 'appreg.journal.1', /line 3: not valid JSON.*complete final line/);
  // valid JSON of the wrong shape, as the final line
  const d2 = newDir();
  write(d2, 'appreg.journal.1', line(1, 'a') + '{"seq":2}\n');
  await refuses(t, d2, 'appreg.journal.1', /line 2: not a \{seq, changes\} entry/);
});

t.test('a torn final line without its newline is cut, and that is logged at warn', async (t) => {
  const dir = newDir();
  write(dir, 'appreg.journal.1', line(1, 'a') + line(2, 'b') + line(3, 'c').slice(0, 20));
  const warnings: [string, Record<string, unknown> | undefined][] = [];
  const s = await openEmbeddedStore<TestTables>({
    dir,
    compactIdleMs: 0,
    logger: { warn: (m, f) => warnings.push([m, f]) },
  });
  t.equal(await s.count('k'), 2);
  t.equal(
    fs.readFileSync(path.join(dir, 'appreg.journal.1'), 'utf8'),
    line(1, 'a') + line(2, 'b'),
    'the torn tail alone was cut',
  );
  t.equal(warnings.length, 1, 'one warning');
  t.match(warnings[0]?.[0], /torn/);
  t.match(warnings[0]?.[1], { file: path.join(dir, 'appreg.journal.1'), line: 3, bytes: 20 });
  await s.close();
});

t.test('a deleted middle line (a gap in seq) refuses, naming the file and line', async (t) => {
  const dir = newDir();
  write(dir, 'appreg.journal.1', line(1, 'a') + line(3, 'c') + line(4, 'd'));
  await refuses(t, dir, 'appreg.journal.1', /line 2: seq 3 follows 1: seqs 2\.\.2 are missing/);
  // the gap across two journal files
  const d2 = newDir();
  write(d2, 'appreg.journal.1', line(1, 'a') + line(2, 'b'));
  write(d2, 'appreg.journal.2', line(4, 'd'));
  await refuses(t, d2, 'appreg.journal.2', /line 1: seq 4 follows 2/);
});

t.test('a journal that does not continue the data file refuses', async (t) => {
  const dir = newDir();
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  for (let i = 0; i < 3; i++) await s.commit([{ table: 'k', id: `r${i}`, value: { i } }]);
  await s.compact(); // appreg.json holds seqs 1..3, appends go to appreg.journal.2
  for (let i = 3; i < 6; i++) await s.commit([{ table: 'k', id: `r${i}`, value: { i } }]);
  const copy = path.join(tmpRoot, `copy${++n}`);
  fs.cpSync(dir, copy, { recursive: true });
  await s.close();
  // delete the first journal line (seq 4) of the crash copy
  const jf = path.join(copy, 'appreg.journal.2');
  const lines = fs.readFileSync(jf, 'utf8').split('\n');
  fs.writeFileSync(jf, lines.slice(1).join('\n'));
  await refuses(
    t,
    copy,
    'appreg.journal.2',
    /line 1: seq 5 is the first journal entry but appreg\.json holds seqs up to 3/,
  );
});

t.test(
  'a lost appreg.json beside a journal, the key and credentials.json refuses; allowFresh starts anew',
  async (t) => {
    const dir = newDir();
    const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    await s.commit([{ table: 'k', id: 'a', value: { v: 1 } }]);
    await s.compact(); // appreg.json + an empty appreg.journal.2, as a running daemon leaves it
    const copy = path.join(tmpRoot, `copy${++n}`);
    fs.cpSync(dir, copy, { recursive: true });
    await s.close();
    write(copy, 'secret.key', 'k'.repeat(43) + '\n');
    write(copy, 'credentials.json', '{"authToken":"x"}\n');
    fs.rmSync(path.join(copy, 'appreg.json'));
    await refuses(
      t,
      copy,
      'appreg.json',
      /is missing but the directory holds state \(credentials\.json, appreg\.journal\.2\).*allowFresh/,
    );

    // after a clean stop only appreg.json is left of the store: credentials.json alone betrays the loss
    const d2 = newDir();
    write(d2, 'credentials.json', '{"authToken":"x"}\n');
    await refuses(t, d2, 'appreg.json', /holds state \(credentials\.json\)/);
    const d3 = newDir();
    fs.mkdirSync(path.join(d3, 'deliveries'));
    write(d3, 'deliveries/2026-11-23.jsonl', '{}\n');
    await refuses(t, d3, 'appreg.json', /holds state \(deliveries\)/);

    // a key file that existed before this start counts too (the caller says so: it creates one on a first start)
    const d4 = newDir();
    write(d4, 'secret.key', 'k'.repeat(43) + '\n');
    await refuses(t, d4, 'appreg.json', /holds state \(secret\.key\)/, { stateFiles: [path.join(d4, 'secret.key')] });
    const elsewhere = path.join(tmpRoot, `key${++n}`);
    write(tmpRoot, path.basename(elsewhere), 'k');
    await refuses(t, newDir(), 'appreg.json', new RegExp(`holds state \\(${elsewhere}\\)`), {
      stateFiles: [elsewhere],
    });

    // on purpose: a new empty store; credentials.json is not the store's to touch
    const fresh = await openEmbeddedStore<TestTables>({
      dir: copy,
      compactIdleMs: 0,
      logger: silent,
      allowFresh: true,
    });
    t.equal(await fresh.count('k'), 0);
    await fresh.commit([{ table: 'k', id: 'new', value: {} }]);
    await fresh.close();
    t.equal(fs.readFileSync(path.join(copy, 'credentials.json'), 'utf8'), '{"authToken":"x"}\n');
  },
);

t.test('journal entries that start after seq 1 with no data file refuse even with allowFresh', async (t) => {
  const dir = newDir();
  write(dir, 'appreg.journal.3', line(7, 'g') + line(8, 'h'));
  await refuses(t, dir, 'appreg.journal.3', /seq 7 is the first journal entry but there is no appreg\.json/, {
    allowFresh: true,
  });
});

t.test('what a first start leaves before its first commit opens as a new store', async (t) => {
  const dir = newDir();
  write(dir, 'secret.key', 'k'.repeat(43) + '\n');
  write(dir, 'appreg.journal.1', '');
  fs.mkdirSync(path.join(dir, 'deliveries'));
  const s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
  t.equal(await s.count('k'), 0);
  await s.close();
  // and a journal holding every seq from 1 with no data file is a crash before the first compaction
  const d2 = newDir();
  write(d2, 'credentials.json', '{}\n');
  write(d2, 'appreg.journal.1', line(1, 'a') + line(2, 'b'));
  const s2 = await openEmbeddedStore<TestTables>({ dir: d2, compactIdleMs: 0, logger: silent });
  t.equal(await s2.count('k'), 2);
  await s2.close();
});
