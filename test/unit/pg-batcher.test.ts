/**
 * The PostgreSQL store's micro-batching (src/store/postgres/batcher.ts), with a fake database:
 * calls made in one turn go together, queued calls wait for a free slot and then go together,
 * each call gets its own answer, and an idle batcher sends a lone call at once.
 */
import t from 'tap';
import { createBatcher, type Settled } from '../../src/store/postgres/batcher.js';
import { batchedCommits, type CommitArgs } from '../../src/store/postgres/batched-ops.js';
import { StoreConflict } from '../../src/store/types.js';
import { must } from '../../src/must.js';

const tick = () => new Promise((r) => setImmediate(r));

function fakeDb(opts: {
  maxInFlight: number;
  maxWeight?: number;
  weight?: (n: number) => number;
  joinable?: () => (n: number) => boolean;
}) {
  const batches: number[][] = [];
  const gates: Array<() => void> = [];
  let held = false;
  const run = async (items: number[]): Promise<Settled<number>[]> => {
    batches.push(items);
    if (held) await new Promise<void>((r) => gates.push(r));
    return items.map((x) =>
      x < 0 ? { ok: false as const, error: new Error(`bad ${x}`) } : { ok: true as const, value: x * 10 },
    );
  };
  const b = createBatcher<number, number>(run, {
    maxInFlight: opts.maxInFlight,
    maxWeight: opts.maxWeight ?? 100,
    weight: opts.weight,
    joinable: opts.joinable,
  });
  return {
    b,
    batches,
    hold: () => (held = true),
    release: () => {
      held = false;
      gates.splice(0).forEach((g) => g());
    },
  };
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
  t.same(
    r.map((x) => x.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match((r[1] as PromiseRejectedResult).reason, { message: 'bad -1' });
});

t.test('a batch that throws rejects its calls only, and the batcher goes on', async (t) => {
  let fail = true;
  const b = createBatcher<number, number>(
    async (items) => {
      if (fail) throw new Error('connection lost');
      return items.map((x) => ({ ok: true as const, value: x }));
    },
    { maxInFlight: 1, maxWeight: 10 },
  );
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

t.test('a call that may not go yet waits, with the calls after it, for a batch to come back', async (t) => {
  // calls of one "group" (the tens digit) may not go while another of the group is sent or out
  const out = new Set<number>();
  const db = fakeDb({
    maxInFlight: 3,
    joinable: () => {
      const ahead = new Set<number>();
      return (n) => {
        const g = Math.floor(n / 10);
        if (ahead.has(g) || out.has(g)) return false;
        ahead.add(g);
        return true;
      };
    },
  });
  db.hold();
  const first = [11, 21].map((x) => db.b.submit(x));
  await tick();
  t.same(db.batches, [[11, 21]]);
  out.add(1).add(2); // what the fake database holds while they are out
  const later = [32, 12, 43].map((x) => db.b.submit(x));
  await tick();
  await tick();
  t.same(db.batches, [[11, 21], [32]], 'a free slot, yet 12 waits for 11, and 43 (made after it) with it');
  out.clear();
  db.release();
  t.same(await Promise.all([...first, ...later]), [110, 210, 320, 120, 430]);
  t.same(db.batches, [[11, 21], [32], [12, 43]], 'then they went, in the order made');
});

/** batchedCommits over a fake database that answers appreg_commit_batch with the conflicts given. */
function fakeCommits(answer: (commits: unknown[]) => unknown[]) {
  const sent: unknown[][] = [];
  const gates: Array<() => void> = [];
  let held = false;
  const q = (async (_text: string, values?: unknown[]) => {
    const commits = JSON.parse(String(values?.[0])) as unknown[];
    sent.push(commits);
    if (held) await new Promise<void>((r) => gates.push(r));
    return { rows: [{ out: answer(commits) }] };
  }) as unknown as Parameters<typeof batchedCommits>[0];
  const b = batchedCommits(q, 3);
  const commit = (id: string, expects: string[], writes: string[]): CommitArgs => ({
    expect: JSON.stringify(expects.map((e) => ({ table: 't', id: e }))),
    changes: JSON.stringify(writes.map((w) => ({ table: 't', id: w, value: { by: id } }))),
    expectKeys: expects.map((e) => `t\u0000${e}`),
    writeKeys: writes.map((w) => `t\u0000${w}`),
  });
  return {
    b,
    sent,
    commit,
    hold: () => (held = true),
    release: () => {
      held = false;
      gates.splice(0).forEach((g) => g());
    },
  };
}

t.test('commits: a batch never holds a commit that expects what an earlier one writes', async (t) => {
  const db = fakeCommits((cs) => cs.map(() => null));
  db.hold();
  const a = db.b.submit(db.commit('a', ['x'], ['x']));
  await tick();
  const rest = [
    db.commit('b', ['y'], ['y']), // independent: goes at once, beside a
    db.commit('c', [], ['x']), // writes x without expecting it: goes too
    db.commit('d', ['x'], ['z']), // expects x, which a (at the database) and c write: waits
    db.commit('e', ['w'], ['w']), // made after d: waits with it
  ].map((c) => db.b.submit(c));
  await tick();
  await tick();
  const ids = () =>
    db.sent.map((batch) => batch.map((c) => (must((c as unknown[][])[1])[0] as { value: { by: string } }).value.by));
  t.same(ids(), [['a'], ['b', 'c']], 'd and e wait while x is being written');
  db.release();
  await Promise.all([a, ...rest]);
  t.same(ids(), [['a'], ['b', 'c'], ['d', 'e']], 'and go once it is written');
});

t.test("commits: the database's answer is each commit's own", async (t) => {
  const db = fakeCommits((cs) => cs.map((_c, i) => (i === 1 ? { table: 't', id: 'y' } : null)));
  const r = await Promise.allSettled([
    db.b.submit(db.commit('a', ['x'], ['x'])),
    db.b.submit(db.commit('b', ['y'], ['y'])),
    db.b.submit(db.commit('c', [], ['z'])),
  ]);
  t.same(
    r.map((x) => x.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const err = (r[1] as PromiseRejectedResult).reason as StoreConflict;
  t.ok(err instanceof StoreConflict, 'a conflict');
  t.same([err.table, err.id], ['t', 'y'], 'naming the record');
  t.equal(db.sent.length, 1, 'all three in one statement');
});
