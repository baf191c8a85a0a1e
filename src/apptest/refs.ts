/**
 * References in a suite (docs/testing.md, "References"): `${name}` and `${name.path.to.field}` name
 * an earlier step's saved result, `${env.VAR}` the environment, and `${app.id}`, `${run.dir}`,
 * `${users.dev.id}`, `${test.channel}`, `${daemon.url}` what the run made. A string that is one
 * reference and nothing else takes the value itself (an object, a number); inside other text, the
 * value is written in (a message or any object with an id: its id). `$${` is a literal `${`.
 */
import { must } from '../must.js';
import { recordOr } from '../unknown-values.js';
import type { Resolved } from './steps.js';

/** The names the runner provides; every other name is a result saved by an earlier step. */
export const BUILTINS: Readonly<Record<string, readonly string[] | 'any'>> = {
  env: 'any',
  run: ['dir', 'id'],
  daemon: ['url'],
  app: ['id', 'name', 'url', 'port', 'botId'],
  users: 'any',
  test: ['name', 'channel'],
};

const REF = /\$(\$)?\{([^}]*)\}/g;
const EXPR = /^([A-Za-z_][A-Za-z0-9_]*)((?:\.[^.\s]+)*)$/;

export interface Ref {
  /** The text between the braces. */
  expr: string;
  root: string;
  path: string[];
}

export class RefError extends Error {}

/** The references written in `text` (not the escaped ones); a malformed one throws RefError. */
export function refsIn(text: string): Ref[] {
  const out: Ref[] = [];
  for (const m of text.matchAll(REF)) {
    if (m[1]) continue;
    out.push(parseRef(must(m[2])));
  }
  return out;
}

function parseRef(expr: string): Ref {
  const m = EXPR.exec(expr.trim());
  if (!m) throw new RefError(`\${${expr}} is not a reference: write \${name}, \${name.field} or \${env.VAR}`);
  return { expr: expr.trim(), root: must(m[1]), path: m[2] ? m[2].slice(1).split('.') : [] };
}

/** Every string inside a value (object fields and array items, deeply), with its JSON pointer. */
export function* stringsIn(value: unknown, pointer = ''): Generator<[string, string]> {
  if (typeof value === 'string') yield [value, pointer];
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* stringsIn(value[i], `${pointer}/${i}`);
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value))
      yield* stringsIn(v, `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`);
}

export type Scope = (root: string) => unknown;

/** The environment as a scope: its variables that are set (an unset one is said so by name, not listed). */
export function envScope(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

function lookup(scope: Scope, ref: Ref): unknown {
  if (ref.root === 'env' && ref.path.length === 1) {
    const v = recordOr(scope('env'))?.[must(ref.path[0])];
    if (v === undefined) throw new RefError(`\${${ref.expr}}: ${ref.path[0]} is not set in the environment`);
    return v;
  }
  let v = scope(ref.root);
  if (v === undefined) throw new RefError(`\${${ref.expr}}: nothing is named ${ref.root}`);
  const walked: string[] = [ref.root];
  for (const seg of ref.path) {
    if (v === null || typeof v !== 'object')
      throw new RefError(`\${${ref.expr}}: ${walked.join('.')} has no field ${seg}`);
    const next: unknown = Reflect.get(v, seg);
    if (next === undefined) {
      const has = Object.keys(v).slice(0, 12);
      throw new RefError(
        `\${${ref.expr}}: ${walked.join('.')} has no field ${seg}${has.length ? ` (it has ${has.join(', ')})` : ''}`,
      );
    }
    v = next;
    walked.push(seg);
  }
  return v;
}

/** A value written into text: a string as it is, an object with an id as its id, anything else as JSON. */
function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && 'id' in v && typeof v.id === 'string') return v.id;
  return JSON.stringify(v);
}

/** `text` with its references resolved; a string that is exactly one reference gives the value itself. */
export function resolveText(text: string, scope: Scope): unknown {
  const whole = /^\$\{([^}]*)\}$/.exec(text);
  if (whole) return lookup(scope, parseRef(must(whole[1])));
  return text.replace(REF, (_all, escaped: string | undefined, expr: string) =>
    escaped ? `\${${expr}}` : asText(lookup(scope, parseRef(expr))),
  );
}

/**
 * `value` with every reference in its strings resolved (objects and arrays copied): what was written as `T`, now
 * `Resolved<T>` (a string may have become any value). The one place a type is asserted on the way: the walk below
 * keeps every shape and changes only strings, which no type of TypeScript's can say of a function.
 */
export function resolveDeep<T>(value: T, scope: Scope): Resolved<T> {
  return resolveAny(value, scope) as Resolved<T>;
}

function resolveAny(value: unknown, scope: Scope): unknown {
  if (typeof value === 'string') return resolveText(value, scope);
  if (Array.isArray(value)) return value.map((v) => resolveAny(v, scope));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveAny(v, scope)]));
  return value;
}

/** A value that names a message or a view: a saved object's id, or the text itself (an id). */
export function idOf(v: unknown): string | undefined {
  if (typeof v === 'string' && v) return v;
  const o = recordOr(v);
  if (typeof o?.id === 'string') return o.id;
  const message = recordOr(o?.message);
  if (typeof message?.id === 'string') return message.id;
  return undefined;
}
