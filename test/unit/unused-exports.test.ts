/**
 * No unused exports, exported types, files or dependencies: knip (configured in
 * knip.jsonc) reads the TypeScript sources from the project's entries (the CLI,
 * the test files, the benchmarks) and lists whatever nothing uses. A finding is
 * fixed by deleting the export (or the code); a file or dependency that is used
 * in a way knip cannot see belongs in knip.jsonc, with the reason.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/unit/ → the project root is three levels up
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const KNIP = path.join(ROOT, 'node_modules/knip/bin/knip.js');

interface KnipRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function knip(dir: string): Promise<KnipRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KNIP, '--reporter', 'json', '--no-progress'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** knip's JSON report as one line per finding: "src/x.ts:12:14 exports name". */
function findings(run: KnipRun): string[] {
  let report: { issues?: unknown };
  try {
    report = JSON.parse(run.stdout) as { issues?: unknown };
  } catch {
    throw new Error(`knip did not report (exit ${run.code}): ${run.stderr || run.stdout}`);
  }
  if (!Array.isArray(report.issues)) throw new Error(`knip's report has no issues list: ${run.stdout.slice(0, 500)}`);
  const out: string[] = [];
  for (const entry of report.issues as Record<string, unknown>[]) {
    for (const [kind, items] of Object.entries(entry)) {
      if (!Array.isArray(items)) continue;
      for (const item of items as unknown[]) {
        // duplicates are lists of the names exported twice
        const named = (Array.isArray(item) ? item : [item]) as { name?: string; line?: number; col?: number }[];
        const first = named[0];
        const where = first?.line ? `${entry.file}:${first.line}:${first.col}` : String(entry.file);
        out.push(`${where} ${kind} ${named.map((n) => n.name).join(' = ')}`);
      }
    }
  }
  return out.sort();
}

// A small project with one used and one unused export, to show that the check finds
// what it should (a knip that silently analysed nothing would pass the real check).
const fixture = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-knip-'));
t.teardown(() => fs.rmSync(fixture, { recursive: true, force: true }));
fs.writeFileSync(
  path.join(fixture, 'package.json'),
  JSON.stringify({ name: 'knip-fixture', type: 'module', private: true }),
);
fs.writeFileSync(
  path.join(fixture, 'tsconfig.json'),
  JSON.stringify({ compilerOptions: { module: 'NodeNext', strict: true } }),
);
fs.writeFileSync(path.join(fixture, 'knip.json'), JSON.stringify({ entry: ['main.ts'], project: ['**/*.ts'] }));
fs.writeFileSync(path.join(fixture, 'main.ts'), "import { used } from './lib.js';\nconsole.log(used());\n");
fs.writeFileSync(
  path.join(fixture, 'lib.ts'),
  'export const used = () => 1;\nexport const forgotten = () => 2;\nexport type Forgotten = number;\n',
);
fs.writeFileSync(path.join(fixture, 'orphan.ts'), 'export const alone = 3;\n');

// both at once: each is a second or two of mostly parsing
const project = knip(ROOT);
const small = knip(fixture);

t.test('the check finds an unused export, an unused exported type and an unused file', async (t) => {
  t.same(findings(await small), [
    'lib.ts:2:14 exports forgotten',
    'lib.ts:3:13 types Forgotten',
    'orphan.ts files orphan.ts',
  ]);
});

t.test('nothing in src, test or bench is exported or kept without being used (knip.jsonc)', async (t) => {
  const run = await project;
  const found = findings(run);
  t.comment(`knip took ${run.ms} ms`);
  t.same(found, [], 'unused: delete the export or the code, or say in knip.jsonc why it is used');
});
