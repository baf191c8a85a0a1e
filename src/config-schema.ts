/**
 * The daemon configuration's schema (schemas/config.schema.json) and its check: the validator Ajv generated from
 * it ahead of time (schemas/config.validate.cjs, tools/config-validator.mjs), so a start loads no Ajv and compiles
 * nothing. Both are read on the first loadConfig, not when the CLI starts. An error is said in one line: the
 * setting, what it may be (the schema's words), what it got.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';

interface Property {
  type?: 'string' | 'number' | 'integer' | 'boolean';
  enum?: unknown[];
  minimum?: number;
  minLength?: number;
  /** What the value may be, in words (the schema's own annotation). */
  'x-allowed'?: string;
  /** The value may hold a secret (a database password): an error does not repeat it. */
  writeOnly?: boolean;
}

/** The part of Ajv's error objects the messages use. */
interface SchemaError {
  instancePath: string;
  keyword: string;
  params: { additionalProperty?: string };
}

/**
 * The generated validator: true when the settings are some of the daemon's settings (`S`: config.ts's Config, which
 * the schema describes; named by the caller so that this module needs nothing of config.ts), each as the schema says.
 */
type Validate<S> = ((data: unknown) => data is Partial<S>) & { errors?: SchemaError[] | null };

/** The schema's settings and the check of one source's settings against it. */
export interface ConfigSchema<S> {
  properties: Record<string, Property>;
  /** Some of the settings (as one source gives them) as their types, or what is wrong with them. */
  check(settings: Record<string, unknown>): { settings: Partial<S> } | { problem: string };
}

let properties: Record<string, Property> | undefined;

/**
 * The schema and its generated validator, read on the first call (the validator through require, which keeps it);
 * `S` is the settings' type the schema describes.
 */
export function configSchema<S extends object>(): ConfigSchema<S> {
  properties ??= (
    JSON.parse(fs.readFileSync(new URL('../../schemas/config.schema.json', import.meta.url), 'utf8')) as {
      properties: Record<string, Property>;
    }
  ).properties;
  const known = properties;
  const { validateConfig } = createRequire(import.meta.url)('../../schemas/config.validate.cjs') as {
    validateConfig: Validate<S>;
  };
  const problem = (settings: Record<string, unknown>) => {
    const e = validateConfig.errors?.[0];
    if (!e) return 'is not valid';
    if (e.keyword === 'additionalProperties')
      return `unknown key "${e.params.additionalProperty}" (the settings are listed in docs/configuration.md)`;
    const key = e.instancePath.slice(1);
    return describe(key, known[key] ?? {}, settings[key]);
  };
  const check = (settings: Record<string, unknown>) =>
    validateConfig(settings) ? { settings } : { problem: problem(settings) };
  return { properties: known, check };
}

/** "port must be an integer from 0 to 65535, got "x"". */
export function describe(key: string, p: Property, got?: unknown): string {
  const shown = p.writeOnly || got === undefined ? '' : `, got ${JSON.stringify(got)}`;
  return `${key} must be ${allowed(p)}${shown}`;
}

/** What a setting may be, in words: the schema's x-allowed, else said from its type. */
function allowed(p: Property): string {
  if (p['x-allowed']) return p['x-allowed'];
  if (p.enum) return `${p.enum.slice(0, -1).join(', ')} or ${String(p.enum.at(-1))}`;
  if (p.type === 'boolean') return 'true or false';
  if (p.type === 'number' && p.minimum === 0) return 'a non-negative number';
  if (p.type === 'string' && p.minLength) return 'a non-empty string';
  return `a ${p.type ?? 'value'}`;
}

/**
 * An environment variable's or flag's text as the setting's type: numbers, and booleans as true/false/1/0. Text
 * that is neither stays text, for the schema to refuse in the setting's words.
 */
export function fromText(type: Property['type'], v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if ((type === 'number' || type === 'integer') && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  if (type === 'boolean') return v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v;
  return v;
}

/** deliveryLeaseMs → --delivery-lease-ms: how a setting that came from a flag is named. */
export const flagName = (key: string) => `--${key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())}`;
