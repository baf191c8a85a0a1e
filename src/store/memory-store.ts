/** A Store that keeps everything in memory: for unit tests of other modules. */
import { Tables, validateChanges } from './tables.js';
import type { Change, Store } from './types.js';

export function createMemoryStore(): Store {
  const tables = new Tables();
  let closed = false;
  return {
    get: (table, id) => tables.get(table, id),
    values: (table) => tables.values(table),
    count: (table) => tables.count(table),
    commit(changes: Change[]): Promise<void> {
      if (closed) return Promise.reject(new Error('store is closed'));
      try {
        validateChanges(changes);
      } catch (err) {
        return Promise.reject(err);
      }
      tables.apply(changes);
      return Promise.resolve();
    },
    health: () => ({ ok: true }),
    observe: (fn) => tables.observe(fn),
    async close() {
      closed = true;
    },
  };
}
