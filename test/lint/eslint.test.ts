/**
 * The lint rules of tools/lint/eslint.config.mjs hold over src/, bin/, bench/ and test/: no
 * floating promise, no promise where a callback's result is ignored, no non-null assertion (a
 * value known to be there is checked with must(), src/must.ts), no line over 120 characters.
 *
 * Typed linting builds the TypeScript program of the whole tree, about 40 s of one core; the
 * results are cached (node_modules/.cache/eslint, by file content) so a second run lints only
 * what changed. A clean checkout (CI) lints everything. A change of types in one file can change
 * the findings of another that the cache keeps: delete the cache to lint all again.
 *
 * Lines over 120 characters written before the rule are counted per file in
 * tools/lint/long-lines.json: no file may gain one, and a file that lost some must lower its count.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { fileLimit } from '../helpers/file-limit.js';

const MAX_LEN = '@stylistic/max-len';

interface Message {
  ruleId: string | null;
  line: number;
  message: string;
}
interface LintResult {
  filePath: string;
  messages: Message[];
}
interface ESLintLike {
  lintFiles(patterns: string[]): Promise<LintResult[]>;
}

fileLimit(t, 300_000);

t.test('every file of src/, bin/, bench/ and test/ passes the lint rules', async (t) => {
  const mod = (await import(pathToFileURL(path.join(ROOT, 'tools/lint/node_modules/eslint/lib/api.js')).href)) as {
    ESLint: new (o: Record<string, unknown>) => ESLintLike;
  };
  const eslint = new mod.ESLint({
    cwd: ROOT,
    overrideConfigFile: path.join(ROOT, 'tools/lint/eslint.config.mjs'),
    cache: true,
    cacheLocation: path.join(ROOT, 'node_modules/.cache/eslint/'),
    cacheStrategy: 'content',
  });
  const started = Date.now();
  const results = await eslint.lintFiles(['src', 'bin', 'bench', 'test']);
  t.comment(`linted ${results.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.ok(results.length > 350, `linted ${results.length} files`);
  t.ok(
    results.some((r) => r.filePath.endsWith(path.join('src', 'server', 'start.ts'))),
    'src/ was read',
  );
  t.ok(
    results.some((r) => r.filePath.endsWith(path.join('bin', 'appreg.js'))),
    'bin/ was read',
  );

  const allowed = JSON.parse(fs.readFileSync(path.join(ROOT, 'tools/lint/long-lines.json'), 'utf8')) as Record<
    string,
    number
  >;
  const findings: string[] = [];
  const longLines: Record<string, number> = {};
  for (const r of results) {
    const file = path.relative(ROOT, r.filePath);
    for (const m of r.messages) {
      if (m.ruleId === MAX_LEN) longLines[file] = (longLines[file] ?? 0) + 1;
      else findings.push(`${file}:${m.line} ${m.ruleId ?? 'error'}: ${m.message}`);
    }
  }
  t.same(findings, [], 'no finding');
  const grown = Object.entries(longLines)
    .filter(([f, n]) => n > (allowed[f] ?? 0))
    .map(([f, n]) => `${f}: ${n} lines over 120 characters (${allowed[f] ?? 0} allowed)`);
  t.same(grown, [], 'no file has more lines over 120 characters than tools/lint/long-lines.json allows');
  const shrunk = Object.entries(allowed)
    .filter(([f, n]) => (longLines[f] ?? 0) < n)
    .map(([f, n]) => `${f}: ${longLines[f] ?? 0} (was ${n})`);
  t.same(shrunk, [], 'tools/lint/long-lines.json is lowered where lines were shortened');
});
