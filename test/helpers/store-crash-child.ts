/**
 * Child process for the store crash test: opens the store in argv[2] and commits
 * forever from several concurrent writers, printing each id once its commit is
 * acknowledged (durable). The parent SIGKILLs it and checks every printed id.
 */
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import type { TestTables } from './test-tables.js';

const dir = process.argv[2];
const prefix = process.argv[3] ?? '';
if (!dir) throw new Error('usage: store-crash-child <dir> [id-prefix]');
const store = await openEmbeddedStore<TestTables>({ dir, compactEveryBytes: 16 * 1024, compactIdleMs: 20 });
process.stdout.write('ready\n');
const writer = async (w: number) => {
  for (let i = 0; ; i++) {
    const id = `${prefix}w${w}-${i}`;
    await store.commit([{ table: 'items', id, value: { id, w, i, pad: 'x'.repeat(100) } }]);
    process.stdout.write(id + '\n');
  }
};
await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(writer));
