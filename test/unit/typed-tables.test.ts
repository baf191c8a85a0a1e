/**
 * The store's types (src/model/tables.ts, src/store/types.ts, src/store/indexes.ts): a misspelled
 * table or field, or a record of the wrong shape, is a compile error. This file is compiled with
 * the rest by npm test, and each `@ts-expect-error` below must meet its error: a directive with no
 * error under it fails tsc (TS2578), and with it the whole run. The runtime half shows what the
 * stores themselves would say of the same mistakes: mostly nothing.
 */
import t from 'tap';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { IndexedFieldsOf } from '../../src/store/indexes.js';
import type { Tables } from '../../src/model/tables.js';
import { engineOf } from '../helpers/test-tables.js';

const store = createMemoryStore();

/** Never called: what the compiler refuses. */
async function mistakes(): Promise<void> {
  // @ts-expect-error -- no table "app" (apps)
  await store.get('app', 'a1');
  // @ts-expect-error -- no table "oauthCode" in an expectation either
  await store.commit([], [{ table: 'oauthCode', id: 'c1', value: undefined }]);
  // @ts-expect-error -- "ownerID" is no field of an app (ownerId)
  await store.find('apps', 'ownerID', 'u1');
  // @ts-expect-error -- apps are found by owner only: workspaceId has no index
  await store.find('apps', 'workspaceId', 'w1');
  // @ts-expect-error -- a table without an index cannot be searched at all
  await store.countWhere('workspaces', 'name', 'x');
  // @ts-expect-error -- a change holds a record of its own table (this is no AppRecord)
  await store.commit([{ table: 'apps', id: 'a1', value: { id: 'a1', email: 'x@example.com' } }]);
  // @ts-expect-error -- claim's due field is a field of the table's records (nextAt)
  await store.claim({ table: 'pendingDeliveries', dueField: 'dueAt', now: 0, owner: 'd1', leaseUntil: 1, limit: 1 });
  // @ts-expect-error -- a page is ordered by a field of the records (seq)
  await store.findPage('wsMessages', 'channelId', 'c1', { orderBy: 'sequence', limit: 10 });

  // what a read gives back is typed by its table
  const app = await store.get('apps', 'a1');
  // @ts-expect-error -- an AppRecord has no email
  void app?.email;
  const [user, installation] = await store.getMany([
    { table: 'workspaceUsers', id: 'u1' },
    { table: 'oauthInstallations', id: 'i1' },
  ]);
  void installation?.botScopes; // an installation's
  // @ts-expect-error -- a workspace user has none
  void user?.botScopes;

  // an index list names fields of its table's records
  // @ts-expect-error -- "ownerID"
  void ({ apps: ['ownerID'] } as const satisfies IndexedFieldsOf<Tables>);
}
void mistakes;

t.test(
  'the same mistakes at run time: a misspelled table reads as empty, only a find on an unindexed field is caught',
  async (t) => {
    const loose = engineOf(store); // the store as it is at run time: tables and fields by any name
    await loose.commit([{ table: 'apps', id: 'a1', value: { id: 'a1', workspaceId: 'w1', ownerId: 'u1' } }]);
    t.equal(await loose.get('app', 'a1'), undefined, 'no such table: nothing, silently');
    t.same(
      await loose.find('apps', 'ownerID', 'u1').catch((e: unknown) => (e as Error).name),
      'TypeError',
      'an unindexed field: a TypeError at the call',
    );
    t.equal((await store.get('apps', 'a1'))?.ownerId, 'u1', 'spelled right, typed right');
  },
);
