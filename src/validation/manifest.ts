/**
 * Manifest validation: schemas/app-manifest.schema.json's validator (generated ahead of time),
 * plus the rules a schema cannot say (uniqueness, event scopes, redirect URLs).
 * Every violation is reported at once as {pointer, message} (RFC 6901 pointers).
 */
import fs from 'node:fs';
import { invalidManifest, type AppError } from '../errors.js';
import { must } from '../must.js';
import { checkRegisteredRedirect } from '../oauth/redirect-urls.js';
import { didYouMean } from './did-you-mean.js';
import { schema, validated } from './http-input.js';
import { describeSchemaErrors, type ErrorWording, type Violation } from './schema-errors.js';
import { fieldOf, isRecord, recordOr, fieldsOf as obj, itemsOf as arr } from '../unknown-values.js';

type ShortcutType = 'ON_MESSAGE' | 'GLOBAL';
interface Shortcut {
  shortcutType: ShortcutType;
  url: string;
  name: string;
  displayName: string;
  description?: string | null;
}
interface SlashCommand {
  command: string;
  url: string;
  description?: string | null;
  usageHint?: string | null;
}
interface DynamicMenu {
  url: string;
  onAction: string;
}
interface RichTextBlock {
  type: 'rich_text';
  elements: Array<Record<string, unknown>>;
  block_id?: string;
}
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

/** A manifest as its file may have it: with an editor's `$schema` and the id an app serving it keeps. */
type ManifestDocument = Manifest & { $schema?: string; id?: string };

export type ValidationResult =
  { ok: true; manifest: ManifestDocument; warnings: Violation[] } | { ok: false; violations: Violation[] };

/** A manifest that passed every check, for a create or an update: what it says, and its warnings. */
export interface CheckedManifest {
  manifest: Manifest;
  warnings: Violation[];
}

export const SCHEMA_ID = 'https://appreg.dev/schemas/app-manifest.schema.json';
const schemaFile = new URL('../../../schemas/app-manifest.schema.json', import.meta.url);
export const manifestSchema: Record<string, unknown> = recordOr(JSON.parse(fs.readFileSync(schemaFile, 'utf8'))) ?? {};

/** docs/protocol.md §8, read from the schema so there is one list. */
const scopeEnum = fieldOf(fieldOf(fieldOf(manifestSchema, '$defs'), 'scope'), 'enum');
export const KNOWN_SCOPES: readonly string[] = Array.isArray(scopeEnum)
  ? scopeEnum.filter((s): s is string => typeof s === 'string')
  : [];

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

/**
 * The schema's validator is generated ahead of time with the HTTP API's (schemas/http/validators.cjs, entry
 * apps#manifestBody, tools/http-validators.mjs: its URL formats are there), so neither a daemon's start nor a
 * check compiles it: compiling it with Ajv was a sixth of a daemon's start-up CPU.
 */
const MANIFEST = schema<ManifestDocument>('apps#manifestBody');

/** The manifest's own wording: a misspelt scope or event, a command, a home view block, a URL. */
const wording: ErrorWording = {
  enum(at, value) {
    if (/\/scopes\/(botScopes|userScopes)\/\d+$/.test(at))
      return `is not a known scope${didYouMean(value, KNOWN_SCOPES)} (see docs/protocol.md §8 for the list)`;
    if (/\/eventSubscriptions\/events\/\d+$/.test(at))
      return `is not a known event name${didYouMean(value, Object.keys(EVENT_SCOPES))}`;
    return undefined;
  },
  pattern: (at) => (at.endsWith('/command') ? 'must start with / and contain no spaces' : undefined),
  const: (at) =>
    /\/defaultHomeView\/blocks\/\d+\/type$/.test(at) ? 'only blocks of type rich_text are allowed' : undefined,
  format: () => 'must be a valid http(s) URL',
};

type Loose = Record<string, unknown>;

/** Rules beyond the schema; they run on whatever parts are well-formed so every problem shows at once. */
function semanticChecks(m: Loose, opts: { allowInsecureRedirects?: boolean }, out: Violation[], warnings: Violation[]) {
  const unique = (list: unknown[], field: string, base: string, what: string) => {
    const seen = new Map<string, number>();
    list.forEach((item, i) => {
      const v = obj(item)[field];
      if (typeof v !== 'string') return;
      const key = v.toLowerCase();
      if (seen.has(key))
        out.push({
          pointer: `${base}/${i}/${field}`,
          message: `must be unique within the app (${what} ${JSON.stringify(v)} is also at ${base}/${seen.get(key)})`,
        });
      else seen.set(key, i);
    });
  };
  unique(arr(m.shortcuts), 'name', '/shortcuts', 'shortcut');
  unique(arr(m.slashCommands), 'command', '/slashCommands', 'command');
  unique(arr(m.dynamicMenus), 'onAction', '/dynamicMenus', 'onAction');

  const scopes = obj(m.scopes);
  const granted = new Set(
    [...arr(scopes.botScopes), ...arr(scopes.userScopes)].filter((s): s is string => typeof s === 'string'),
  );
  const subs = obj(m.eventSubscriptions);
  const events = arr(subs.events);
  events.forEach((ev, i) => {
    if (typeof ev !== 'string' || !(ev in EVENT_SCOPES)) return;
    const need = EVENT_SCOPES[ev];
    if (need && !granted.has(need))
      out.push({
        pointer: `/eventSubscriptions/events/${i}`,
        message: `needs the scope ${need} in scopes.botScopes or scopes.userScopes`,
      });
  });
  if (events.length > 0 && subs.url === '')
    out.push({ pointer: '/eventSubscriptions/url', message: 'is required when events are subscribed' });

  arr(m.redirectUrls).forEach((u, i) => {
    if (typeof u !== 'string' || u === '') return;
    const r = checkRegisteredRedirect(u, opts);
    if (r.error) out.push({ pointer: `/redirectUrls/${i}`, message: r.error });
    else if (r.warning) warnings.push({ pointer: `/redirectUrls/${i}`, message: r.warning });
  });
}

export function validateManifest(input: unknown, opts: { allowInsecureRedirects?: boolean } = {}): ValidationResult {
  if (!isRecord(input))
    return { ok: false, violations: [{ pointer: '', message: 'the manifest must be a JSON object' }] };
  const violations: Violation[] = [];
  const warnings: Violation[] = [];
  const v = validated(MANIFEST, input);
  if (!v.ok) violations.push(...describeSchemaErrors(v.errors, manifestSchema, input, wording));
  semanticChecks(input, opts, violations, warnings);
  if (!v.ok || violations.length) return { ok: false, violations };
  return { ok: true, manifest: v.value, warnings };
}

/** The 400 of a manifest with problems: the first in the message, every one in the details. */
function manifestError(violations: Violation[]): AppError {
  const n = violations.length;
  const first = must(violations[0]);
  return invalidManifest(
    `The manifest has ${n} problem${n === 1 ? '' : 's'}: ${first.pointer || '/'} ${first.message}${n > 1 ? ' (and more in details)' : ''}.`,
    violations,
  );
}

/**
 * A manifest for a create or an update, checked (docs/protocol.md §2, endpoints 1–2): without its `$schema` and
 * `id`, which an app does not choose; else the 400 invalid_manifest with every problem.
 */
export function checkManifest(input: unknown, opts: { allowInsecureRedirects?: boolean }): CheckedManifest {
  const r = validateManifest(input, opts);
  if (!r.ok) throw manifestError(r.violations);
  const { $schema: _schema, id: _id, ...manifest } = r.manifest;
  return { manifest, warnings: r.warnings };
}
