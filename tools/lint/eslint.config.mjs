// appreg's lint rules, run by npm test (test/lint/eslint.test.ts) over src/, bin/, bench/ and test/;
// by hand, from the repository's root:
//   npx eslint -c tools/lint/eslint.config.mjs src bin bench test
// Typed rules: the TypeScript project of tsconfig.json, through typescript-eslint's project
// service (one program for the whole tree), with TypeScript 6.0 of this workspace (see its
// package.json for why not the build's TypeScript 7).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** No line over 120 characters, comments included; a string, a template or a URL that cannot be broken is let through. */
const maxLen = [
  'error',
  { code: 120, tabWidth: 2, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
];

export default [
  { ignores: ['dist/**', 'node_modules/**', 'tools/**', 'examples/**', 'public/**', '.tap/**', 'bench/.tmp/**'] },
  {
    files: ['src/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    plugins: { '@typescript-eslint': tseslint.plugin, '@stylistic': stylistic },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // tap itself awaits every subtest it starts (t.test() returns a PromiseWithSubtest that a test file never awaits)
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafePromises: [{ from: 'package', package: '@tapjs/core', name: 'PromiseWithSubtest' }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@stylistic/max-len': maxLen,
    },
  },
  // services-change-data-through-transactions (with the dependency rule of that name, .dependency-cruiser.mjs):
  // a service changes data through Store.transaction only, so it neither commits by hand nor handles a conflict
  {
    files: ['src/services/**/*.ts', 'src/server/person-state.ts', 'src/server/key-check.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.property.name='commit']",
          message:
            'services-change-data-through-transactions: change data with store.transaction (reads are its expectations, a conflict runs it again), not commit.',
        },
        {
          selector: 'Identifier[name=/^(StoreConflict|retryOnConflict|isConflict)$/]',
          message:
            'services-change-data-through-transactions: a transaction runs again on a conflict by itself; decide from what it reads, not from a StoreConflict.',
        },
      ],
    },
  },
  {
    files: ['bin/**/*.js'],
    plugins: { '@stylistic': stylistic },
    rules: { '@stylistic/max-len': maxLen },
  },
];
