/**
 * Manifest validation: one Ajv instance compiled from schemas/app-manifest.schema.json,
 * plus the rules a schema cannot say (uniqueness, event scopes, redirect URLs).
 * Every violation is reported at once as {pointer, message} (RFC 6901 pointers).
 */
import fs from 'node:fs';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { checkRegisteredRedirect } from '../oauth/redirect-urls.js';
import { didYouMean } from './did-you-mean.js';

export interface Violation {
  pointer: string;
  message: string;
}

type ShortcutType = 'ON_MESSAGE' | 'GLOBAL';
interface Shortcut { shortcutType: ShortcutType; url: string; name: string; displayName: string; description?: string | null }
interface SlashCommand { command: string; url: string; description?: string | null; usageHint?: string | null }
interface DynamicMenu { url: string; onAction: string }
interface RichTextBlock { type: 'rich_text'; elements: Array<Record<string, unknown>>; block_id?: string }
export interface Manifest {
  name: string;
  displayName: string;
  bot: boolean;
  botTitle?: string | null;
  socketMode?: boolean;
  scopes: { botScopes: string[]; userScopes: string[] };
  shortcuts: Shortcut[];
  slashCommands: SlashCommand[];
  eventSubscriptions: { url: string; events: string[] };
  blockInteraction?: { url: string } | null;
  viewAction?: { url: string } | null;
  dynamicMenus?: DynamicMenu[];
  defaultHomeView?: { enabled: boolean; blocks: RichTextBlock[] } | null;
  redirectUrls: string[];
  helpUrl?: string | null;
  avatarUrl?: string | null;
  listingUrl?: string | null;
  welcomeMessage?: string | null;
  offlineMessage?: string | null;
}

export type ValidationResult =
  | { ok: true; manifest: Manifest; warnings: Violation[] }
  | { ok: false; violations: Violation[] };

export const SCHEMA_ID = 'https://appreg.dev/schemas/app-manifest.schema.json';
const schemaFile = new URL('../../../schemas/app-manifest.schema.json', import.meta.url);
export const manifestSchema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as Record<string, unknown> & { $defs: { scope: { enum: string[] } } };

/** docs/protocol.md §8, read from the schema so there is one list. */
export const KNOWN_SCOPES: readonly string[] = manifestSchema.$defs.scope.enum;

/** docs/protocol.md §5: the scope each known event needs (null: none). */
export const EVENT_SCOPES: Readonly<Record<string, string | null>> = {
  NEW_MESSAGE: 'messages:read',
  UPDATED_MESSAGE: 'messages:read',
  REACTION_ADDED: 'reaction:read',
  CHANNEL_CREATED: 'channels:read',
  CHANNEL_ARCHIVED: 'channels:read',
  CHANNEL_DELETED: 'channels:read',
  WORKSPACE_USER_JOINED: 'user:read',
  WORKSPACE_USER_UPDATED: 'user:read',
  WORKSPACE_USER_GROUP_CREATED: 'group:read',
  WORKSPACE_USER_GROUP_UPDATED: 'group:read',
  APP_UNINSTALLED: null,
  APP_UNAUTHORIZED: null,
};

