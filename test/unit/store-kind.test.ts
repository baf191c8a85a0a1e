/**
 * Embedded or PostgreSQL is decided in one place (docs/architecture.md, "The composition root"):
 * outside src/store, only src/server/compose.ts looks at which store runs. Every other part is
 * handed what follows from it (the delivery log's backend, where file bytes live, the socket
 * relay, lease takeover at start, the trim cadence). Read from the sources.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';

const files = sourceFiles;

const SRC = path.join(ROOT, 'src');
/** A look at the store's kind: `store.kind`, `x.kind === 'postgres'`, `'embedded' !== y.kind`, `Store['kind']`. */
const KIND =
  /\bstore\??\.kind\b|\.kind\s*[!=]==?\s*['"](?:embedded|postgres)['"]|['"](?:embedded|postgres)['"]\s*[!=]==?\s*[\w.?]*\.kind\b|Store\[['"]kind['"]\]/;

const where = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, i) => (KIND.test(line) ? [`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : []));

t.test(
  'only the composition root (and the store itself) knows whether the store is embedded or PostgreSQL',
  async (t) => {
    const all = files(SRC);
    t.ok(all.length > 100, `read the sources (${all.length} files)`);
    const found = all.flatMap(where);
    const allowed = (hit: string) => hit.startsWith('src/store/') || hit.startsWith('src/server/compose.ts:');
    t.ok(
      found.some((h) => h.startsWith('src/server/compose.ts:')),
      'the search finds the composition root’s own decision (it sees what it looks for)',
    );
    t.same(
      found.filter((h) => !allowed(h)),
      [],
      'nowhere else',
    );
  },
);

t.test('the search recognises each spelling of a look at the store kind', async (t) => {
  for (const line of [
    "if (store.kind === 'postgres')",
    'deps.store?.kind',
    "x.kind !== 'embedded'",
    "'postgres' === opts.store.kind",
    "type K = Store['kind']",
  ])
    t.ok(KIND.test(line), line);
  for (const line of ["rec.kind === 'event'", "tok.kind === 'bot'", "kind: 'postgres-ish'"])
    t.notOk(KIND.test(line), line);
});
