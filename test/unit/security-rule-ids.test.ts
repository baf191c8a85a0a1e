/**
 * docs/security.md gives each rule an ID that code and tests cite alone ("M7", "§1 M1–M6"): an
 * ID used by two rules would make such a citation name either. W1–W6 and M1–M5 once were.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';

/** The IDs of the rules: the first cell of a table row, such as `| M1 |`. */
const ruleIds = (markdown: string): string[] =>
  [...markdown.matchAll(/^\| ([A-Z]{1,2}\d{1,2}) \|/gm)].map((m) => m[1] ?? '');

t.test('the check finds an ID used twice', async (t) => {
  const ids = ruleIds('| rule | what |\n|---|---|\n| W1 | a |\n| W2 | b |\n\n| W1 | c |\n');
  t.same(ids, ['W1', 'W2', 'W1']);
});

t.test('every rule of docs/security.md has an ID of its own', async (t) => {
  const ids = ruleIds(fs.readFileSync(path.join(ROOT, 'docs/security.md'), 'utf8'));
  t.ok(ids.length > 50, `read ${ids.length} rules`);
  t.same(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
    'no ID twice',
  );
});
