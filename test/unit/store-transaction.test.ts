/**
 * Store.transaction (src/store/transaction.ts), one suite run against both stores as the store
 * contract is (store-contract.test.ts): reads are its expectations, its writes are buffered and
 * seen by its own reads, a conflict runs it again (a bounded number of times), any other throw
 * writes nothing. The concurrent writer is the second handle of the store, writing inside the
 * transaction's first run(s): no timing is involved.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import { openPostgresStore } from '../../src/store/postgres/pg-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { StoreConflict, type Store } from '../../src/store/types.js';
import { testWithPg } from '../helpers/pg.js';
import type { TestTables } from '../helpers/test-tables.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const quietLogger = { warn() {} };

/** `a` runs the transactions; `b` is another writer on the same store (another daemon's on PostgreSQL). */
function suite(t: TapTest, a: Store<TestTables>, b: Store<TestTables>): Promise<unknown> {
  let n = 0;
  /** A fresh id per test, so that the tests of one store do not see each other's records. */
  const fresh = (p: string) => `${p}${++n}`;

  return t.test('transaction', async (t) => {
    await t.test(
      'a record read and changed by another writer before the commit: the work runs again on fresh reads',
      async (t) => {
        const id = fresh('c');
        await b.commit([{ table: 'counters', id, value: { id, n: 1 } }]);
        let runs = 0;
        const result = await a.transaction(async (tx) => {
          runs++;
          const c = await tx.get('counters', id);
          if (runs === 1) await b.commit([{ table: 'counters', id, value: { id, n: 10 } }]);
          tx.put('counters', id, { id, n: c.n + 1 });
          return c.n + 1;
        });
        t.equal(runs, 2);
        t.equal(result, 11, 'the second run read what the other writer wrote');
        t.same(await b.get('counters', id), { id, n: 11 }, 'no lost update');
      },
    );

    await t.test('a record read as absent and made meanwhile is a conflict too', async (t) => {
      const id = fresh('u');
      let runs = 0;
      const made = await a.transaction(async (tx) => {
        runs++;
        if (await tx.get('names', id)) return false;
        if (runs === 1) await b.commit([{ table: 'names', id, value: { id, by: 'b' } }]);
        tx.put('names', id, { id, by: 'a' });
        return true;
      });
      t.same({ runs, made }, { runs: 2, made: false });
      t.same(await b.get('names', id), { id, by: 'b' }, 'the other writer keeps the name');
    });

    await t.test('what find found is expected; getMany keys too, by id and by idFrom', async (t) => {
      const owner = fresh('o');
      const [x, y] = [fresh('x'), fresh('y')];
      await b.commit([
        { table: 'apps', id: x, value: { id: x, ownerId: owner, n: 1, next: y } },
        { table: 'apps', id: y, value: { id: y, ownerId: 'other', n: 2 } },
      ]);
      let runs = 0;
      await a.transaction(async (tx) => {
        runs++;
        const found = await tx.find('apps', 'ownerId', owner);
        if (runs === 1) await b.commit([{ table: 'apps', id: x, value: { ...found[0], n: 5 } }]);
        tx.put('marks', owner, { id: owner, sum: found.reduce((s, r) => s + r.n, 0) });
      });
      t.equal(runs, 2, 'a found record changed: run again');
      t.same(await b.get('marks', owner), { id: owner, sum: 5 });

      runs = 0;
      await a.transaction(async (tx) => {
        runs++;
        const [first, second] = await tx.getMany([
          { table: 'apps', id: x },
          { table: 'apps', idFrom: { key: 0, field: 'next' } },
        ]);
        if (runs === 1) await b.commit([{ table: 'apps', id: y, value: { ...second, n: 7 } }]);
        tx.put('marks', owner, { id: owner, sum: first.n + second.n });
      });
      t.equal(runs, 2, 'a record reached by idFrom changed: run again');
      t.same(await b.get('marks', owner), { id: owner, sum: 12 });
    });

    await t.test('a peek is no expectation, and a transaction that writes nothing commits nothing', async (t) => {
      const [p, q] = [fresh('p'), fresh('q')];
      await b.commit([
        { table: 'apps', id: p, value: { id: p, n: 1 } },
        { table: 'apps', id: q, value: { id: q, n: 1, ownerId: 'peeked' } },
      ]);
      let runs = 0;
      await a.transaction(async (tx) => {
        runs++;
        const [peeked] = await tx.getMany([{ table: 'apps', id: p, peek: true }]);
        await tx.get('apps', q, { peek: true });
        await tx.find('apps', 'ownerId', 'peeked', { peek: true });
        await b.commit([
          { table: 'apps', id: p, value: { id: p, n: runs + 1 } },
          { table: 'apps', id: q, value: { id: q, n: runs + 1, ownerId: 'peeked' } },
        ]);
        tx.put('marks', p, { id: p, saw: peeked.n });
      });
      t.equal(runs, 1, 'records only peeked at may change meanwhile');
      runs = 0;
      const n = await a.transaction(async (tx) => {
        runs++;
        const r = await tx.get('apps', p);
        await b.commit([{ table: 'apps', id: p, value: { id: p, n: 100 + runs } }]);
        return r.n;
      });
      t.same({ runs, n }, { runs: 1, n: 2 }, 'read only: answered as read, not run again');
    });

    await t.test('its reads see its own writes: get, getMany (idFrom through a written record), find', async (t) => {
      const owner = fresh('o');
      const [k, m, gone] = [fresh('k'), fresh('m'), fresh('g')];
      await b.commit([
        { table: 'apps', id: k, value: { id: k, ownerId: owner, n: 1 } },
        { table: 'apps', id: gone, value: { id: gone, ownerId: owner, n: 3 } },
        { table: 'apps', id: m, value: { id: m, n: 9 } },
      ]);
      const view = await a.transaction(async (tx) => {
        tx.put('apps', k, { id: k, ownerId: owner, n: 2, next: m });
        tx.delete('apps', gone);
        const added = fresh('n');
        tx.apply({ table: 'apps', id: added, value: { id: added, ownerId: owner, n: 4 } });
        const [kk, nextOfK, deleted] = await tx.getMany([
          { table: 'apps', id: k },
          { table: 'apps', idFrom: { key: 0, field: 'next' } },
          { table: 'apps', id: gone },
        ]);
        const found = (await tx.find('apps', 'ownerId', owner)).map((r) => r.n).sort();
        return { got: (await tx.get('apps', k)).n, k: kk.n, next: nextOfK?.n, deleted, found };
      });
      t.same(view, { got: 2, k: 2, next: 9, deleted: undefined, found: [2, 4] });
      t.same(await b.get('apps', gone), undefined, 'committed at its end');
    });

    await t.test(
      'a conflict on every run: at most `attempts` runs, then the StoreConflict, nothing written',
      async (t) => {
        const id = fresh('h');
        await b.commit([{ table: 'counters', id, value: { id, n: 0 } }]);
        let runs = 0;
        await t.rejects(
          a.transaction(
            async (tx) => {
              runs++;
              const c = await tx.get('counters', id);
              await b.commit([{ table: 'counters', id, value: { id, n: 1000 + runs } }]);
              tx.put('counters', id, { id, n: c.n + 1 });
              tx.put('marks', id, { id });
            },
            { attempts: 3 },
          ),
          StoreConflict,
        );
        t.equal(runs, 3);
        t.same(await b.get('counters', id), { id, n: 1003 }, 'only the other writer wrote');
        t.equal(await b.get('marks', id), undefined);

        runs = 0;
        await t.rejects(
          a.transaction(async (tx) => {
            runs++;
            const c = await tx.get('counters', id);
            await b.commit([{ table: 'counters', id, value: { id, n: 2000 + runs } }]);
            tx.put('counters', id, { id, n: c.n + 1 });
          }),
          StoreConflict,
        );
        t.equal(runs, 8, 'eight runs unless told');
      },
    );

    await t.test('any other throw: run once, nothing written, and the transaction is closed', async (t) => {
      const id = fresh('e');
      let runs = 0;
      let kept: { put(table: string, id: string, value: object): void } | undefined;
      await t.rejects(
        a.transaction(async (tx) => {
          runs++;
          kept = tx;
          tx.put('marks', id, { id });
          await tx.get('marks', id);
          throw new RangeError('refused');
        }),
        RangeError,
      );
      t.equal(runs, 1);
      t.equal(await b.get('marks', id), undefined);
      t.throws(() => kept?.put('marks', id, { id }), /used after it ended/);
    });
  });
}

t.test('memory store', async (t) => {
  const store = createMemoryStore<TestTables>();
  await suite(t, store, store);
});

t.test('embedded store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-tx-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await openEmbeddedStore<TestTables>({ dir, logger: quietLogger, compactIdleMs: 0 });
  t.teardown(() => store.close());
  await suite(t, store, store);
});

void testWithPg(t, 'postgres store', async (t, url) => {
  const open = (instanceId: string) =>
    openPostgresStore<TestTables>({ url, logger: quietLogger, instanceId, poolSize: 4 });
  const a = await open('tx-a');
  t.teardown(() => a.close());
  const b = await open('tx-b');
  t.teardown(() => b.close());
  await suite(t, a, b);
});
