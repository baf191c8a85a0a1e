/**
 * `appreg test --init`: a starter suite for an app's manifest (docs/testing.md, "A starter
 * suite"): one test per slash command, shortcut, dynamic menu and subscribed event, each expecting
 * an answer in time, and the signature check (an app in HTTP mode). The app is started with a
 * command guessed from its folder (npm start, or node and its main file): check it; a variable its source reads to
 * know where to keep its tokens points into the run's own folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Manifest } from '../validation/manifest.js';
import { SUITE_SCHEMA_ID } from './suite.js';
import type { Step, SuiteFile } from './steps.js';
import { must } from '../must.js';
import { recordOr, stringOr } from '../unknown-values.js';

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
    const pkg = recordOr(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')));
    if (recordOr(pkg?.scripts)?.start) return 'npm start';
    const main = stringOr(pkg?.main);
    if (main && fs.existsSync(path.join(dir, main))) return `node ${main}`;
  } catch {
    /* no package.json */
  }
  const main = MAIN_FILES.find((f) => fs.existsSync(path.join(dir, f)));
  return main ? `node ${main}` : undefined;
}

/** A variable that names where an app keeps its tokens: STANDUP_TOKENS_FILE, TOKENS_PATH, TOKEN_STORE_FILE. */
const TOKENS_VARIABLE = /^[A-Z0-9_]*TOKENS?(_STORE)?_(FILE|PATH)$/;
/** Source files of the app read for them, at the most (its folder's, then those they import, not node_modules). */
const MAX_SOURCES = 50;
const SOURCE = /\.(m|c)?(j|t)s$/;

/**
 * The environment that keeps the app's tokens in the run's own folder: each variable its source reads
 * (`process.env.NAME`) whose name says it is where tokens are kept, given `${run.dir}/<name>.json`. Without it a run
 * writes the throwaway workspace's tokens where the app keeps its real ones. The source read: the files of its folder
 * and those they import by a relative path (an app may share code with another folder), not node_modules.
 */
export function tokensEnv(dir: string): Record<string, string> {
  const queue = listSources(dir);
  const read = new Set<string>();
  const names = new Set<string>();
  while (read.size < MAX_SOURCES) {
    const file = queue.shift();
    if (file === undefined) break;
    if (read.has(file)) continue;
    read.add(file);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(
      /process\.env(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\])/g,
    )) {
      const name = must(m[1] ?? m[2]);
      if (TOKENS_VARIABLE.test(name)) names.add(name);
    }
    for (const m of text.matchAll(/(?:from|import\s*\(?)\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = path.resolve(path.dirname(file), must(m[1]));
      if (SOURCE.test(target) && !target.split(path.sep).includes('node_modules')) queue.push(target);
    }
  }
  const env: Record<string, string> = {};
  for (const name of [...names].sort())
    env[name] = `\${run.dir}/${name
      .replace(/_(FILE|PATH)$/, '')
      .toLowerCase()
      .replace(/_/g, '-')}.json`;
  return env;
}

function listSources(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && SOURCE.test(e.name))
      .map((e) => path.join(dir, e.name))
      .sort();
  } catch {
    return [];
  }
}

/** How the suite starts the app: its command, and where it runs, its own variables, its readiness, when needed. */
export interface StarterStart {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
  ready?: { timeoutMs: number };
}

export function starterSuite(m: Manifest, manifestPath: string, start: StarterStart): SuiteFile & { $schema: string } {
  const tests: SuiteFile['tests'] = [];
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
    app: {
      manifest: manifestPath,
      start: {
        command: start.command,
        ...(start.cwd ? { cwd: start.cwd } : {}),
        ...(start.env && Object.keys(start.env).length ? { env: start.env } : {}),
        ...(start.ready ? { ready: start.ready } : {}),
      },
    },
    tests,
  };
}
