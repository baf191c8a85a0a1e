/**
 * Every source file is as the formatter writes it (prettier, .prettierrc.json: 120 columns,
 * single quotes, trailing commas). `npm run format` rewrites them; this test lists the files
 * that differ, and asserts it checked more than 350 so it cannot pass by reading nothing.
 *
 * Formatting a file is a function of its text, its options and prettier's version alone, so a
 * text found formatted once is remembered by the hash of those three
 * (node_modules/.cache/prettier-check.json): the next run reads and hashes every file but formats
 * only those whose text changed (prettier takes about 11 s of one core for the whole tree). A clean
 * checkout (CI) formats everything.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
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

interface Checked {
  /** Files prettier would change, relative to `root`. */
  unformatted: string[];
  /** Files .prettierrc.json does not reach, relative to `root`. */
  unconfigured: string[];
  /** How many of the files prettier formatted (the others were known formatted). */
  formatted: number;
}

/** Check `all` with prettier, skipping texts `cacheFile` knows formatted; it then holds the formatted ones of `all`. */
async function checkFormat(all: string[], root: string, cacheFile: string): Promise<Checked> {
  let known = new Set<string>();
  try {
    known = new Set(JSON.parse(fs.readFileSync(cacheFile, 'utf8')) as string[]);
  } catch {
    /* a first run */
  }
  const out: Checked = { unformatted: [], unconfigured: [], formatted: 0 };
  const formattedNow: string[] = [];
  for (const file of all) {
    const options = await prettier.resolveConfig(file);
    if (options?.printWidth !== 120) out.unconfigured.push(path.relative(root, file));
    const text = fs.readFileSync(file, 'utf8');
    const key = crypto
      .createHash('sha256')
      .update(JSON.stringify([prettier.version, options, path.extname(file), text]))
      .digest('base64url');
    if (!known.has(key)) {
      out.formatted++;
      if (!(await prettier.check(text, { ...options, filepath: file }))) {
        out.unformatted.push(path.relative(root, file));
        continue;
      }
    }
    formattedNow.push(key);
  }
  fs.mkdirSync(path.dirname(cacheFile), { recursive: true });
  fs.writeFileSync(cacheFile, JSON.stringify(formattedNow));
  return out;
}

t.test('every source file is formatted', async (t) => {
  const started = Date.now();
  const all = files();
  t.ok(all.length > 350, `checked ${all.length} files`);
  const r = await checkFormat(all, ROOT, path.join(ROOT, 'node_modules/.cache/prettier-check.json'));
  t.comment(
    `checked ${all.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s (${r.formatted} formatted)`,
  );
  t.same(r.unconfigured, [], '.prettierrc.json applies to every file');
  t.same(r.unformatted, [], 'run npm run format');
});

t.test('a text known formatted is checked again once it changes', async (t) => {
  // a file outside the tree (the linter must not see it), under a copy of .prettierrc.json, with a cache of its own
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-format-check-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.copyFileSync(path.join(ROOT, '.prettierrc.json'), path.join(dir, '.prettierrc.json'));
  const file = path.join(dir, 'planted.ts');
  const cache = path.join(dir, 'cache', 'cache.json');
  fs.writeFileSync(file, "export const a = 'x';\n");
  t.same(await checkFormat([file], dir, cache), { unformatted: [], unconfigured: [], formatted: 1 }, 'formatted');
  t.same(await checkFormat([file], dir, cache), { unformatted: [], unconfigured: [], formatted: 0 }, 'then known');
  fs.writeFileSync(file, 'export const a = "x"\n');
  t.same(
    await checkFormat([file], dir, cache),
    { unformatted: ['planted.ts'], unconfigured: [], formatted: 1 },
    'its changed text is formatted again, and found wrong',
  );
  t.same(
    await checkFormat([file], dir, cache),
    { unformatted: ['planted.ts'], unconfigured: [], formatted: 1 },
    'and stays wrong: a text found unformatted is never remembered',
  );
});
