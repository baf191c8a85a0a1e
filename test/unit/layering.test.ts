/**
 * The layering rules of docs/architecture.md, read from the import lines:
 * the CLI talks to the daemon over HTTP only (only `serve`, and `db`, which works on the store
 * itself (migrate, import a data directory), may load the server or the store),
 * services never import express or ws, only the store touches stored data,
 * delivery never imports the server, routes reach neither the store, the keys nor ws, appreg
 * test's runner (apptest/) is a client like the CLI, and only
 * store/postgres/ talks to the database driver.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';

const files = sourceFiles;

function imports(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  const re = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
  const out: string[] = [];
  for (let m; (m = re.exec(src)); ) out.push((m[1] ?? m[2])!);
  return out;
}

const SRC = path.join(ROOT, 'src');
const rel = (f: string) => path.relative(SRC, f);
const resolved = (from: string, spec: string) => (spec.startsWith('.') ? rel(path.resolve(path.dirname(from), spec)) : spec);

t.test('every source file is checked', async (t) => {
  t.ok(files(SRC).length > 20);
});

for (const f of files(SRC)) {
  const r = rel(f);
  const deps = imports(f).map((s) => resolved(f, s));
  t.test(`${r} respects the layering`, async (t) => {
    if (r.startsWith('services/')) {
      for (const d of deps) t.notOk(/^(express|ws|multer|node:fs|fs|lowdb)(\/|$)/.test(d) || d.startsWith('server/'), `services must not import ${d}`);
    }
    if (r.startsWith('server/routes/')) {
      // routes speak HTTP and call services: no stored data, no keys or secrets handling, no websockets
      for (const d of deps) t.notOk(d.startsWith('store/') || d === 'crypto.js' || d === 'ws' || d.startsWith('delivery/'), `routes must not import ${d}`);
    }
    if (r.startsWith('delivery/')) {
      for (const d of deps) t.notOk(d.startsWith('server/') || d === 'express', `delivery must not import ${d}`);
    }
    if (r.startsWith('cli/') && r !== 'cli/commands/serve.ts' && r !== 'cli/commands/db.ts') {
      for (const d of deps) t.notOk(d.startsWith('server/') || d.startsWith('store/') || d === 'lowdb' || d.startsWith('lowdb/'), `the CLI must not import ${d}`);
    }
    if (r.startsWith('apptest/')) {
      // appreg test's runner is a client of the daemon like the CLI: HTTP only, and no part of the daemon
      for (const d of deps) t.notOk(/^(server|store|services|delivery|files)\//.test(d) || d === 'express' || d === 'ws', `the test runner must not import ${d}`);
    }
    if (!r.startsWith('store/')) {
      for (const d of deps) t.notOk(d === 'lowdb' || d.startsWith('lowdb/'), `only the store may import ${d}`);
    }
    if (!r.startsWith('store/postgres/')) {
      // one door to the database: the PostgreSQL store, loaded by start.ts only when a database URL is set
      for (const d of deps) t.notOk(d === 'pg' || d.startsWith('pg/') || d.startsWith('pg-'), `only store/postgres may import ${d}`);
    }
  });
}
