/**
 * The length in lines of every function of a TypeScript file, read from its syntax tree (swc's
 * parser, as dependency-cruiser uses it): declarations, function and arrow expressions, methods,
 * getters, setters and constructors, each from the line its signature starts on to the line of its
 * closing brace. Nested functions are counted on their own and inside the one that holds them.
 * `node dist/test/helpers/function-lengths.js [min] [dir]` lists those of `min` lines or more (200, src/;
 * the directory is taken from where it runs, so another checkout can be measured).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';
import { sourceFiles } from './sources.js';

export interface FunctionLength {
  /** The file, as given. */
  file: string;
  /** Its name where the code gives one (declaration, variable, property, method), else `<anonymous>`. */
  name: string;
  /** The line it starts on, 1-based. */
  line: number;
  lines: number;
}

const FUNCTION_NODES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ClassMethod',
  'PrivateMethod',
  'Constructor',
  'MethodProperty',
  'GetterProperty',
  'SetterProperty',
]);

interface Node {
  type?: string;
  span?: { start: number; end: number };
  [key: string]: unknown;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null;

/** The name a key or binding spells, if it spells one. */
function nameOf(n: unknown): string | undefined {
  if (!isNode(n)) return undefined;
  if (typeof n.value === 'string') return n.value;
  if (n.type === 'PrivateName' && isNode(n.id)) return '#' + nameOf(n.id);
  return undefined;
}

/** The functions of one source text. */
export function functionLengths(file: string, text: string): FunctionLength[] {
  const module = parseSync(text, { syntax: 'typescript', tsx: file.endsWith('.tsx') }) as unknown as Node;
  const bytes = Buffer.from(text, 'utf8');
  // swc's spans are byte offsets from 1 (the module's span starts at its first token, not at 1)
  const lineStarts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a) lineStarts.push(i + 1);
  const lineAt = (offset: number) => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((lineStarts[mid] as number) <= offset - 1) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const out: FunctionLength[] = [];
  const visit = (n: unknown, given?: string): void => {
    if (Array.isArray(n)) {
      for (const c of n) visit(c);
      return;
    }
    if (!isNode(n)) return;
    if (n.type && FUNCTION_NODES.has(n.type) && n.span) {
      const name = nameOf(n.identifier) ?? nameOf(n.key) ?? (n.type === 'Constructor' ? 'constructor' : given);
      const line = lineAt(n.span.start);
      out.push({ file, name: name ?? '<anonymous>', line, lines: lineAt(n.span.end - 1) - line + 1 });
    }
    for (const [k, v] of Object.entries(n)) {
      if (k === 'span') continue;
      // a function given to a variable or a property is known by that name
      const name =
        (n.type === 'VariableDeclarator' && k === 'init') || (n.type === 'KeyValueProperty' && k === 'value')
          ? nameOf(n.type === 'VariableDeclarator' ? n.id : n.key)
          : undefined;
      visit(v, name);
    }
  };
  visit(module);
  return out;
}

/** Every function of the TypeScript files under `dir` (paths relative to `root`). */
export function functionsUnder(root: string, dir: string): FunctionLength[] {
  return sourceFiles(path.join(root, dir)).flatMap((f) =>
    functionLengths(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8')),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const min = Number(process.argv[2] ?? 200);
  const all = functionsUnder(process.cwd(), process.argv[3] ?? 'src');
  const long = all.filter((f) => f.lines >= min).sort((a, b) => b.lines - a.lines);
  for (const f of long) console.log(`${String(f.lines).padStart(5)}  ${f.file}:${f.line}  ${f.name}`);
  console.log(`${long.length} of ${all.length} functions have ${min} lines or more`);
}
