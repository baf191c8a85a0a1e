/**
 * `appreg test --init`: a starter suite for an app's manifest (docs/testing.md, "A starter
 * suite"): one test per slash command, shortcut, dynamic menu and subscribed event, each expecting
 * an answer in time, and the signature check (an app in HTTP mode). The app is started with a
 * command guessed from its folder (npm start, or node and its main file): check it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Manifest } from '../validation/manifest.js';
import { SUITE_SCHEMA_ID } from './suite.js';

const MAIN_FILES = [
  'app.mjs',
  'app.js',
  'index.mjs',
  'index.js',
  'main.mjs',
  'main.js',
  'server.mjs',
  'server.js',
  'src/index.js',
  'dist/index.js',
  'dist/main.js',
];

/** How the app in `dir` is started, as well as its files tell: undefined when they do not. */
export function guessStart(dir: string): string | undefined {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
      main?: string;
    };
    if (pkg.scripts?.start) return 'npm start';
    if (pkg.main && fs.existsSync(path.join(dir, pkg.main))) return `node ${pkg.main}`;
  } catch {
    /* no package.json */
  }
  const main = MAIN_FILES.find((f) => fs.existsSync(path.join(dir, f)));
  return main ? `node ${main}` : undefined;
}

type Step = Record<string, unknown>;

export function starterSuite(m: Manifest, manifestPath: string, start: string): Record<string, unknown> {
  const tests: Array<{ name: string; steps: Step[] }> = [];
  const answered: Step = { expect: 'answered' };
  for (const c of m.slashCommands ?? [])
    tests.push({ name: `${c.command} answers in time`, steps: [{ say: c.command }, answered] });
  for (const s of m.shortcuts ?? []) {
    if (s.shortcutType === 'GLOBAL')
      tests.push({ name: `the shortcut ${s.displayName} answers in time`, steps: [{ shortcut: s.name }, answered] });
    else
      tests.push({
        name: `the message shortcut ${s.displayName} answers in time`,
        steps: [
          { say: `a message to use ${s.displayName} on`, save: 'message' },
          { shortcut: s.name, message: '${message}' },
          answered,
        ],
      });
  }
  for (const d of m.dynamicMenus ?? [])
    tests.push({ name: `the menu ${d.onAction} answers in time`, steps: [{ menu: d.onAction }, answered] });
  for (const e of m.eventSubscriptions?.events ?? [])
    tests.push({ name: `${e} is accepted`, steps: [{ event: e }, answered] });
  if (!m.socketMode)
    tests.push({ name: 'calls that are not properly signed are refused', steps: [{ expect: 'signature-check' }] });
  return {
    $schema: SUITE_SCHEMA_ID,
    name: m.displayName,
    app: { manifest: manifestPath, start: { command: start } },
    tests,
  };
}
