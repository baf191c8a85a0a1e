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
  {
    files: ['bin/**/*.js'],
    plugins: { '@stylistic': stylistic },
    rules: { '@stylistic/max-len': maxLen },
  },
];
