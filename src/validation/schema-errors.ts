/**
 * Ajv's errors as {pointer, message} for people: one wording per keyword, a "did you mean" for an
 * unknown field, and hooks for what a schema's own values need said (a scope, an event name).
 * Shared by the manifest validator and the test-suite loader.
 */
import type { ErrorObject } from 'ajv/dist/2020.js';
import { didYouMean } from './did-you-mean.js';
import { fieldOf, recordOr } from '../unknown-values.js';

export interface Violation {
  pointer: string;
  message: string;
}

/** What a schema says about its own keywords; undefined falls back to the generic wording. */
export interface ErrorWording {
  enum?(pointer: string, value: unknown, allowed: unknown[]): string | undefined;
  pattern?(pointer: string, pattern: string): string | undefined;
  const?(pointer: string, allowed: unknown): string | undefined;
  format?(pointer: string, format: string): string | undefined;
}

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const unescape = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

/** One step down a JSON pointer: an array's entry or an object's field (undefined when there is none). */
const stepInto = (v: unknown, seg: string): unknown => (Array.isArray(v) ? v[Number(seg)] : fieldOf(v, seg));

/** The value at a JSON pointer of `input`. */
function valueAt(input: unknown, pointer: string): unknown {
  let v = input;
  for (const seg of pointer.split('/').slice(1)) v = stepInto(v, unescape(seg));
  return v;
}

/** The fields the schema allows where an additionalProperties error was raised (its schemaPath's object). */
function allowedFields(schema: object, schemaPath: string): string[] {
  let node: unknown = schema;
  for (const seg of schemaPath.replace(/^#\//, '').split('/').slice(0, -1)) node = stepInto(node, unescape(seg));
  return Object.keys(recordOr(fieldOf(node, 'properties')) ?? {});
}

function describeSchemaError(e: ErrorObject, schema: object, input: unknown, wording: ErrorWording = {}): Violation {
  const p: Record<string, unknown> = e.params;
  const at = e.instancePath;
  const say = (message: string | undefined, fallback: string): Violation => ({
    pointer: at,
    message: message ?? fallback,
  });
  switch (e.keyword) {
    case 'required':
      return { pointer: `${at}/${escapePointer(String(p.missingProperty))}`, message: 'is required' };
    case 'additionalProperties':
      return {
        pointer: `${at}/${escapePointer(String(p.additionalProperty))}`,
        message: `is not a known field${didYouMean(p.additionalProperty, allowedFields(schema, e.schemaPath))}`,
      };
    case 'maxLength':
      return say(undefined, `must be at most ${p.limit} characters`);
    case 'minLength':
      return say(undefined, Number(p.limit) === 1 ? 'must not be empty' : `must be at least ${p.limit} characters`);
    case 'maxItems':
      return say(undefined, `must have at most ${p.limit} entries`);
    case 'minItems':
      return say(undefined, Number(p.limit) === 1 ? 'must not be empty' : `must have at least ${p.limit} entries`);
    case 'minimum':
    case 'maximum':
      return say(undefined, `must be ${e.keyword === 'minimum' ? 'at least' : 'at most'} ${p.limit}`);
    case 'uniqueItems':
      return say(undefined, `must not repeat an entry (entries ${p.j} and ${p.i} are the same)`);
    case 'format':
      return say(wording.format?.(at, String(p.format)), `must be a valid ${p.format}`);
    case 'pattern':
      return say(wording.pattern?.(at, String(p.pattern)), `must match ${p.pattern}`);
    case 'const':
      return say(wording.const?.(at, p.allowedValue), `must be ${JSON.stringify(p.allowedValue)}`);
    case 'enum': {
      const allowed: unknown[] = Array.isArray(p.allowedValues) ? p.allowedValues : [];
      return say(
        wording.enum?.(at, valueAt(input, at), allowed),
        `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}${didYouMean(valueAt(input, at), allowed.map(String))}`,
      );
    }
    case 'type':
      return say(undefined, `must be ${String(p.type).replace(',', ' or ')}`);
    default:
      return say(undefined, e.message ?? 'is invalid');
  }
}

/** Every error described, each (pointer, message) once. */
export function describeSchemaErrors(
  errors: ErrorObject[],
  schema: object,
  input: unknown,
  wording?: ErrorWording,
): Violation[] {
  const seen = new Set<string>();
  const out: Violation[] = [];
  for (const e of errors) {
    const v = describeSchemaError(e, schema, input, wording);
    const key = v.pointer + '\0' + v.message;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(v);
    }
  }
  return out;
}
