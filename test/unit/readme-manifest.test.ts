/** The complete example manifest of docs/manifest.md stays valid as the schema changes. */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { validateManifest } from '../../src/validation/manifest.js';
import { ROOT } from '../helpers/cli.js';
import { must } from '../../src/must.js';

t.test("docs/manifest.md's complete manifest is valid", async (t) => {
  const readme = fs.readFileSync(path.join(ROOT, 'docs/manifest.md'), 'utf8');
  const block = /A complete manifest[\s\S]*?```json\n([\s\S]*?)\n```/.exec(readme);
  t.ok(block, 'docs/manifest.md has the example');
  const result = validateManifest(JSON.parse(must(must(block)[1])));
  t.same(result.ok ? [] : result.violations, [], 'no violations');
  t.same(result.ok ? result.warnings : [], [], 'and no warnings');
});
