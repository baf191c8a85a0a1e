/**
 * The Store<TestTables> contract (src/store/types.ts), one suite run against both stores: the embedded one
 * (files in a temp dir) and PostgreSQL (a fresh database of the test cluster, test/helpers/pg.ts).
 * Whatever a service may rely on is checked here once for both.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import { StoreConflict, StoreValueRefused, type PageQuery, type Store } from '../../src/store/types.js';
import { testWithPg } from '../helpers/pg.js';
import type { TestRecord, TestTables } from '../helpers/test-tables.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

/** Two handles on one store: two daemons' stores on one database (PostgreSQL), or the same store twice (embedded). */
interface Pair {
  a: Store<TestTables>;
  b: Store<TestTables>;
}

const quietLogger = { warn() {} };

/** Resolves with the message `to` hears of one publish, made once `to` says it listens (subscribed). */
async function deliver(
  from: Store<TestTables>,
  to: Store<TestTables>,
  channel: string,
  payload: string,
): Promise<string> {
  let got: string | undefined;
  const off = to.subscribe(channel, (p) => (got ??= p));
  try {
    await to.subscribed();
    await from.publish(channel, payload);
    await until(() => got !== undefined);
  } finally {
    off();
  }
  if (got === undefined) throw new Error(`no message on ${channel}`);
  return got;
}

