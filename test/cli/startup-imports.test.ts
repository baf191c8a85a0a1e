/**
 * A command loads only what it uses: the modules the CLI imports statically (everything loaded for
 * `--help` and before any action runs) include no server, no store and no heavy package.
 * Commands that need more (serve, apps validate) import it inside their action. The client layer (src/client/) loads
 * with the CLI: it is the CLI's way to the daemon. Leaves of src/ that import only Node
 * may load: the clock (the waiting line's timer), must.ts (the check of a value known to be there), the configuration's
 * names, the default data directory's rule (where the CLI finds the daemon), the version (--version) and where a JSON
 * text goes wrong (an option's file that is not JSON).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { must } from '../../src/must.js';

/** Static `import … from '…'` and `export … from '…'` specifiers of a compiled module (not `import()`). */
function staticImports(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  return [
    ...src.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm),
    ...src.matchAll(/^\s*import\s+'([^']+)'/gm),
  ].map((m) => must(m[1]));
}

t.test('the CLI at start loads commander and its own modules, nothing else', async (t) => {
  const entry = path.join(ROOT, 'dist/src/cli/main.js');
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = must(queue.pop());
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec.startsWith('.')) queue.push(path.resolve(path.dirname(file), spec));
      else if (!spec.startsWith('node:')) packages.add(spec);
    }
  }
  t.same([...packages].sort(), ['commander'], 'packages loaded at start');
  // besides the CLI's own: leaf modules that import nothing of appreg's but each other
  const leaves = [
    'config.js',
    'config-schema.js',
    'clock.js',
    'must.js',
    'default-data-dir.js',
    'version.js',
    'json-syntax.js',
    'file-errors.js',
    'unknown-values.js',
  ];
  const outside = [...seen]
    .map((f) => path.relative(path.join(ROOT, 'dist/src'), f))
    .filter((f) => !f.startsWith('cli/') && !f.startsWith('client/') && !leaves.includes(f));
  t.same(outside, [], 'no module of the server, store or services is loaded at start');
  t.ok(seen.size >= 8, `followed ${seen.size} modules`);
  const loaded = [...seen].map((f) => path.relative(path.join(ROOT, 'dist/src'), f));
  t.ok(loaded.includes('client/daemon-client.js'), 'the client layer is read (the check follows it)');
  for (const lazy of ['client/workspace.js', 'cli/commands/say-run.js', 'cli/commands/test-run.js'])
    t.notOk(loaded.includes(lazy), `${lazy} is loaded when a command runs, not at start`);
});