function isHttpUrl(s: string): boolean {
  if (/[\s\u0000-\u001f\u007f]/.test(s)) return false;
  try {
    const u = new URL(s);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '' && !u.username && !u.password;
  } catch {
    return false;
  }
}

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });
ajv.addFormat('http-url-or-empty', { type: 'string', validate: (s: string) => s === '' || isHttpUrl(s) });
const validateSchema = ajv.compile(manifestSchema);

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The fields the schema allows where an additionalProperties error was raised (its schemaPath's object). */
function allowedFields(schemaPath: string): string[] {
  let node: unknown = manifestSchema;
  for (const seg of schemaPath.replace(/^#\//, '').split('/').slice(0, -1)) node = (node as Record<string, unknown> | undefined)?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  return Object.keys(((node as { properties?: object } | undefined)?.properties ?? {}) as object);
}

/** The value at an instance path of the input (for the scope or event that was misspelt). */
function valueAt(input: unknown, pointer: string): unknown {
  let v = input;
  for (const seg of pointer.split('/').slice(1)) v = (v as Record<string, unknown> | undefined)?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  return v;
}

function describe(e: ErrorObject, input: unknown): Violation {
  const p = e.params as Record<string, unknown>;
  const at = e.instancePath;
  switch (e.keyword) {
    case 'required':
      return { pointer: `${at}/${escapePointer(String(p.missingProperty))}`, message: 'is required' };
    case 'additionalProperties':
      return { pointer: `${at}/${escapePointer(String(p.additionalProperty))}`, message: `is not a known field${didYouMean(p.additionalProperty, allowedFields(e.schemaPath))}` };
    case 'maxLength':
      return { pointer: at, message: `must be at most ${p.limit} characters` };
    case 'minLength':
      return { pointer: at, message: Number(p.limit) === 1 ? 'must not be empty' : `must be at least ${p.limit} characters` };
    case 'maxItems':
      return { pointer: at, message: `must have at most ${p.limit} entries` };
    case 'uniqueItems':
      return { pointer: at, message: `must not repeat an entry (entries ${p.j} and ${p.i} are the same)` };
    case 'format':
      return { pointer: at, message: 'must be a valid http(s) URL' };
    case 'pattern':
      return { pointer: at, message: at.endsWith('/command') ? 'must start with / and contain no spaces' : `must match ${p.pattern}` };
    case 'const':
      return { pointer: at, message: /\/defaultHomeView\/blocks\/\d+\/type$/.test(at) ? 'only blocks of type rich_text are allowed' : `must be ${JSON.stringify(p.allowedValue)}` };
    case 'enum': {
      if (/\/scopes\/(botScopes|userScopes)\/\d+$/.test(at)) return { pointer: at, message: `is not a known scope${didYouMean(valueAt(input, at), KNOWN_SCOPES)} (see docs/protocol.md §8 for the list)` };
      if (/\/eventSubscriptions\/events\/\d+$/.test(at)) return { pointer: at, message: `is not a known event name${didYouMean(valueAt(input, at), Object.keys(EVENT_SCOPES))}` };
      return { pointer: at, message: `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` };
    }
    case 'type':
      return { pointer: at, message: `must be ${String(p.type).replace(',', ' or ')}` };
    default:
      return { pointer: at, message: e.message ?? 'is invalid' };
  }
}

type Loose = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const obj = (v: unknown): Loose => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : {});

/** Rules beyond the schema; they run on whatever parts are well-formed so every problem shows at once. */
function semanticChecks(m: Loose, opts: { allowInsecureRedirects?: boolean }, out: Violation[], warnings: Violation[]) {
  const unique = (list: unknown[], field: string, base: string, what: string) => {
    const seen = new Map<string, number>();
    list.forEach((item, i) => {
      const v = obj(item)[field];
      if (typeof v !== 'string') return;
      const key = v.toLowerCase();
      if (seen.has(key)) out.push({ pointer: `${base}/${i}/${field}`, message: `must be unique within the app (${what} ${JSON.stringify(v)} is also at ${base}/${seen.get(key)})` });
      else seen.set(key, i);
    });
  };
  unique(arr(m.shortcuts), 'name', '/shortcuts', 'shortcut');
  unique(arr(m.slashCommands), 'command', '/slashCommands', 'command');
  unique(arr(m.dynamicMenus), 'onAction', '/dynamicMenus', 'onAction');

  const scopes = obj(m.scopes);
  const granted = new Set([...arr(scopes.botScopes), ...arr(scopes.userScopes)].filter((s): s is string => typeof s === 'string'));
  const subs = obj(m.eventSubscriptions);
  const events = arr(subs.events);
  events.forEach((ev, i) => {
    if (typeof ev !== 'string' || !(ev in EVENT_SCOPES)) return;
    const need = EVENT_SCOPES[ev];
    if (need && !granted.has(need)) out.push({ pointer: `/eventSubscriptions/events/${i}`, message: `needs the scope ${need} in scopes.botScopes or scopes.userScopes` });
  });
  if (events.length > 0 && subs.url === '') out.push({ pointer: '/eventSubscriptions/url', message: 'is required when events are subscribed' });

  arr(m.redirectUrls).forEach((u, i) => {
    if (typeof u !== 'string' || u === '') return;
    const r = checkRegisteredRedirect(u, opts);
    if (r.error) out.push({ pointer: `/redirectUrls/${i}`, message: r.error });
    else if (r.warning) warnings.push({ pointer: `/redirectUrls/${i}`, message: r.warning });
  });
}

export function validateManifest(input: unknown, opts: { allowInsecureRedirects?: boolean } = {}): ValidationResult {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return { ok: false, violations: [{ pointer: '', message: 'the manifest must be a JSON object' }] };
  const violations: Violation[] = [];
  const warnings: Violation[] = [];
  if (!validateSchema(input)) {
    const seen = new Set<string>();
    for (const e of validateSchema.errors ?? []) {
      const v = describe(e, input);
      const key = v.pointer + '\0' + v.message;
      if (!seen.has(key)) {
        seen.add(key);
        violations.push(v);
      }
    }
  }
  semanticChecks(input as Loose, opts, violations, warnings);
  if (violations.length) return { ok: false, violations };
  return { ok: true, manifest: input as Manifest, warnings };
}
