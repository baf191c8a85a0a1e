/**
 * The PostgreSQL store's micro-batching (src/store/postgres/batcher.ts), with a fake database:
 * calls made in one turn go together, queued calls wait for a free slot and then go together,
 * each call gets its own answer, and an idle batcher sends a lone call at once.
 */
import t from 'tap';
import { createBatcher, type Settled } from '../../src/store/postgres/batcher.js';

const tick = () => new Promise((r) => setImmediate(r));

function fakeDb(opts: { maxInFlight: number; maxWeight?: number; weight?: (n: number) => number }) {
  const batches: number[][] = [];
  const gates: Array<() => void> = [];
  let held = false;
  const run = async (items: number[]): Promise<Settled<number>[]> => {
    batches.push(items);
    if (held) await new Promise<void>((r) => gates.push(r));
    return items.map((x) => (x < 0 ? { ok: false as const, error: new Error(`bad ${x}`) } : { ok: true as const, value: x * 10 }));
  };
  const b = createBatcher<number, number>(run, { maxInFlight: opts.maxInFlight, maxWeight: opts.maxWeight ?? 100, weight: opts.weight });
  return { b, batches, hold: () => (held = true), release: () => { held = false; gates.splice(0).forEach((g) => g()); } };
}

t.test('calls made in one turn go in one batch, each with its own answer', async (t) => {
  const { b, batches } = fakeDb({ maxInFlight: 2 });
  const out = await Promise.all([1, 2, 3].map((x) => b.submit(x)));
  t.same(out, [10, 20, 30]);
  t.same(batches, [[1, 2, 3]], 'one batch, in the order the calls were made');
});

t.test('a lone call goes alone', async (t) => {
  const { b, batches } = fakeDb({ maxInFlight: 2 });
  t.equal(await b.submit(7), 70);
  t.equal(await b.submit(8), 80);
  t.same(batches, [[7], [8]]);
});

t.test('one call failing fails only that call', async (t) => {
  const { b } = fakeDb({ maxInFlight: 1 });
  const r = await Promise.allSettled([b.submit(1), b.submit(-1), b.submit(2)]);
  t.same(r.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.match((r[1] as PromiseRejectedResult).reason, { message: 'bad -1' });
});

t.test('a batch that throws rejects its calls only, and the batcher goes on', async (t) => {
  let fail = true;
  const b = createBatcher<number, number>(async (items) => {
    if (fail) throw new Error('connection lost');
    return items.map((x) => ({ ok: true as const, value: x }));
  }, { maxInFlight: 1, maxWeight: 10 });
  const r = await Promise.allSettled([b.submit(1), b.submit(2)]);
  t.ok(r.every((x) => x.status === 'rejected' && (x.reason as Error).message === 'connection lost'));
  fail = false;
  t.equal(await b.submit(3), 3);
  t.equal(b.pending, 0);
});

t.test('while the slots are busy calls queue, then go together', async (t) => {
  const db = fakeDb({ maxInFlight: 1 });
  db.hold();
  const first = db.b.submit(1);
  await tick();
  const later = [2, 3, 4].map((x) => db.b.submit(x));
  await tick();
  await tick();
  t.same(db.batches, [[1]], 'nothing more is sent while the one slot is taken');
  t.equal(db.b.pending, 4);
  db.release();
  t.same(await Promise.all([first, ...later]), [10, 20, 30, 40]);
  t.same(db.batches, [[1], [2, 3, 4]], 'the queued calls went in one batch');
});

t.test('a batch carries at most maxWeight', async (t) => {
  const { b, batches } = fakeDb({ maxInFlight: 1, maxWeight: 5, weight: (n) => n });
  await Promise.all([2, 2, 2, 9, 1].map((x) => b.submit(x)));
  t.same(batches, [[2, 2], [2], [9], [1]], 'a heavy call goes alone; order is kept');
});
