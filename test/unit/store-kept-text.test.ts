/**
 * Records kept without their leading id (src/store/tables.ts, keptText): whatever a record's id and
 * key, every read, the journal, the data file and a compaction give back the very record written,
 * across a rollback, a compaction and a reopen; expectations still hold on a record as read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { keptText, recordText, Tables } from '../../src/store/tables.js';
import { StoreConflict, type Store } from '../../src/store/types.js';
import type { TestTables } from '../helpers/test-tables.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-store-kept-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let n = 0;
const newDir = () => path.join(tmpRoot, `d${++n}`);
const silent = { warn: () => {} };

/** Keys and records: the id first (kept without it) and every way a text may not begin with its key. */
const RECORDS: [string, object][] = [
  ['tok1', { id: 'tok1', appId: 'app_1', scopes: ['a', 'b'], n: 1 }],
  ['only', { id: 'only' }],
  ['q"uo\\te', { id: 'q"uo\\te', v: 'escaped in the text, raw in the key' }],
  ['ünï🙂', { id: 'ünï🙂', text: 'é🙂'.repeat(20) }],
  ['other', { id: 'not-the-key', v: 1 }],
  ['x', { id: 'xy', v: 'an id the key begins' }],
  ['noid', { v: 'no id at all' }],
  ['late', { v: 1, id: 'late' }],
  ['x","y":"z', { id: 'x', y: 'z' }], // its text begins with {"id":"<key>"}: kept as "}", given back the same
  ['x","y":"z2', { id: 'x","y":"z2', y: 'z' }],
  ['num', { id: 7, appId: 'app_1' }],
];

t.test(
  'keptText and recordText: a round trip for any key and text, the prefix dropped only when it is the key',
  async (t) => {
    for (const [id, value] of RECORDS) {
      const json = JSON.stringify(value);
      const kept = keptText(id, json);
      t.equal(recordText(id, kept), json, `${id}: back as written`);
      t.equal(keptText(id, kept), kept, `${id}: keeping a kept text changes nothing`);
      // the rule on the characters: the text begins with {"id":"<key>" and then , or }
      const dropped = json.startsWith(`{"id":"${id}"`) && [',', '}'].includes(json.charAt(8 + id.length));
      t.equal(kept.length < json.length, dropped, `${id}: prefix ${dropped ? 'dropped' : 'kept'}`);
    }
    t.equal(keptText('tok1', '{"id":"tok1","a":1}'), ',"a":1}');
    t.equal(keptText('only', '{"id":"only"}'), '}');
    t.equal(keptText('x', '{"id":"xy"}'), '{"id":"xy"}', 'a longer id is not the key');
    t.equal(keptText('x', ' {"id":"x"}'), ' {"id":"x"}', 'a text with leading space is kept whole');
  },
);

const kinds: Array<[string, () => Promise<Store<TestTables>>]> = [
  ['memory', async () => createMemoryStore<TestTables>()],
  ['embedded', () => openEmbeddedStore<TestTables>({ dir: newDir(), compactIdleMs: 0, logger: silent })],
];

