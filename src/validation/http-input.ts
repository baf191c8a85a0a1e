/**
 * The HTTP API's input checks: every route's path parameters, query and body against its JSON
 * Schema (schemas/http/*.schema.json), by the validators Ajv generated ahead of time
 * (schemas/http/validators.cjs, tools/http-validators.mjs) so a start compiles nothing. A value
 * that fails becomes the invalid_request body of docs/protocol.md §1: one message, and a
 * {pointer, message} detail per problem.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject } from 'ajv/dist/2020.js';
import { invalidRequest, type AppError } from '../errors.js';
import { describeSchemaErrors, type Violation } from './schema-errors.js';
import { fieldOf, recordOr } from '../unknown-values.js';

/** A generated validator: true when the value conforms; else its errors are on `errors`. */
interface Validator {
  (value: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/**
 * A schema of schemas/http by its reference (`file#name`: the file's `$defs` entry), and the type
 * its valid values have. The type is declared once, here, next to the schema that makes it true.
 */
export interface Schema<T> {
  readonly ref: string;
  /** Never set: carries T. */
  readonly type?: T;
  /**
   * A check of its own, where the schema's 400 is not the default one (the manifest's: its own wording and the
   * rules a schema cannot say, in one 400 invalid_manifest): what it makes of the value, or it throws.
   */
  readonly check?: (value: unknown) => T;
}

export const schema = <T>(ref: string): Schema<T> => ({ ref });

/**
 * What the caller is told when a value fails, by the first problem: its pointer and wording
 * ('/kind is required') or its pointer alone ('/kind'). A string is said with the details; `{text,
 * details: false}` without them. A problem without an entry gets the default ("kind must be string.").
 */
export type Messages = Record<string, string | { text: string; details: false }>;

/** How a route says its own 400: from every problem found, the error to send. */
export type Refusal = (problems: Violation[]) => AppError;

let validators: Record<string, Validator> | undefined;
function validatorOf(ref: string): Validator {
  validators ??= createRequire(import.meta.url)('../../../schemas/http/validators.cjs') as Record<string, Validator>;
  const v = validators[ref];
  if (!v) throw new Error(`no validator for ${ref}: run npm run openapi`);
  return v;
}

/** The schema a reference names (read on an error only: to say which fields are known). */
const schemaFiles = new Map<string, Record<string, unknown>>();
function schemaOf(ref: string): object {
  const [file = '', name = ''] = ref.split('#');
  let doc = schemaFiles.get(file);
  if (!doc) {
    const text = fs.readFileSync(new URL(`../../../schemas/http/${file}.schema.json`, import.meta.url), 'utf8');
    doc = recordOr(JSON.parse(text)) ?? {};
    schemaFiles.set(file, doc);
  }
  return recordOr(fieldOf(doc.$defs, name)) ?? {};
}

const isValid = <T>(v: Validator, value: unknown, _s: Schema<T>): value is T => v(value);

/** `a/b` → `a.b`: how a field is named in a message. */
const fieldName = (pointer: string) =>
  pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');

/** The default message: the first problem in words ("kind is required.", "The body must be object."). */
function defaultRefusal(where: string, messages: Messages): Refusal {
  return (problems) => {
    const first = problems[0] ?? { pointer: '', message: 'is invalid' };
    const own = messages[`${first.pointer} ${first.message}`] ?? messages[first.pointer];
    if (typeof own === 'object') return invalidRequest(own.text);
    if (typeof own === 'string') return invalidRequest(own, problems);
    const name = fieldName(first.pointer);
    return invalidRequest(`${name || where} ${first.message}.`, problems);
  };
}

/**
 * A route whose service used to say some problems itself, kept in the service's words now the
 * schema finds them: `own` gives a problem's wording (undefined: the schema's default). When every
 * problem has its own wording, the 400 is `say(first)` with each one (once per pointer); otherwise
 * the default 400 of the others, as the schema alone said them before.
 */
export function ownWords(own: (p: Violation) => Violation | undefined, say: (first: Violation) => string): Refusal {
  const plain = defaultRefusal('The body', {});
  return (problems) => {
    const others = problems.filter((p) => !own(p));
    if (others.length) return plain(others);
    const details = new Map<string, Violation>();
    for (const p of problems.flatMap((x) => own(x) ?? [])) if (!details.has(p.pointer)) details.set(p.pointer, p);
    const list = [...details.values()];
    return invalidRequest(say(list[0] ?? { pointer: '', message: 'is invalid' }), list);
  };
}

/**
 * `value` as T when it conforms to `s`, else the errors of its generated validator: for a check that says
 * its own 400 (the manifest's).
 */
export function validated<T>(
  s: Schema<T>,
  value: unknown,
): { ok: true; value: T } | { ok: false; errors: ErrorObject[] } {
  const v = validatorOf(s.ref);
  return isValid(v, value, s) ? { ok: true, value } : { ok: false, errors: v.errors ?? [] };
}

/**
 * `value` as T when it conforms to `s` (or passes its own check), else the route's 400. `where` names the
 * whole value in a message ("The body", "The query").
 */
export function checked<T>(
  s: Schema<T>,
  value: unknown,
  where: string,
  opts: { messages?: Messages; refuse?: Refusal } = {},
): T {
  if (s.check) return s.check(value);
  const v = validatorOf(s.ref);
  if (isValid(v, value, s)) return value;
  const problems = describeSchemaErrors(v.errors ?? [], schemaOf(s.ref), value);
  throw (opts.refuse ?? defaultRefusal(where, opts.messages ?? {}))(problems);
}