function contract(t: TapTest, p: Pair): Promise<unknown> {
  const { a, b } = p;
  return t.test('contract', async (t) => {
    await t.test(
      'scan: a table bigger than a page of PostgreSQL, each record once; stops when visit returns true',
      async (t) => {
        const n = 2500;
        await a.commit(
          Array.from({ length: n }, (_, i) => ({ table: 'scanned', id: `s${i}`, value: { id: `s${i}`, n: i } })),
        );
        const seen = new Set<number>();
        let visits = 0;
        await b.scan('scanned', (r) => void (visits++, seen.add(r.n)));
        t.same({ visits, distinct: seen.size }, { visits: n, distinct: n }, 'every record, once');
        let k = 0;
        await b.scan('scanned', () => ++k === 1500);
        t.equal(k, 1500, 'no visit after the one that returned true (past the first page)');
        await a.commit(Array.from({ length: n }, (_, i) => ({ table: 'scanned', id: `s${i}`, value: null })));
      },
    );

    await t.test('get, find, all, count', async (t) => {
      await a.commit([
        { table: 'apps', id: 'a1', value: { id: 'a1', ownerId: 'u1', n: 1 } },
        { table: 'apps', id: 'a2', value: { id: 'a2', ownerId: 'u1', n: 2 } },
        { table: 'apps', id: 'a3', value: { id: 'a3', ownerId: 'u2', n: 3 } },
        { table: 'apps', id: 'a4', value: { id: 'a4', ownerId: true } },
      ]);
      t.same(await b.get('apps', 'a1'), { id: 'a1', ownerId: 'u1', n: 1 });
      t.equal(await b.get('apps', 'nope'), undefined);
      t.equal(await b.get('nosuchtable', 'a1'), undefined);
      t.same((await b.find('apps', 'ownerId', 'u1')).map((r) => r.id).sort(), ['a1', 'a2']);
      t.same(await b.find('apps', 'ownerId', 'nobody'), []);
      t.same(await b.find('apps', 'ownerId', 'true'), [], 'a field that is neither string nor number is not indexed');
      t.equal(await b.count('apps'), 4);
      t.equal(await b.count('nosuchtable'), 0);
      t.same((await b.all('apps')).map((r) => r.id).sort(), ['a1', 'a2', 'a3', 'a4']);
      t.same(await b.all('nosuchtable'), []);
      const scanned: string[] = [];
      await b.scan('apps', (r) => void scanned.push(r.id));
      t.same(scanned.sort(), ['a1', 'a2', 'a3', 'a4'], 'scan visits each record once');
      await b.scan('nosuchtable', () => void scanned.push('none'));
      t.equal(scanned.length, 4, 'scan of a table that does not exist visits nothing');
      // not an indexed field: a compile error, and a TypeError for a caller that gets past the types
      // @ts-expect-error -- not an indexed field
      const findByN = async () => b.find('apps', 'n', '1');
      await t.rejects(findByN, TypeError, 'find on a field that is not indexed');
      await a.commit([
        { table: 'apps', id: 'a4', value: null },
        { table: 'apps', id: 'a3', value: { id: 'a3', ownerId: 'u1' } },
      ]);
      t.equal(await b.get('apps', 'a4'), undefined, 'deleted');
      t.same(
        (await b.find('apps', 'ownerId', 'u1')).map((r) => r.id).sort(),
        ['a1', 'a2', 'a3'],
        'index follows updates',
      );
      t.same(await b.find('apps', 'ownerId', 'u2'), []);
      await a.commit([{ table: 'wsMessages', id: 'm1', value: { channelId: 'c', threadRootId: 42 } }]);
      t.equal((await b.find('wsMessages', 'threadRootId', '42')).length, 1, 'a number is found by its string');
    });

    await t.test('getMany: records of several tables in the order asked', async (t) => {
      await a.commit([
        { table: 'apps', id: 'gm1', value: { id: 'gm1', n: 1 } },
        { table: 'codes', id: 'gm1', value: { id: 'gm1', c: true } },
        { table: 'apps', id: 'gm2', value: { id: 'gm2', n: 2 } },
      ]);
      t.same(await b.getMany([]), []);
      t.same(await b.getMany([{ table: 'apps', id: 'gm2' }]), [{ id: 'gm2', n: 2 }]);
      t.same(
        await b.getMany([
          { table: 'codes', id: 'gm1' },
          { table: 'apps', id: 'nope' },
          { table: 'apps', id: 'gm2' },
          { table: 'nosuchtable', id: 'gm1' },
          { table: 'apps', id: 'gm1' },
          { table: 'apps', id: 'gm2' },
        ]),
        [{ id: 'gm1', c: true }, undefined, { id: 'gm2', n: 2 }, undefined, { id: 'gm1', n: 1 }, { id: 'gm2', n: 2 }],
      );
      // idFrom: the id is a field of an earlier key's record (an installation's bot user)
      await a.commit([
        { table: 'installations', id: 'gi1', value: { id: 'gi1', botUserId: 'gm2', n: 7, o: { x: 1 } } },
        { table: 'installations', id: 'gi2', value: { id: 'gi2' } },
      ]);
      t.same(
        await b.getMany([
          { table: 'installations', id: 'gi1' },
          { table: 'apps', idFrom: { key: 0, field: 'botUserId' } },
          { table: 'installations', id: 'gi2' },
          { table: 'apps', idFrom: { key: 2, field: 'botUserId' } },
          { table: 'installations', id: 'nope' },
          { table: 'apps', idFrom: { key: 4, field: 'botUserId' } },
          { table: 'codes', idFrom: { key: 0, field: 'botUserId' } },
          { table: 'apps', idFrom: { key: 0, field: 'n' } },
          { table: 'apps', idFrom: { key: 0, field: 'o' } },
          { table: 'apps', idFrom: { key: 0, field: 'botUserId' } },
        ]),
        [
          { id: 'gi1', botUserId: 'gm2', n: 7, o: { x: 1 } },
          { id: 'gm2', n: 2 },
          { id: 'gi2' },
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          { id: 'gm2', n: 2 },
        ],
        'no record, no field, or not a string: undefined',
      );
      await t.rejects(
        async () => b.getMany([{ table: 'apps', idFrom: { key: 0, field: 'id' } }]),
        TypeError,
        'idFrom names an earlier key',
      );
      await t.rejects(
        async () =>
          b.getMany([
            { table: 'apps', id: 'gm1' },
            { table: 'apps', idFrom: { key: 1, field: 'id' } },
          ]),
        TypeError,
        'not itself',
      );
      await a.commit([{ table: 'codes', id: 'gc1', value: { id: 'gc1', inst: 'gi1' } }]);
      t.same(
        await b.getMany([
          { table: 'codes', id: 'gc1' },
          { table: 'installations', idFrom: { key: 0, field: 'inst' } },
          { table: 'apps', idFrom: { key: 1, field: 'botUserId' } },
          { table: 'apps', idFrom: { key: 2, field: 'nothere' } },
          { table: 'apps', idFrom: { key: 3, field: 'id' } },
        ]),
        [
          { id: 'gc1', inst: 'gi1' },
          { id: 'gi1', botUserId: 'gm2', n: 7, o: { x: 1 } },
          { id: 'gm2', n: 2 },
          undefined,
          undefined,
        ],
        "idFrom hop by hop: a code, its installation, that installation's bot user",
      );
      await a.commit([{ table: 'codes', id: 'gc1', value: null }]);
      await a.commit([
        { table: 'installations', id: 'gi1', value: null },
        { table: 'installations', id: 'gi2', value: null },
      ]);
      const [x, y] = await b.getMany([
        { table: 'apps', id: 'gm1' },
        { table: 'apps', id: 'gm1' },
      ]);
      t.not(x, y, 'each answer its own copy');
      // what getMany read is what a commit may expect
      await b.commit(
        [{ table: 'apps', id: 'gm1', value: { id: 'gm1', n: 10 } }],
        [{ table: 'apps', id: 'gm1', value: x }],
      );
      await t.rejects(
        b.commit([{ table: 'apps', id: 'gm1', value: null }], [{ table: 'apps', id: 'gm1', value: y }]),
        StoreConflict,
      );
      await a.commit([
        { table: 'apps', id: 'gm1', value: null },
        { table: 'apps', id: 'gm2', value: null },
        { table: 'codes', id: 'gm1', value: null },
      ]);
      t.same(
        await b.getMany([
          { table: 'apps', id: 'gm1' },
          { table: 'codes', id: 'gm1' },
        ]),
        [undefined, undefined],
      );
    });

    await t.test('shared reads: frozen, current, and what a commit may expect', async (t) => {
      await a.commit([{ table: 'apps', id: 'sh1', value: { id: 'sh1', m: { cmds: ['/a'] } } }]);
      const [x] = await b.getMany([{ table: 'apps', id: 'sh1' }], { shared: true });
      t.ok(Object.isFrozen(x) && Object.isFrozen((x as { m: { cmds: string[] } }).m.cmds), 'frozen all the way down');
      t.throws(() => ((x as { id: string }).id = 'changed'), TypeError, 'a caller that modifies one fails');
      const [y] = await b.getMany([{ table: 'apps', id: 'sh1' }], { shared: true });
      t.same(y, { id: 'sh1', m: { cmds: ['/a'] } });
      await b.commit(
        [{ table: 'apps', id: 'sh1', value: { id: 'sh1', m: { cmds: ['/b'] } } }],
        [{ table: 'apps', id: 'sh1', value: y }],
      );
      const [z] = await b.getMany([{ table: 'apps', id: 'sh1' }], { shared: true });
      t.same(z, { id: 'sh1', m: { cmds: ['/b'] } }, 'a shared read after a commit sees it');
      await t.rejects(
        b.commit([{ table: 'apps', id: 'sh1', value: null }], [{ table: 'apps', id: 'sh1', value: x }]),
        StoreConflict,
        'expecting an older shared read: a conflict',
      );
      const [own] = await b.getMany([{ table: 'apps', id: 'sh1' }]);
      t.notOk(Object.isFrozen(own), "a read without shared is the caller's own copy");
      await a.commit([{ table: 'apps', id: 'sh1', value: null }]);
      t.same(await b.getMany([{ table: 'apps', id: 'sh1' }], { shared: true }), [undefined], 'and gone when deleted');
    });

    await t.test('countWhere and findPage', async (t) => {
      const msg = (id: string, extra: object) => ({
        table: 'wsMessages',
        id,
        value: { id, channelId: 'ch_p', ...extra },
      });
      await a.commit([
        msg('m_a', { seq: 5 }),
        msg('m_b', { seq: 3 }),
        msg('m_c', { seq: 5 }),
        msg('m_d', { seq: 1 }),
        msg('m_e', {}),
        msg('m_f', { seq: 'x' }),
        { table: 'wsMessages', id: 'm_g', value: { id: 'm_g', channelId: 'ch_q', seq: 2 } },
      ]);
      t.equal(await b.countWhere('wsMessages', 'channelId', 'ch_p'), 6);
      t.equal(await b.countWhere('wsMessages', 'channelId', 'ch_q'), 1);
      t.equal(await b.countWhere('wsMessages', 'channelId', 'nowhere'), 0);
      // @ts-expect-error -- not an indexed field
      const countBySeq = async () => b.countWhere('wsMessages', 'seq', '1');
      await t.rejects(countBySeq, TypeError, 'countWhere on a field that is not indexed');
      const ids = (rs: object[]) => rs.map((r) => (r as { id: string }).id);
      const page = (q: PageQuery<TestRecord>) => b.findPage('wsMessages', 'channelId', 'ch_p', q);
      t.same(
        ids(await page({ orderBy: 'seq', limit: 10 })),
        ['m_d', 'm_b', 'm_a', 'm_c'],
        'smallest first, ties by id; records without a number left out',
      );
      t.same(ids(await page({ orderBy: 'seq', desc: true, limit: 2 })), ['m_c', 'm_a'], 'largest first, ties by id');
      t.same(
        ids(await page({ orderBy: 'seq', desc: true, limit: 2, after: { value: 5, id: 'm_a' } })),
        ['m_b', 'm_d'],
        'the next page',
      );
      t.same(ids(await page({ orderBy: 'seq', limit: 5, after: { value: 3, id: 'm_b' } })), ['m_a', 'm_c']);
      t.same(
        ids(await page({ orderBy: 'seq', limit: 5, after: { value: 5, id: 'm_c' } })),
        [],
        'nothing beyond the last',
      );
      t.same(await b.findPage('wsMessages', 'channelId', 'nowhere', { orderBy: 'seq', limit: 5 }), []);
      await a.commit([msg('m_d', { seq: 1_764_000_000_001.5 }), { table: 'wsMessages', id: 'm_c', value: null }]);
      t.same(
        await page({ orderBy: 'seq', desc: true, limit: 1 }),
        [{ id: 'm_d', channelId: 'ch_p', seq: 1_764_000_000_001.5 }],
        'follows updates, whole records',
      );
      t.same(ids(await page({ orderBy: 'seq', limit: 10 })), ['m_b', 'm_a', 'm_d'], 'and deletions');
      t.equal(await b.countWhere('wsMessages', 'channelId', 'ch_p'), 5);
      await t.rejects(async () => page({ orderBy: 'seq', limit: 0 }), TypeError, 'a limit of at least 1');
      // @ts-expect-error -- not an indexed field
      const pageBySeq = async () => b.findPage('wsMessages', 'seq', '1', { orderBy: 'seq', limit: 1 });
      await t.rejects(pageBySeq, TypeError, 'findPage on a field that is not indexed');
    });

    await t.test('findPage follows inserts, updates (a new order value, another key) and deletes', async (t) => {
      let seed = 7;
      const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
      const live = new Map<string, { id: string; channelId: string; seq: number }>();
      const check = async (round: number) => {
        const wanted = [...live.values()]
          .filter((m) => m.channelId === 'ch_r')
          .sort((x, y) => x.seq - y.seq || (x.id < y.id ? -1 : 1))
          .map((m) => m.id);
        const got: string[] = [];
        for (let after: { value: number; id: string } | undefined, i = 0; i < 50; i++) {
          const rs = await b.findPage('wsMessages', 'channelId', 'ch_r', {
            orderBy: 'seq',
            desc: true,
            limit: 3,
            ...(after ? { after } : {}),
          });
          got.push(...rs.map((r) => r.id));
          if (rs.length < 3) break;
          after = { value: must(rs[2]).seq, id: must(rs[2]).id };
        }
        t.same(got.reverse(), wanted, `round ${round}: pages of 3, newest first, join up to every record in order`);
        t.equal(await b.countWhere('wsMessages', 'channelId', 'ch_r'), wanted.length);
      };
      for (let round = 0; round < 6; round++) {
        const changes = [];
        for (let i = 0; i < 8; i++) {
          const id = `r${rnd(20)}`;
          const op = rnd(4);
          if (op === 0) {
            live.delete(id);
            changes.push({ table: 'wsMessages', id, value: null });
          } else {
            const m = { id, channelId: op === 3 ? 'ch_s' : 'ch_r', seq: rnd(10) };
            live.set(id, m);
            changes.push({ table: 'wsMessages', id, value: m });
          }
        }
        await a.commit(changes);
        await check(round);
      }
    });

    await t.test('reads return copies', async (t) => {
      const value = { id: 'c1', nested: { x: 1 } };
      await a.commit([{ table: 'copies', id: 'c1', value }]);
      value.nested.x = 99;
      const r1 = await a.get('copies', 'c1');
      t.same(r1, { id: 'c1', nested: { x: 1 } }, 'changing the committed object changes nothing stored');
      must(r1).nested.x = 5;
      const all = await a.all('copies');
      must(all[0]).nested.x = 6;
      t.same(await a.get('copies', 'c1'), { id: 'c1', nested: { x: 1 } }, 'changing a read changes nothing stored');
    });

    await t.test('commit is all or nothing', async (t) => {
      await t.rejects(
        async () =>
          a.commit([
            { table: 'aon', id: 'x', value: { ok: 1 } },
            { table: 'aon', id: 'y', value: 5 as unknown as object },
          ]),
        TypeError,
      );
      await t.rejects(async () =>
        a.commit([
          { table: 'aon', id: 'x', value: { ok: 1 } },
          { table: 'aon', id: 'z', value: { big: 1n } },
        ]),
      );
      t.equal(await b.count('aon'), 0, 'nothing of a failed commit is kept');
      await a.commit([]);
      t.equal(await b.count('aon'), 0);
      await a.commit([
        { table: 'aon', id: 'x', value: { v: 1 } },
        { table: 'aon', id: 'x', value: { v: 2 } },
      ]);
      t.same(await b.get('aon', 'x'), { v: 2 }, 'two changes of one record: the last wins');
    });

    await t.test('expectations', async (t) => {
      await a.commit([{ table: 'codes', id: 'k', value: { used: false, n: 1.5, s: 'é' } }]);
      const read = await b.get('codes', 'k');
      await b.commit([{ table: 'codes', id: 'k', value: { used: true } }], [{ table: 'codes', id: 'k', value: read }]);
      t.same(await a.get('codes', 'k'), { used: true }, 'an expectation that holds');
      const e = await b
        .commit(
          [
            { table: 'codes', id: 'k', value: { used: 'again' } },
            { table: 'other', id: 'o', value: {} },
          ],
          [{ table: 'codes', id: 'k', value: read }],
        )
        .catch((x: unknown) => x);
      t.ok(e instanceof StoreConflict, 'a stale expectation is a StoreConflict');
      t.match(e, { table: 'codes', id: 'k' });
      t.same(await a.get('codes', 'k'), { used: true }, 'nothing written');
      t.equal(await a.get('other', 'o'), undefined, 'not even the other changes');
      await b.commit(
        [{ table: 'names', id: 'n1', value: { owner: 'me' } }],
        [{ table: 'names', id: 'n1', value: undefined }],
      );
      t.same(await a.get('names', 'n1'), { owner: 'me' }, 'expected absent, and it was');
      await t.rejects(
        async () =>
          b.commit(
            [{ table: 'names', id: 'n1', value: { owner: 'you' } }],
            [{ table: 'names', id: 'n1', value: undefined }],
          ),
        StoreConflict,
      );
      await t.rejects(
        async () => b.commit([], [{ table: 'names', id: 'n2', value: {} }]),
        StoreConflict,
        'expected present but absent',
      );
      await b.commit([{ table: 'names', id: 'n3', value: { a: 1 } }], [{ table: 'names', id: 'n2', value: undefined }]);
      t.equal(await a.get('names', 'n2'), undefined, 'an absence expectation leaves the record absent');
      t.equal(await a.count('names'), 2);
      await b.commit(
        [{ table: 'names', id: 'n1', value: null }],
        [{ table: 'names', id: 'n1', value: { owner: 'me' } }],
      );
      t.equal(await a.get('names', 'n1'), undefined, 'delete under an expectation');
    });

    await t.test('50 concurrent commits expecting the same record: exactly one succeeds', async (t) => {
      await a.commit([{ table: 'race', id: 'r', value: { v: 0 } }]);
      const read = await a.get('race', 'r');
      const stores = [a, b];
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) =>
          must(stores[i % 2]).commit(
            [{ table: 'race', id: 'r', value: { v: i + 1 } }],
            [{ table: 'race', id: 'r', value: read }],
          ),
        ),
      );
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      t.equal(won.length, 1, 'one winner');
      t.ok(
        results.every((r) => r.status === 'fulfilled' || r.reason instanceof StoreConflict),
        'the others are conflicts',
      );
      t.same(await b.get('race', 'r'), { v: (won[0] ?? -1) + 1 }, "the winner's value");
      const created = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) =>
          must(stores[i % 2]).commit(
            [{ table: 'race', id: 'new', value: { by: i } }],
            [{ table: 'race', id: 'new', value: undefined }],
          ),
        ),
      );
      t.equal(created.filter((r) => r.status === 'fulfilled').length, 1, 'one creator of an absent record');
    });

    await t.test('calls made at once each get their own answer (PostgreSQL sends them in batches)', async (t) => {
      await a.commit([
        { table: 'inst', id: 'i1', value: { id: 'i1', botUserId: 'u1' } },
        { table: 'inst', id: 'i2', value: { id: 'i2', botUserId: 'u2' } },
        { table: 'users', id: 'u1', value: { id: 'u1' } },
        { table: 'users', id: 'u2', value: { id: 'u2' } },
        { table: 'batch', id: 'keep', value: { v: 1 } },
      ]);
      const reads = await Promise.all(
        [1, 2, 1, 3].map((n) =>
          a.getMany([
            { table: 'inst', id: `i${n}` },
            { table: 'users', idFrom: { key: 0, field: 'botUserId' } },
            { table: 'users', id: 'u1' },
          ]),
        ),
      );
      t.same(
        reads.map((r) => r.map((x) => (x as { id?: string } | undefined)?.id)),
        [
          ['i1', 'u1', 'u1'],
          ['i2', 'u2', 'u1'],
          ['i1', 'u1', 'u1'],
          [undefined, undefined, 'u1'],
        ],
        'every idFrom follows its own call',
      );
      const counts = await Promise.all(Array.from({ length: 20 }, () => a.hit('burst', 60_000, 10_000)));
      t.same(
        counts.map((c) => c.count).sort((x, y) => x - y),
        Array.from({ length: 20 }, (_, i) => i + 1),
        'twenty hits at once count 1 to 20',
      );
      t.ok(
        counts.every((c) => c.resetAt === 70_000),
        'one window',
      );
      const several = await Promise.all([3, 1, 5, 2].map((n) => a.hit('lease', 60_000, 10_000, n)));
      t.same(
        several.map((c) => c.count),
        [3, 4, 9, 11],
        'hits of several at once: each call counts its own, in the order made',
      );
      await t.rejects(a.hit('lease', 60_000, 10_000, 0), RangeError, 'no fewer than one');
      await t.rejects(a.hit('lease', 60_000, 10_000, 1.5), RangeError, 'whole hits only');
      const keep = await a.get('batch', 'keep');
      const mixed = await Promise.allSettled([
        a.commit([{ table: 'batch', id: 'x1', value: { v: 1 } }]),
        a.commit([{ table: 'batch', id: 'keep', value: { v: 2 } }], [{ table: 'batch', id: 'keep', value: { v: 99 } }]),
        a.commit([{ table: 'batch', id: 'x2', value: { v: 2 } }], [{ table: 'batch', id: 'x2', value: undefined }]),
        a.commit([{ table: 'batch', id: 'x2', value: { v: 3 } }], [{ table: 'batch', id: 'x2', value: undefined }]),
        a.commit([{ table: 'batch', id: 'keep', value: { v: 3 } }], [{ table: 'batch', id: 'keep', value: keep }]),
      ]);
      t.same(
        mixed.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
        'only the commits whose expectations fail are refused',
      );
      t.ok(
        mixed.every((r) => r.status === 'fulfilled' || r.reason instanceof StoreConflict),
        'as conflicts',
      );
      t.same(
        await b.getMany([
          { table: 'batch', id: 'x1' },
          { table: 'batch', id: 'x2' },
          { table: 'batch', id: 'keep' },
        ]),
        [{ v: 1 }, { v: 2 }, { v: 3 }],
        'what landed, in the order made',
      );
    });

    await t.test('claim', async (t) => {
      const now = 1_000_000;
      const due = Array.from({ length: 20 }, (_, i) => ({
        table: 'queue',
        id: `q${i}`,
        value: { id: `q${i}`, dueAt: now - i },
      }));
      await a.commit([
        ...due,
        { table: 'queue', id: 'later', value: { id: 'later', dueAt: now + 10_000 } },
        { table: 'queue', id: 'nodue', value: { id: 'nodue' } },
      ]);
      const req = { table: 'queue', dueField: 'dueAt', now, leaseUntil: now + 1000, limit: 15 };
      const [x, y] = await Promise.all([a.claim({ ...req, owner: 'A' }), b.claim({ ...req, owner: 'B' })]);
      const ids = [...x, ...y].map((r) => r.id);
      t.equal(new Set(ids).size, ids.length, 'no record leased to both');
      t.same(ids.sort(), due.map((d) => d.id).sort(), 'every due record, nothing else');
      t.ok(
        x.every((r) => r.leaseOwner === 'A') && y.every((r) => r.leaseOwner === 'B'),
        'lease fields set and returned',
      );
      t.match(await a.get('queue', x[0]?.id ?? y[0]?.id ?? ''), { leaseUntil: now + 1000 }, 'lease stored');
      t.same(await b.claim({ ...req, now: now + 500, owner: 'C' }), [], 'live leases are not taken');
      const again = await a.claim({ ...req, now: now + 1000, leaseUntil: now + 5000, owner: 'C', limit: 100 });
      t.equal(again.length, 20, 'expired leases are claimable');
      const earlier = new Map([...x, ...y].map((r) => [r.id, r.leaseOwner]));
      t.ok(
        again.every((r) => r.leaseTakenFrom === earlier.get(r.id)),
        'a lease taken over says whose it was (leaseTakenFrom), returned and stored',
      );
      t.match(await b.get('queue', 'q0'), { leaseOwner: 'C', leaseTakenFrom: earlier.get('q0') });
      const mine = await a.claim({ ...req, now: now + 1001, leaseUntil: now + 6000, owner: 'C', limit: 100 });
      t.equal(mine.length, 20, 'the owner of a live lease may renew it');
      t.ok(
        mine.every((r) => r.leaseTakenFrom === earlier.get(r.id)),
        'a renewal keeps what the lease took over',
      );
      const own = await a.claim({ ...req, now: now + 7000, leaseUntil: now + 9000, owner: 'C', limit: 1 });
      t.match(
        own,
        [{ leaseOwner: 'C', leaseTakenFrom: 'C' }],
        "the claimer's own lease that ran out is taken over too",
      );
      const q = must(await a.get('queue', 'q1'));
      const { leaseOwner: _o, leaseUntil: _u, ...unleased } = q;
      await a.commit([{ table: 'queue', id: 'q1', value: { ...unleased, leaseTakenFrom: 'stale' } }]);
      const fresh = (await b.claim({ ...req, now: now + 7000, leaseUntil: now + 9000, owner: 'D', limit: 100 })).find(
        (r) => r.id === 'q1',
      );
      t.ok(
        fresh && fresh.leaseOwner === 'D' && !('leaseTakenFrom' in fresh),
        'a lease begun on an unleased record took nothing over',
      );
    });

    await t.test("hit counts per window, which starts at the key's first hit", async (t) => {
      t.same(await a.hit('ip:1', 1000, 5300), { count: 1, resetAt: 6300 }, 'the first hit opens a window');
      t.same(await b.hit('ip:1', 1000, 5500), { count: 2, resetAt: 6300 }, 'shared between handles');
      t.same(await a.hit('ip:1', 1000, 6299), { count: 3, resetAt: 6300 }, 'not cut at a multiple of its length');
      t.same(await a.hit('ip:2', 1000, 6299), { count: 1, resetAt: 7299 }, 'per key');
      t.same(
        await a.hit('ip:1', 1000, 6300),
        { count: 1, resetAt: 7300 },
        'the next hit after the end opens a new window',
      );
      t.same(await a.hit('ip:1', 60_000, 6300), { count: 1, resetAt: 66_300 }, 'per window length');
    });

    await t.test(
      'a NUL (U+0000) or an unpaired surrogate is kept by neither store: a commit holding one is refused, a read with one finds nothing',
      async (t) => {
        await a.commit([{ table: 'apps', id: 'nul1', value: { id: 'nul1', ownerId: 'u-nul', text: 'fine' } }]);
        for (const [what, change] of [
          ['in a value', { table: 'apps', id: 'nul2', value: { text: 'a\u0000b' } }],
          ['in a key of a value', { table: 'apps', id: 'nul2', value: { ['k\u0000']: 1 } }],
          ['in an id', { table: 'apps', id: 'nul\u0000', value: {} }],
          ['an unpaired high surrogate in a value', { table: 'apps', id: 'nul2', value: { name: '\ud800' } }],
          ['an unpaired low surrogate in a key of a value', { table: 'apps', id: 'nul2', value: { ['x\udc00']: 1 } }],
          ['an unpaired surrogate in an id', { table: 'apps', id: 'nul\ud83d', value: {} }],
        ] as const) {
          await t.rejects(
            a.commit([{ table: 'apps', id: 'nul3', value: { ok: true } }, change]),
            StoreValueRefused,
            `${what}: refused`,
          );
        }
        t.equal(await b.get('apps', 'nul3'), undefined, 'nothing of the refused commits was written');
        await a.commit([{ table: 'apps', id: 'nul4', value: { text: 'a\\u0000 is six characters, not a NUL' } }]);
        t.same(
          await b.get('apps', 'nul4'),
          { text: 'a\\u0000 is six characters, not a NUL' },
          'an escaped backslash before u0000 is no NUL',
        );
        await a.commit([
          {
            table: 'apps',
            id: 'nul5',
            value: { text: 'a pair is kept: \ud83d\ude00', escaped: '\\ud800 is six characters' },
          },
        ]);
        t.same(
          await b.get('apps', 'nul5'),
          { text: 'a pair is kept: \ud83d\ude00', escaped: '\\ud800 is six characters' },
          'a whole surrogate pair, and an escaped backslash before ud800, are kept',
        );
        t.equal(await b.get('apps', 'nul1\u0000'), undefined, 'get with a NUL in the id');
        t.same(
          await b.getMany([
            { table: 'apps', id: 'x\u0000' },
            { table: 'apps', id: 'nul1' },
          ]),
          [undefined, { id: 'nul1', ownerId: 'u-nul', text: 'fine' }],
          'getMany: nothing for that key, the others answered',
        );
        t.same(await b.find('apps', 'ownerId', 'u-nul\u0000'), [], 'find');
        t.equal(await b.countWhere('apps', 'ownerId', 'u-nul\u0000'), 0, 'countWhere');
        t.same((await b.hit('key-with-\u0000', 60_000, 1_000_000)).count, 1, 'a rate-limit key with a NUL is counted');
      },
    );

    await t.test('publish and subscribe', async (t) => {
      t.equal(await deliver(a, b, 'wake_up', 'hello'), 'hello', 'heard by the other handle');
      t.equal(await deliver(a, a, 'wake_up', 'self'), 'self', 'heard by the sender itself');
      const big = 'x'.repeat(7000);
      t.equal(await deliver(b, a, 'big', big), big, '7,000 bytes');
      const heard: string[] = [];
      const off = a.subscribe('quiet', (m) => heard.push(m));
      await deliver(b, a, 'quiet', 'one');
      off();
      // a listener still subscribed hears 'two': the one unsubscribed would have by then
      t.equal(await deliver(b, a, 'quiet', 'two'), 'two');
      t.same(heard, ['one'], 'nothing after unsubscribe');
      // Both stores refuse what PostgreSQL cannot LISTEN on, so a bad name fails in embedded tests too.
      t.throws(() => a.subscribe('Bad-Name', () => {}), TypeError, 'channel names are [a-z0-9_]');
      await t.rejects(async () => a.publish('wake_up', 'x'.repeat(7001)), 'payload limit');
    });

    t.same(a.health(), { ok: true });
  });
}

t.test('embedded store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-contract-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openEmbeddedStore<TestTables>({ dir, logger: quietLogger, compactIdleMs: 0 });
  t.teardown(() => store.close());
  t.equal(store.kind, 'embedded');
  await contract(t, { a: store, b: store });
});

void testWithPg(t, 'postgres store', async (t, url) => {
  const open = (instanceId: string) =>
    openPostgresStore<TestTables>({ url, logger: quietLogger, instanceId, poolSize: 8 });
  const a = await open('contract-a');
  t.teardown(() => a.close());
  const b = await open('contract-b');
  t.teardown(() => b.close());
  t.equal(a.kind, 'postgres');
  await contract(t, { a, b });
});
