/**
 * compose.ts builds every part (docs/architecture.md, "The composition root"): each part it builds
 * is built nowhere else in src/ (start.ts and app.ts once built the token endpoint, the websocket
 * server, the express app and the app get), and each with one call shape, `createX(deps)`: one
 * deps object, so that no dependency is passed twice. Read from the sources.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { sourceFiles } from '../helpers/sources.js';

const SRC = path.join(ROOT, 'src');
const COMPOSE = path.join(SRC, 'server', 'compose.ts');
const text = fs.readFileSync(COMPOSE, 'utf8');

/** The part builders compose.ts imports from the daemon's own modules (not helpers such as crypto's). */
function builders(source: string): string[] {
  const names: string[] = [];
  for (const m of source.matchAll(/^import \{([^}]*)\} from '(\.[^']*)';/gm)) {
    if (must(m[2]).endsWith('/crypto.js')) continue;
    for (const n of must(m[1]).split(',')) if (/^(?:create|open|store)[A-Z]\w*$/.test(n.trim())) names.push(n.trim());
  }
  return names;
}

/** The top-level arguments of the first call of `name` in `source`, as text. */
function argsOf(source: string, name: string): string[] | undefined {
  const at = source.search(new RegExp(`\\b${name}\\(`));
  if (at < 0) return undefined;
  const args: string[] = [];
  let depth = 0;
  let cur = '';
  for (let i = source.indexOf('(', at) + 1; i < source.length; i++) {
    const c = must(source[i]);
    if (depth === 0 && c === ')') break;
    if (depth === 0 && c === ',') {
      args.push(cur.trim());
      cur = '';
      continue;
    }
    if ('({['.includes(c)) depth++;
    if (')}]'.includes(c)) depth--;
    cur += c;
  }
  if (cur.trim()) args.push(cur.trim());
  return args;
}

function must<T>(v: T | undefined): T {
  if (v === undefined) throw new Error('expected a value');
  return v;
}

t.test('every part compose.ts builds is built there only', async (t) => {
  const names = builders(text);
  for (const n of ['createTokenHandler', 'createSocketServer', 'createAppGetHandler', 'createHttpApp'])
    t.ok(names.includes(n), `compose.ts builds ${n}`);
  t.ok(names.length >= 25, `it builds the daemon's parts (${names.length} builders)`);
  const elsewhere: string[] = [];
  for (const file of sourceFiles(SRC)) {
    if (file === COMPOSE) continue;
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const n of names)
        if (new RegExp(`\\b${n}\\(`).test(line) && !new RegExp(`function ${n}\\(`).test(line))
          elsewhere.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  t.same(elsewhere, [], 'no other module of src/ builds one');
});

t.test('each part is built with one deps object', async (t) => {
  for (const n of builders(text)) {
    const args = argsOf(text, n);
    if (!args) continue; // imported for its type's sake only
    // the express app also takes the daemon's URL, which is known only once it listens
    if (n === 'createHttpApp') t.same(args, ['parts', 'base.baseUrl'], n);
    else t.equal(args.length, 1, `${n}(${args.join(', ').replace(/\s+/g, ' ')})`);
  }
});

t.test('the argument reader splits at the top level only', async (t) => {
  t.same(argsOf('x = createA(a, { b, c: f(d, e) }, [g, h]);', 'createA'), ['a', '{ b, c: f(d, e) }', '[g, h]']);
  t.same(argsOf('createB({ clock })', 'createB'), ['{ clock }']);
  t.same(builders("import { createA, type B, openC } from './a.js';\nimport { createD } from '../crypto.js';"), [
    'createA',
    'openC',
  ]);
});
