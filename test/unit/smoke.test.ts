import t from 'tap';
import { FORMAT_VERSION } from '../../src/store/types.js';
t.test('format version is a positive integer', async (t) => {
  t.ok(Number.isInteger(FORMAT_VERSION) && FORMAT_VERSION > 0);
});
