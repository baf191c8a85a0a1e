/**
 * The lint rule services-change-data-through-transactions (tools/lint/eslint.config.mjs): in
 * src/services (and the server's person state and key check) data changes through
 * store.transaction only. Shown catching each thing it forbids on a small text, and letting a
 * transaction through. Its entry of the config is used alone, untyped (no program to build).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { must } from '../../src/must.js';

interface Message {
  ruleId: string | null;
  message: string;
}
interface ESLintLike {
  lintText(code: string, o: { filePath: string }): Promise<{ messages: Message[] }[]>;
}
type ConfigEntry = { files?: string[]; rules?: Record<string, unknown> };

const lintDir = path.join(ROOT, 'tools/lint');
const { ESLint } = (await import(pathToFileURL(path.join(lintDir, 'node_modules/eslint/lib/api.js')).href)) as {
  ESLint: new (o: Record<string, unknown>) => ESLintLike;
};
const { default: tseslint } = (await import(
  pathToFileURL(path.join(lintDir, 'node_modules/typescript-eslint/dist/index.js')).href
)) as { default: { parser: unknown } };
const { default: config } = (await import(pathToFileURL(path.join(lintDir, 'eslint.config.mjs')).href)) as {
  default: ConfigEntry[];
};
const entry = must(config.find((c) => c.files?.includes('src/services/**/*.ts') && c.rules?.['no-restricted-syntax']));

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, entry],
});

/** The findings of the rule on `code` as the file `file`. */
async function findings(code: string, file = 'src/services/example.ts'): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return must(r).messages.map((m) => `${m.ruleId}: ${m.message.split(':')[0]}`);
}

const RULE = 'no-restricted-syntax: services-change-data-through-transactions';

t.test('a hand-made commit, StoreConflict and a retry of its own are each caught in a service', async (t) => {
  t.same(await findings("await store.commit([{ table: 'apps', id: 'a', value: null }]);\n"), [RULE]);
  t.same(
    await findings(
      "import { StoreConflict } from '../store/types.js';\nexport const c = (e: unknown) => e instanceof StoreConflict;\n",
    ),
    [RULE, RULE, RULE],
    'its import (the name imported and bound) and its use',
  );
  t.same(await findings('export const r = retryOnConflict(step);\n'), [RULE]);
  t.same(await findings('await ctx.store.commit([], []);\n', 'src/server/person-state.ts'), [RULE], 'the person state');
});

t.test('a transaction passes, and the rule is only for services', async (t) => {
  t.same(
    await findings("await store.transaction(async (tx) => { tx.put('apps', 'a', app); });\n"),
    [],
    'a transaction',
  );
  t.same(await findings('await store.commit([]);\n', 'src/delivery/example.ts'), [], 'delivery may commit');
});
