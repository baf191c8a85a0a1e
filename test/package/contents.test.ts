/**
 * What `npm pack` puts in the package (docs/install.md): what a user needs — the compiled daemon and CLI, bin,
 * schemas, the console's static files, the examples, docs — and nothing of the development (tests, benches, lint
 * tools, TypeScript sources, source maps), no install script (npm refuses dependencies' install scripts unless a
 * user allows them), and a runtime dependency for every package the compiled code imports.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { packWorkingTree } from '../helpers/packed.js';
import { sourceFiles } from '../helpers/sources.js';
import { must } from '../../src/must.js';

const packed = await packWorkingTree();
t.comment(
  `package: ${packed.files.length} files, ${(packed.size / 1024).toFixed(0)} kB packed, ` +
    `${(packed.unpackedSize / 1024).toFixed(0)} kB unpacked`,
);

t.test('it holds the compiled code and what the CLI reads at run time', async (t) => {
  for (const needed of [
    'bin/appreg.js',
    'dist/src/cli/main.js',
    'dist/src/server/start.js',
    'dist/src/apptest/runner.js',
    'schemas/app-manifest.schema.json',
    'schemas/test-suite.schema.json',
    // the daemon's configuration: its schema and the validator generated from it, read by `serve`
    'schemas/config.schema.json',
    'schemas/config.validate.cjs',
    // the HTTP API: its OpenAPI description, and the validators of its inputs the daemon loads
    'schemas/openapi.json',
    'schemas/http/validators.cjs',
    'public/console/console.js',
    'examples/standup-app/manifest.json',
    'examples/standup-app/app.mjs',
    'examples/standup-app/standup.apptest.yaml',
    'docs/install.md',
    'docs/operations.md',
    'README.md',
    'CHANGELOG.md',
    'package.json',
    // the event bodies' schemas, for apps that check what they receive
    ...fs.readdirSync(path.join(ROOT, 'schemas/events')).map((f) => `schemas/events/${f}`),
  ])
    t.ok(packed.files.includes(needed), `holds ${needed}`);
  // every module of src/ compiled, none left out
  const sources = sourceFiles(path.join(ROOT, 'src')).map((f) => path.relative(ROOT, f));
  const compiled = sources.map((s) => `dist/${s.replace(/\.ts$/, '.js')}`);
  t.same(
    compiled.filter((f) => !packed.files.includes(f)),
    [],
    `each of src's ${sources.length} modules is in the package, compiled`,
  );
});

t.test('nothing of the development, no secrets of an example, no install script', async (t) => {
  const development = packed.files.filter((f) =>
    /^(test|bench|tools|src|\.ci|data)\/|^dist\/(test|bench)\/|\.map$|\.ts$|^tsconfig|^knip|^\.dependency-cruiser/.test(
      f,
    ),
  );
  t.same(development, [], 'no tests, benches, lint tools, TypeScript sources or source maps');
  t.ok(packed.files.length > 200, `and it read the package's list (${packed.files.length} files)`);
  t.notOk(
    packed.files.some((f) => /(^|\/)(\.env|tokens\.json)$/.test(f)),
    "no example's .env or tokens.json, even where a developer has them",
  );
  const scripts = packed.manifest.scripts ?? {};
  const install = ['preinstall', 'install', 'postinstall', 'prepare'].filter((s) => s in scripts);
  t.same(install, [], 'no script that npm would run when a project installs it');
});

t.test('every package the compiled code imports is a runtime dependency', async (t) => {
  const deps = Object.keys((packed.manifest.dependencies as Record<string, string> | undefined) ?? {});
  const imported = new Set<string>();
  for (const f of packed.files.filter((p) => p.startsWith('dist/src/') && p.endsWith('.js'))) {
    const text = fs.readFileSync(path.join(ROOT, 'src', f.slice('dist/src/'.length).replace(/\.js$/, '.ts')), 'utf8');
    const specs = [
      ...text.matchAll(/^import(?!\s+type\b)[^'"]*['"]([^'".][^'"]*)['"]/gm),
      ...text.matchAll(/\bimport\(\s*['"]([^'".][^'"]*)['"]\s*\)/g),
    ];
    for (const m of specs) {
      const spec = must(m[1]);
      if (spec.startsWith('node:')) continue;
      imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : must(spec.split('/')[0]));
    }
  }
  t.ok(imported.size >= 5, `read the imports: ${[...imported].sort().join(', ')}`);
  t.same(
    [...imported].filter((p) => !deps.includes(p)),
    [],
    'each is in dependencies',
  );
  t.same(
    deps.filter((d) => !imported.has(d)),
    [],
    'and each dependency is imported (no development package among them)',
  );
});
