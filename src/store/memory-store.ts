/** A Store that keeps everything in memory: for unit tests of other modules. Same semantics as the embedded store. */
import {
  LocalChannels,
  HitWindows,
  checkExpectations,
  chooseClaims,
  tableReads,
  validateExpectations,
} from './embedded-ops.js';
import { Tables, toJsonChanges, validateChanges } from './tables.js';
import { transaction } from './transaction.js';
import {
  typed,
  type AnyTables,
  type Change,
  type ClaimRequest,
  type Expectation,
  type Store,
  type StoreEngine,
  type TableMap,
} from './types.js';
import type { Tables as DaemonTables } from '../model/tables.js';

export function createMemoryStore<TM extends TableMap = DaemonTables>(): Store<TM> {
  const tables = new Tables();
  const hits = new HitWindows();
  const channels = new LocalChannels();
  let closed = false;
  const store: StoreEngine = {
    kind: 'embedded',
    ...tableReads(tables),
    transaction,
    commit(changes: readonly Change<AnyTables>[], expect?: readonly Expectation<AnyTables>[]): Promise<void> {
      if (closed) return Promise.reject(new Error('store is closed'));
      try {
        validateChanges(changes);
        validateExpectations(expect);
        const json = toJsonChanges(changes);
        checkExpectations(tables, expect);
        tables.apply(json);
      } catch (err) {
        return Promise.reject(err);
      }
      return Promise.resolve();
    },
    async claim(req: ClaimRequest): Promise<object[]> {
      if (closed) throw new Error('store is closed');
      const { changes, records } = chooseClaims(tables, req);
      tables.apply(changes);
      return records;
    },
    hit: async (key, windowMs, now, n) => hits.hit(key, windowMs, now, n),
    publish: (channel, payload) => channels.publish(channel, payload),
    subscribe: (channel, fn) => channels.subscribe(channel, fn),
    subscribed: () => Promise.resolve(),
    health: () => ({ ok: true }),
    async close() {
      closed = true;
    },
  };
  return typed<TM>(store);
}
