/**
 * The type assertions of the TypeScript files under a folder, read from swc's syntax tree (so a word
 * "as" in a comment or a string is not one): `x as T` and `<T>x`, not `as const` (which asserts no
 * type) nor `satisfies`. Each is sorted into a kind, since issue 35 asks for different things of them:
 * `as unknown as T` (none at all), `as Record<string, unknown>` (only where JSON of unknown shape
 * arrives) and the rest (under 150 in src/).
 * `node dist/test/helpers/casts.js [dir]` lists the counts per file (src/ by default, from where it runs).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from '@swc/core';
import { sourceFiles } from './sources.js';

type CastKind = 'unknown-as' | 'record' | 'other';

export interface Cast {
  file: string;
  /** 1-based. */
  line: number;
  kind: CastKind;
  /** The asserted type as written. */
  type: string;
}

interface Node {
  type?: string;
  span?: { start: number; end: number };
  [key: string]: unknown;
}

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null;

/** The casts of one source text. */
export function castsIn(file: string, text: string): Cast[] {
  const parsed: unknown = parseSync(text, { syntax: 'typescript', tsx: file.endsWith('.tsx') });
  const bytes = Buffer.from(text, 'utf8');
  const base = isNode(parsed) && parsed.span ? parsed.span.start - firstTokenOffset(text) : 0;
  const slice = (s: { start: number; end: number }) => bytes.subarray(s.start - base, s.end - base).toString('utf8');
  const lineOf = (offset: number) =>
    bytes
      .subarray(0, offset - base)
      .toString('utf8')
      .split('\n').length;
  const out: Cast[] = [];
  const visit = (n: unknown): void => {
    if (Array.isArray(n)) {
      for (const c of n) visit(c);
      return;
    }
    if (!isNode(n)) return;
    if ((n.type === 'TsAsExpression' || n.type === 'TsTypeAssertion') && isNode(n.typeAnnotation) && n.span) {
      const type = n.typeAnnotation.span ? slice(n.typeAnnotation.span).replace(/\s+/g, ' ') : '?';
      const inner = n.expression;
      const kind: CastKind =
        isNode(inner) &&
        inner.type === 'TsAsExpression' &&
        isNode(inner.typeAnnotation) &&
        inner.typeAnnotation.type === 'TsKeywordType' &&
        inner.typeAnnotation.kind === 'unknown'
          ? 'unknown-as'
          : /^Record<string, unknown>( \| undefined)?$/.test(type)
            ? 'record'
            : 'other';
      // `x as unknown as T` is one cast of kind unknown-as, not two
      if (kind === 'unknown-as' && isNode(inner)) {
        out.push({ file, line: lineOf(n.span.start), kind, type });
        visit(inner.expression);
        return;
      }
      out.push({ file, line: lineOf(n.span.start), kind, type });
    }
    for (const [k, v] of Object.entries(n)) if (k !== 'span') visit(v);
  };
  visit(parsed);
  return out;
}

/** The byte offset of the first token (swc's module span starts there): past leading blanks and comments. */
function firstTokenOffset(text: string): number {
  const m = /^(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/.exec(text);
  return Buffer.byteLength(m ? m[0] : '', 'utf8');
}

/** Every cast of the TypeScript files under `dir` (paths relative to `root`). */
export function castsUnder(root: string, dir: string): Cast[] {
  return sourceFiles(path.join(root, dir)).flatMap((f) =>
    castsIn(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8')),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const all = castsUnder(process.cwd(), process.argv[2] ?? 'src');
  const perFile = new Map<string, number>();
  for (const c of all) perFile.set(c.file, (perFile.get(c.file) ?? 0) + 1);
  for (const [file, n] of [...perFile].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(5)}  ${file}`);
  const of = (k: CastKind) => all.filter((c) => c.kind === k).length;
  console.log(`${all.length} casts: ${of('unknown-as')} as unknown as, ${of('record')} as Record<string, unknown>`);
}
