/**
 * The layering rules of docs/architecture.md, kept by dependency-cruiser (.dependency-cruiser.mjs):
 * the sources break none of them, the check read the whole tree (it fails when it read nothing),
 * and each rule is shown to catch what it forbids on a small tree made for it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { cruise, type IConfiguration, type ICruiseResult } from 'dependency-cruiser';
import { ROOT } from '../helpers/cli.js';
import { must } from '../../src/must.js';

const { default: config } = (await import(pathToFileURL(path.join(ROOT, '.dependency-cruiser.mjs')).href)) as {
  default: IConfiguration;
};
const ruleNames = (config.forbidden ?? []).map((r) => must(r.name));

/** Cruise `src` under `baseDir` with the project's rules. */
async function check(baseDir: string): Promise<ICruiseResult> {
  const r = await cruise(['src'], { validate: true, ruleSet: config, ...config.options, baseDir });
  return r.output as ICruiseResult;
}

const describe = (v: ICruiseResult['summary']['violations'][number]) =>
  `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' → ')})` : ''}`;

t.test('the sources keep every layering rule, and the check read all of them', async (t) => {
  const out = await check(ROOT);
  const own = out.modules.filter((m) => m.source.startsWith('src/'));
  const local = own.flatMap((m) => m.dependencies.filter((d) => d.resolved.startsWith('src/')));
  // the tree has about 180 modules and 800 imports between them: a check that read a fraction of it proves nothing
  t.ok(own.length >= 150, `${own.length} modules of src/ read`);
  t.ok(local.length >= 700, `${local.length} imports between them read`);
  t.ok(
    own.some((m) => m.source === 'src/server/compose.ts' && m.dependencies.length > 20),
    'the composition root and its imports read',
  );
  t.ok(ruleNames.length >= 10, `${ruleNames.length} rules`);
  t.same(out.summary.violations.map(describe), []);
});

/** A tree made to break one rule: its files (path → text; an import target needs a file too). */
interface Breach {
  rule: string;
  files: Record<string, string>;
}

const EMPTY = 'export const x = 1;\n';
const BREACHES: Breach[] = [
  {
    rule: 'no-cycles',
    files: {
      'src/services/a.ts': "import type { B } from './b.js';\nexport type A = B[];\n",
      'src/services/b.ts': "import type { A } from './a.js';\nexport type B = { a?: A };\n",
    },
  },
  {
    rule: 'cli-talks-http',
    files: {
      'src/cli/commands/apps.ts': "import { x } from '../../services/apps.js';\nexport const y = x;\n",
      'src/services/apps.ts': EMPTY,
    },
  },
  {
    rule: 'clients-import-no-daemon-code',
    files: {
      'src/apptest/runner.ts': "import { x } from '../server/start.js';\nexport const y = x;\n",
      'src/client/workspace.ts': "import type { x } from '../model/workspace.js';\nexport type Y = typeof x;\n",
      'src/server/start.ts': EMPTY,
      'src/model/workspace.ts': EMPTY,
    },
  },
  {
    rule: 'client-below-cli-and-apptest',
    files: {
      'src/client/daemon-client.ts': "import { x } from '../cli/output.js';\nexport const y = x;\n",
      'src/cli/output.ts': EMPTY,
    },
  },
  {
    rule: 'apptest-below-cli',
    files: {
      'src/apptest/api.ts': "import type { x } from '../cli/run.js';\nexport type Y = typeof x;\n",
      'src/cli/run.ts': EMPTY,
    },
  },
  {
    rule: 'cli-loads-daemon-code-lazily',
    files: {
      'src/cli/commands/serve.ts': "import { x } from '../../server/start.js';\nexport const y = x;\n",
      'src/server/start.ts': EMPTY,
    },
  },
  {
    rule: 'cli-serve-loads-start-only',
    files: {
      'src/cli/commands/serve.ts': "export const y = () => import('../../server/app.js');\n",
      'src/server/app.ts': EMPTY,
    },
  },
  {
    rule: 'cli-db-loads-storage-only',
    files: {
      'src/cli/commands/db.ts': "export const y = () => import('../../services/apps.js');\n",
      'src/services/apps.ts': EMPTY,
    },
  },
  {
    rule: 'services-no-transport',
    files: { 'src/services/a.ts': "import { WebSocket } from 'ws';\nexport const y = WebSocket;\n" },
  },
  {
    rule: 'services-change-data-through-transactions',
    files: {
      'src/services/apps.ts':
        "import { runTransaction } from '../store/transaction.js';\nexport const y = runTransaction;\n",
      'src/store/transaction.ts': EMPTY,
    },
  },
  {
    rule: 'services-change-data-through-transactions',
    files: {
      'src/services/apps.ts': "import { retryOnConflict } from './conflict.js';\nexport const y = retryOnConflict;\n",
      'src/services/conflict.ts': EMPTY,
    },
  },
  {
    rule: 'delivery-no-services-or-server',
    files: {
      'src/delivery/worker.ts': "import type { x } from '../services/apps.js';\nexport type Y = typeof x;\n",
      'src/services/apps.ts': EMPTY,
    },
  },
  {
    rule: 'routes-through-services',
    files: {
      'src/server/routes/apps.ts': "import { x } from '../../store/types.js';\nexport const y = x;\n",
      'src/store/types.ts': EMPTY,
    },
  },
  { rule: 'pg-only-in-store-postgres', files: { 'src/server/a.ts': "export const y = () => import('pg');\n" } },
  {
    rule: 'store-postgres-loaded-lazily',
    files: {
      'src/server/start.ts': "import { x } from '../store/postgres/index.js';\nexport const y = x;\n",
      'src/store/postgres/index.ts': EMPTY,
    },
  },
  {
    rule: 'store-below-everything',
    files: {
      'src/store/types.ts': "import type { x } from '../services/apps.js';\nexport type Y = typeof x;\n",
      'src/services/apps.ts': EMPTY,
    },
  },
  {
    rule: 'model-is-a-leaf',
    files: {
      'src/model/identity.ts': "import type { x } from '../store/types.js';\nexport type Y = typeof x;\n",
      'src/store/types.ts': EMPTY,
    },
  },
  {
    rule: 'files-below-services',
    files: {
      'src/files/blob-store.ts': "import { x } from '../services/apps.js';\nexport const y = x;\n",
      'src/services/apps.ts': EMPTY,
    },
  },
  {
    rule: 'leaf-modules-are-leaves',
    files: {
      'src/config.ts': "import { x } from './server/start.js';\nexport const y = x;\n",
      'src/server/start.ts': EMPTY,
    },
  },
  { rule: 'lowdb-only-in-bench', files: { 'src/store/a.ts': "import { Low } from 'lowdb';\nexport const y = Low;\n" } },
];

t.test('every rule is shown to catch a breach', async (t) => {
  t.same([...new Set(BREACHES.map((b) => b.rule))].sort(), [...ruleNames].sort());
});

/** Cruise a tree of `files` (path → text) made in a temporary directory, checking it read every one. */
async function checkTree(t: Tap.Test, files: Record<string, string>): Promise<ICruiseResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-layering-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), text);
  }
  const out = await check(dir);
  t.equal(
    out.modules.filter((m) => m.source.startsWith('src/')).length,
    Object.keys(files).length,
    'every file of the tree read',
  );
  return out;
}

for (const b of BREACHES) {
  t.test(`${b.rule} catches its breach, and nothing else does`, async (t) => {
    const out = await checkTree(t, b.files);
    t.same(
      [...new Set(out.summary.violations.map((v) => v.rule.name))],
      [b.rule],
      out.summary.violations.map(describe).join('\n'),
    );
  });
}

t.test(
  'what the rules allow is not caught: services use delivery, serve loads start.ts when it runs, the CLI reads the manifest schema, the CLI and appreg test use the client layer, a CLI command runs appreg test',
  async (t) => {
    const out = await checkTree(t, {
      'src/services/deliveries.ts': "import { x } from '../delivery/dispatcher.js';\nexport const y = x;\n",
      'src/delivery/dispatcher.ts':
        "import type { AppRecord } from '../model/identity.js';\nexport const x = 1;\nexport type Z = AppRecord;\n",
      'src/model/identity.ts': 'export interface AppRecord { id: string }\n',
      'src/cli/commands/serve.ts': "export const start = () => import('../../server/start.js');\n",
      'src/server/start.ts': "import { y } from '../services/deliveries.js';\nexport const x = y;\n",
      'src/cli/commands/apps.ts': "export const validate = () => import('../../validation/manifest.js');\n",
      'src/validation/manifest.ts': EMPTY,
      'src/cli/commands/test-run.ts':
        "import { x } from '../../client/daemon-client.js';\nexport const run = () => import('../../apptest/runner.js');\nexport const z = x;\n",
      'src/apptest/runner.ts': "import { x } from '../client/daemon-client.js';\nexport const y = x;\n",
      'src/client/daemon-client.ts': "import { x } from '../clock.js';\nexport const y = x;\n",
      'src/clock.ts': EMPTY,
    });
    t.same(out.summary.violations.map(describe), []);
  },
);
