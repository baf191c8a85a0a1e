/** services/conflict.ts: the one retry of a read-check-write that met a StoreConflict. */
import t from 'tap';
import { retryOnConflict } from '../../src/services/conflict.js';
import { StoreConflict } from '../../src/store/types.js';

/** A step that conflicts `n` times, then answers 'done'; `calls` counts its runs. */
function conflicting(n: number) {
  const s = { calls: 0, step: async () => (++s.calls <= n ? Promise.reject(new StoreConflict('apps', 'a1')) : 'done') };
  return s;
}

t.test('a step that conflicts runs again on fresh reads, up to eight times in all', async (t) => {
  const s = conflicting(7);
  t.equal(await retryOnConflict(s.step), 'done');
  t.equal(s.calls, 8);
});

t.test('the eighth conflict is thrown, and the step is not run again', async (t) => {
  const s = conflicting(8);
  await t.rejects(retryOnConflict(s.step), StoreConflict);
  t.equal(s.calls, 8);
});

t.test('any other error is thrown at once', async (t) => {
  let calls = 0;
  await t.rejects(
    retryOnConflict(async () => {
      calls++;
      throw new TypeError('not a conflict');
    }),
    TypeError,
  );
  t.equal(calls, 1);
});

t.test('a smaller number of attempts can be asked for', async (t) => {
  const s = conflicting(5);
  await t.rejects(retryOnConflict(s.step, 3), StoreConflict);
  t.equal(s.calls, 3);
});
