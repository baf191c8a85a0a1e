import type { Store, StoreEngine, TableMap } from '../../src/store/types.js';

/**
 * Tables of any name holding records of any shape: for the store's own tests, which write what
 * they like (a store keeps any JSON object), as Store<TestTables>. The daemon's tables and their
 * record types are src/model/tables.ts.
 */
// a test record is whatever JSON the test wrote, read as it likes
export type TestRecord = any;
export type TestTables = Record<string, TestRecord>;

/**
 * A store as the engine it is (StoreEngine: plain methods over tables by name): the same object, so
 * a test that replaces a method (to count calls, to fail one) changes what the daemon calls.
 */
export function engineOf<TM extends TableMap>(store: Store<TM>): StoreEngine {
  return store as unknown as StoreEngine;
}
