/**
 * A doc comment stands above what it describes: two in a row mean one of them lost its
 * declaration (five did, issue 23), and an editor shows the wrong one, or neither.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';
import { must } from '../../src/must.js';

/** The lines (1-based) where a doc comment starts right after another one ended. */
function docAfterDoc(text: string): number[] {
  const lines = text.split('\n');
  const out: number[] = [];
  for (let i = 1; i < lines.length; i++)
    if (/\*\/\s*$/.test(must(lines[i - 1])) && /^\s*\/\*\*/.test(must(lines[i]))) out.push(i + 1);
  return out;
}

t.test('the check finds a doc comment left above another', async (t) => {
  t.same(docAfterDoc('/** a */\n/** b */\nexport const b = 1;\n'), [2]);
  t.same(docAfterDoc('/** a */\nexport const a = 1;\n/** b */\nexport const b = 1;\n'), []);
});

t.test('no doc comment of src/ follows another', async (t) => {
  const files = sourceFiles(path.join(ROOT, 'src'));
  t.ok(files.length > 100, `read ${files.length} files`);
  const found = files.flatMap((f) =>
    docAfterDoc(fs.readFileSync(f, 'utf8')).map((l) => `${path.relative(ROOT, f)}:${l}`),
  );
  t.same(found, []);
});
