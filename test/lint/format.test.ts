/**
 * Every source file is as the formatter writes it (prettier, .prettierrc.json: 120 columns,
 * single quotes, trailing commas). `npm run format` rewrites them; this test lists the files
 * that differ, and asserts it checked more than 350 so it cannot pass by reading nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import * as prettier from 'prettier';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';

/** What `npm run format` formats: the TypeScript of src/, bench/, test/ and the launcher in bin/. */
const files = () => [
  ...['src', 'bench', 'test'].flatMap((d) => sourceFiles(path.join(ROOT, d))),
  path.join(ROOT, 'bin/appreg.js'),
];

t.test('every source file is formatted', async (t) => {
  const started = Date.now();
  const all = files();
  t.ok(all.length > 350, `checked ${all.length} files`);
  const unformatted: string[] = [];
  const unconfigured: string[] = [];
  for (const file of all) {
    const options = await prettier.resolveConfig(file);
    if (options?.printWidth !== 120) unconfigured.push(path.relative(ROOT, file));
    if (!(await prettier.check(fs.readFileSync(file, 'utf8'), { ...options, filepath: file })))
      unformatted.push(path.relative(ROOT, file));
  }
  t.comment(`checked ${all.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.same(unconfigured, [], '.prettierrc.json applies to every file');
  t.same(unformatted, [], 'run npm run format');
});
