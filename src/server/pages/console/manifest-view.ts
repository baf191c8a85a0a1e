/**
 * A manifest with its problems shown inline: the JSON pretty-printed one value per line, each
 * line knowing the JSON pointer of the value it starts, and every error or warning written
 * under the line of its pointer (or of its nearest parent that exists, for a missing member).
 */
import { html } from 'ghtml';
import { jsonSyntaxProblem } from '../../../json-syntax.js';

export interface Problem {
  pointer: string;
  message: string;
}

interface Line {
  text: string;
  pointer: string;
}

const escPointer = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

function lines(value: unknown): Line[] {
  const out: Line[] = [];
  const walk = (v: unknown, pointer: string, indent: string, prefix: string, comma: string) => {
    if (v && typeof v === 'object') {
      const isArr = Array.isArray(v);
      const entries: Array<[string, unknown]> = Array.isArray(v)
        ? v.map((x, i): [string, unknown] => [String(i), x])
        : Object.entries(v);
      const [open, close] = isArr ? ['[', ']'] : ['{', '}'];
      if (!entries.length) return void out.push({ text: `${indent}${prefix}${open}${close}${comma}`, pointer });
      out.push({ text: `${indent}${prefix}${open}`, pointer });
      entries.forEach(([k, x], i) =>
        walk(
          x,
          `${pointer}/${escPointer(k)}`,
          indent + '  ',
          isArr ? '' : `${JSON.stringify(k)}: `,
          i < entries.length - 1 ? ',' : '',
        ),
      );
      out.push({ text: `${indent}${close}${comma}`, pointer });
      return;
    }
    out.push({ text: `${indent}${prefix}${JSON.stringify(v) ?? 'null'}${comma}`, pointer });
  };
  walk(value, '', '', '', '');
  return out;
}

/** The line index where the pointer's value starts, or its nearest existing parent's. */
function lineOf(all: Line[], pointer: string): number {
  let p = pointer;
  for (;;) {
    const i = all.findIndex((l) => l.pointer === p);
    if (i !== -1) return i;
    if (p === '') return 0;
    p = p.slice(0, p.lastIndexOf('/'));
  }
}

/** The annotated manifest as an ordered list; `parsed` is the JSON value of what was sent. */
export function annotatedManifest(parsed: unknown, errors: Problem[], warnings: Problem[]): string {
  const all = lines(parsed);
  const notes = new Map<number, string[]>();
  const add = (p: Problem, kind: 'Error' | 'Warning') => {
    const i = lineOf(all, p.pointer);
    const list = notes.get(i) ?? [];
    list.push(html`<li class="msg" role="note">!${kind} at <code>${p.pointer || '/'}</code>: ${p.message}</li>`);
    notes.set(i, list);
  };
  for (const e of errors) add(e, 'Error');
  for (const w of warnings) add(w, 'Warning');
  return html`<ol class="json" aria-label="The manifest with its problems">!${all
    .map((l, i) => html`<li!${notes.has(i) ? ' class="bad"' : ''}>${l.text}</li>!${(notes.get(i) ?? []).join('')}`)
    .join('')}</ol>`;
}

/** For a text that is not JSON: why, at which line and column. */
export function jsonParseProblem(text: string): string | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (e) {
    return jsonSyntaxProblem(text, e);
  }
}
