/**
 * The ids an index keeps under one key (src/store/index-buckets.ts): a lone id, an array, a Set,
 * each form giving the same answers as a Set would, in the same order, through Tables' find,
 * countWhere and findPage as ids come and go.
 */
import t from 'tap';
import { idsOf, SMALL_BUCKET, sizeOf, withId, withoutId, type Bucket } from '../../src/store/index-buckets.js';
import { Tables } from '../../src/store/tables.js';

t.test('a bucket answers as a Set of the same ids would, whatever its form', async (t) => {
  let bucket: Bucket | undefined;
  const model = new Set<string>();
  const forms = new Set<string>();
  // grow past an array's size, shrink to 0, with ids added twice and ids removed that are not there
  const N = SMALL_BUCKET + 12;
  const steps: [boolean, string][] = [];
  for (let i = 0; i < N; i++) steps.push([true, `id${i}`], [true, `id${i}`]);
  for (let i = 0; i < N; i += 3) steps.push([false, `id${i}`], [false, 'absent']);
  for (let i = 0; i < N; i++) steps.push([false, `id${N - 1 - i}`]);
  for (const [add, id] of steps) {
    if (add) {
      bucket = withId(bucket, id);
      model.add(id);
    } else if (bucket !== undefined) {
      bucket = withoutId(bucket, id);
      model.delete(id);
    }
    if (bucket === undefined) {
      if (model.size) t.fail(`empty bucket, ${model.size} ids expected`);
      continue;
    }
    forms.add(typeof bucket === 'string' ? 'id' : Array.isArray(bucket) ? 'array' : 'set');
    if (JSON.stringify([...idsOf(bucket)]) !== JSON.stringify([...model])) t.fail(`after ${add ? '+' : '-'}${id}`);
    if (sizeOf(bucket) !== model.size) t.fail(`size after ${add ? '+' : '-'}${id}`);
  }
  t.equal(bucket, undefined, 'none left');
  t.same([...forms].sort(), ['array', 'id', 'set'], 'every form was met');
});

t.test('Tables: find, countWhere and findPage through every form of a bucket', async (t) => {
  const tables = new Tables();
  const put = (id: string, appId: string) =>
    tables.apply([{ table: 'oauthTokens', id, json: JSON.stringify({ id, appId, n: Number(id.slice(1)) }) }]);
  const ids = (appId: string) => tables.find('oauthTokens', 'appId', appId).map((r) => (r as { id: string }).id);
  const N = SMALL_BUCKET + 4; // past an array: a Set
  const tid = (i: number) => `t${String(i).padStart(3, '0')}`;
  put(tid(0), 'a');
  t.same(ids('a'), [tid(0)], 'one');
  for (let i = 1; i < N; i++) put(tid(i), 'a');
  t.equal(tables.countWhere('oauthTokens', 'appId', 'a'), N);
  t.same(
    ids('a'),
    Array.from({ length: N }, (_, i) => tid(i)),
    `${N}, in order`,
  );
  // moving records to another key takes them out of this one
  for (let i = 0; i < N - 1; i++) put(tid(i), 'b');
  t.same(ids('a'), [tid(N - 1)], 'one left');
  t.equal(tables.countWhere('oauthTokens', 'appId', 'b'), N - 1);
  t.same(
    tables
      .findPage('oauthTokens', 'appId', 'b', { orderBy: 'n' as never, limit: 3, desc: true })
      .map((r) => (r as { id: string }).id),
    [tid(N - 2), tid(N - 3), tid(N - 4)],
    'a page of the Set',
  );
  tables.apply([{ table: 'oauthTokens', id: tid(N - 1), json: null }]);
  t.same(ids('a'), [], 'none');
  t.equal(tables.countWhere('oauthTokens', 'appId', 'a'), 0);
});