for (const [kind, open] of kinds) {
  t.test(`${kind}: every read answers the record written`, async (t) => {
    const s = await open();
    await s.commit(RECORDS.map(([id, value]) => ({ table: 'oauthTokens', id, value })));
    for (const [id, value] of RECORDS) t.same(await s.get('oauthTokens', id), value, `get ${id}`);
    const keys = RECORDS.map(([id]) => ({ table: 'oauthTokens', id }));
    // the second shared read of an unchanged text answers the parse it kept
    for (const when of ['first', 'again'])
      t.same(
        await s.getMany(keys, { shared: true }),
        RECORDS.map(([, v]) => v),
        `getMany, shared, ${when}`,
      );
    t.same(
      (await s.find('oauthTokens', 'appId', 'app_1')).map((r) => JSON.stringify(r)).sort(),
      [RECORDS[0]?.[1], RECORDS[10]?.[1]].map((r) => JSON.stringify(r)).sort(),
      'find through the index',
    );
    const all = await s.all('oauthTokens');
    t.same(all.map((r) => JSON.stringify(r)).sort(), RECORDS.map(([, v]) => JSON.stringify(v)).sort(), 'all');
    const scanned: object[] = [];
    await s.scan('oauthTokens', (r) => void scanned.push(r));
    t.same(scanned, all, 'scan');
    // an expectation on a record as read holds, an equal object too, a stale one does not
    const read = await s.get('oauthTokens', 'tok1');
    await s.commit(
      [{ table: 'oauthTokens', id: 'tok1', value: { ...read, n: 2 } }],
      [{ table: 'oauthTokens', id: 'tok1', value: read }],
    );
    await s.commit(
      [{ table: 'oauthTokens', id: 'tok1', value: { id: 'tok1', n: 3 } }],
      [{ table: 'oauthTokens', id: 'tok1', value: { n: 2, scopes: ['a', 'b'], appId: 'app_1', id: 'tok1' } }],
    );
    await t.rejects(
      s.commit(
        [{ table: 'oauthTokens', id: 'tok1', value: { id: 'tok1' } }],
        [{ table: 'oauthTokens', id: 'tok1', value: read }],
      ),
      StoreConflict,
    );
    t.same(await s.get('oauthTokens', 'tok1'), { id: 'tok1', n: 3 });
    t.same(await s.find('oauthTokens', 'appId', 'app_1'), [{ id: 7, appId: 'app_1' }], 'the index followed the change');
    // claim parses what it leases
    await s.commit([{ table: 'queue', id: 'q1', value: { id: 'q1', dueAt: 1 } }]);
    t.same(await s.claim({ table: 'queue', dueField: 'dueAt', now: 2, owner: 'A', leaseUntil: 9, limit: 5 }), [
      { id: 'q1', dueAt: 1, leaseOwner: 'A', leaseUntil: 9 },
    ]);
    await s.close();
  });
}

t.test(
  'embedded: the journal, a compaction and a reopen give back the records written, and the data file holds them whole',
  async (t) => {
    const dir = newDir();
    let s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    await s.commit(RECORDS.map(([id, value]) => ({ table: 'oauthTokens', id, value })));
    await s.close({ compact: false });
    // reopened from the journal
    s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    for (const [id, value] of RECORDS) t.same(await s.get('oauthTokens', id), value, `from the journal: ${id}`);
    await s.commit([{ table: 'oauthTokens', id: 'later', value: { id: 'later' } }]);
    await s.compact();
    await s.close();
    const file = fs.readFileSync(path.join(dir, 'appreg.json'), 'utf8');
    for (const [id, value] of RECORDS)
      t.ok(file.includes(`${JSON.stringify(id)}:${JSON.stringify(value)}\n`), `the data file holds ${id} whole`);
    s = await openEmbeddedStore<TestTables>({ dir, compactIdleMs: 0, logger: silent });
    for (const [id, value] of RECORDS) t.same(await s.get('oauthTokens', id), value, `from the data file: ${id}`);
    t.same(await s.get('oauthTokens', 'later'), { id: 'later' });
    await s.close();
  },
);

t.test('a rollback restores the records as they were, kept texts included', async (t) => {
  const tables = new Tables();
  const json = (v: object) => JSON.stringify(v);
  tables.apply(RECORDS.map(([id, value]) => ({ table: 'oauthTokens', id, json: json(value) })));
  const undo = tables.applyWithUndo(
    1,
    RECORDS.map(([id]) => ({ table: 'oauthTokens', id, json: json({ id, changed: true }) })),
  );
  tables.restore(undo);
  for (const [id, value] of RECORDS) {
    t.same(tables.get('oauthTokens', id), value, `restored: ${id}`);
    t.equal(recordText(id, tables.getJson('oauthTokens', id) ?? ''), json(value), `its text: ${id}`);
  }
  t.same(
    tables
      .find('oauthTokens', 'appId', 'app_1')
      .map((r) => JSON.stringify(r))
      .sort(),
    [RECORDS[0]?.[1], RECORDS[10]?.[1]].map((r) => JSON.stringify(r)).sort(),
    'the index restored',
  );
});
