/** The daemon's heap growing factor (src/server/heap-growth.ts) and its setting (heapGrowingPercent). */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { limitHeapGrowth } from '../../src/server/heap-growth.js';

t.test('heapGrowingPercent: 20 unless set; 0 leaves V8 its own choice; a negative one is refused', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-heap-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.equal(loadConfig({ dataDir: dir }, {}).heapGrowingPercent, 20);
  t.equal(loadConfig({ dataDir: dir }, { APPREG_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent, 0);
  t.throws(
    () => loadConfig({ dataDir: dir }, { APPREG_HEAP_GROWING_PERCENT: '-5' }),
    /APPREG_HEAP_GROWING_PERCENT.*non-negative/,
  );
});

t.test('limitHeapGrowth sets V8 --heap-growing-percent, unless 0 or node was given the flag itself', async (t) => {
  const set: string[] = [];
  const setFlags = (f: string) => void set.push(f);
  t.equal(limitHeapGrowth(20, { execArgv: [], setFlags }), true);
  t.equal(
    limitHeapGrowth(12.6, { execArgv: ['--expose-gc'], nodeOptions: '--max-old-space-size=4096', setFlags }),
    true,
  );
  t.same(set, ['--heap-growing-percent=20', '--heap-growing-percent=13'], 'a whole percent');
  t.equal(limitHeapGrowth(0, { execArgv: [], setFlags }), false, '0: V8 decides');
  t.equal(
    limitHeapGrowth(20, { execArgv: ['--heap-growing-percent=50'], setFlags }),
    false,
    "node's own argument wins",
  );
  t.equal(
    limitHeapGrowth(20, { execArgv: [], nodeOptions: '--trace-gc --heap_growing_percent=35', setFlags }),
    false,
    'so does NODE_OPTIONS',
  );
  t.equal(set.length, 2, 'nothing set in those cases');
});
