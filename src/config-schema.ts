/**
 * The daemon configuration's schema (schemas/config.schema.json) and its check: the validator Ajv generated from
 * it ahead of time (schemas/config.validate.cjs, tools/config-validator.mjs), so a start loads no Ajv and compiles
 * nothing. Both are read on the first loadConfig, not when the CLI starts. An error is said in one line: the
 * setting, what it may be (the schema's words), what it got.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Config } from './config.js';

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

/** The generated validator: true when the settings are some of the daemon's settings, each as the schema says. */
type Validate = ((data: unknown) => data is Partial<Config>) & { errors?: SchemaError[] | null };

/** The schema's settings and the check of one source's settings against it. */
export interface ConfigSchema {
  properties: Record<string, Property>;
  /** Some of the settings (as one source gives them) as their types, or what is wrong with them. */
  check(settings: Record<string, unknown>): { settings: Partial<Config> } | { problem: string };
}

let loaded: ConfigSchema | undefined;

/** The schema and its generated validator, read once, on the first call. */
export function configSchema(): ConfigSchema {
  if (loaded) return loaded;
  const schemaFile = new URL('../../schemas/config.schema.json', import.meta.url);
  const { properties } = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as { properties: Record<string, Property> };
  const { validateConfig } = createRequire(import.meta.url)('../../schemas/config.validate.cjs') as {
    validateConfig: Validate;
  };
  const problem = (settings: Record<string, unknown>) => {
    const e = validateConfig.errors?.[0];
    if (!e) return 'is not valid';
    if (e.keyword === 'additionalProperties')
      return `unknown key "${e.params.additionalProperty}" (the settings are listed in docs/configuration.md)`;
    const key = e.instancePath.slice(1);
    return describe(key, properties[key] ?? {}, settings[key]);
  };
  const check = (settings: Record<string, unknown>) =>
    validateConfig(settings) ? { settings } : { problem: problem(settings) };
  return (loaded = { properties, check });
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
