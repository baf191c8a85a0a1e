import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  validateManifest,
  KNOWN_SCOPES,
  EVENT_SCOPES,
  manifestSchema,
  SCHEMA_ID,
} from '../../src/validation/manifest.js';
import { checkRegisteredRedirect } from '../../src/oauth/redirect-urls.js';
import { ROOT } from '../helpers/cli.js';

const full = () =>
  JSON.parse(fs.readFileSync(path.join(ROOT, 'test/fixtures/manifests/full.json'), 'utf8')) as Record<string, any>;

function rejects(t: Tap.Test, m: unknown, pointer: string, message?: RegExp, opts = {}) {
  const r = validateManifest(m, opts);
  t.equal(r.ok, false, `rejected (${pointer})`);
  if (r.ok) return;
  const hit = r.violations.find((v) => v.pointer === pointer);
  t.ok(hit, `a violation points at ${pointer}; got ${JSON.stringify(r.violations)}`);
  if (hit && message) t.match(hit.message, message);
}
declare global {
  namespace Tap {
    type Test = import('tap').Test;
  }
}

t.test('a full manifest using every field is accepted, $schema and id included', async (t) => {
  const r = validateManifest({ ...full(), id: 'app_x' });
  t.ok(r.ok, JSON.stringify(!r.ok && r.violations));
  t.same(r.ok && r.warnings, []);
});

t.test(
  'fields whose default is null (docs/protocol.md §2.4) accept null (descriptions, usageHint, helpUrl …)',
  async (t) => {
    const m = full();
    m.shortcuts[0].description = null;
    m.slashCommands[0].description = null;
    m.slashCommands[0].usageHint = null;
    const r = validateManifest(m);
    t.ok(r.ok, JSON.stringify(!r.ok && r.violations));
    m.slashCommands[0].usageHint = 5;
    rejects(t, m, '/slashCommands/0/usageHint');
  },
);

t.test('the schema has a stable $id and the scope list of docs/protocol.md §8', async (t) => {
  t.equal(manifestSchema.$id, SCHEMA_ID);
  t.equal(manifestSchema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  t.equal(KNOWN_SCOPES.length, 17);
  t.ok(KNOWN_SCOPES.includes('group:read'));
  const schemaEvents = (manifestSchema as any).properties.eventSubscriptions.properties.events.items.enum;
  t.same([...schemaEvents].sort(), Object.keys(EVENT_SCOPES).sort(), 'schema events and the event→scope table agree');
  for (const s of Object.values(EVENT_SCOPES)) if (s) t.ok(KNOWN_SCOPES.includes(s), `${s} is a known scope`);
});

const cases: Array<[string, (m: Record<string, any>) => void, string, RegExp?]> = [
  ['name is required', (m) => delete m.name, '/name', /required/],
  ['displayName is required', (m) => delete m.displayName, '/displayName', /required/],
  ['bot is required', (m) => delete m.bot, '/bot', /required/],
  ['scopes is required', (m) => delete m.scopes, '/scopes', /required/],
  ['shortcuts is required', (m) => delete m.shortcuts, '/shortcuts', /required/],
  ['slashCommands is required', (m) => delete m.slashCommands, '/slashCommands', /required/],
  ['eventSubscriptions is required', (m) => delete m.eventSubscriptions, '/eventSubscriptions', /required/],
  ['redirectUrls is required', (m) => delete m.redirectUrls, '/redirectUrls', /required/],
  ['bot must be boolean', (m) => (m.bot = 'yes'), '/bot', /boolean/],
  ['socketMode must be boolean', (m) => (m.socketMode = 1), '/socketMode', /boolean/],
  ['botScopes required', (m) => delete m.scopes.botScopes, '/scopes/botScopes', /required/],
  ['userScopes required', (m) => delete m.scopes.userScopes, '/scopes/userScopes', /required/],
  ['unknown scope', (m) => m.scopes.botScopes.push('messages:everything'), '/scopes/botScopes/3', /known scope/],
  ['unknown field at the top (typo)', (m) => (m.redirectUrl = []), '/redirectUrl', /not a known field/],
  ['unknown field in a shortcut', (m) => (m.shortcuts[0].nmae = 'x'), '/shortcuts/0/nmae', /not a known field/],
  ['shortcut name at most 32', (m) => (m.shortcuts[0].name = 'x'.repeat(33)), '/shortcuts/0/name', /at most 32/],
  ['shortcut name unique', (m) => (m.shortcuts[1].name = m.shortcuts[0].name), '/shortcuts/1/name', /unique/],
  [
    'shortcutType ON_MESSAGE or GLOBAL',
    (m) => (m.shortcuts[0].shortcutType = 'MESSAGE'),
    '/shortcuts/0/shortcutType',
    /ON_MESSAGE/,
  ],
  ['shortcut url required', (m) => delete m.shortcuts[0].url, '/shortcuts/0/url', /required/],
  ['shortcut displayName required', (m) => delete m.shortcuts[0].displayName, '/shortcuts/0/displayName', /required/],
  ['shortcut url valid', (m) => (m.shortcuts[0].url = 'not a url'), '/shortcuts/0/url', /URL/],
  [
    'command starts with /',
    (m) => (m.slashCommands[0].command = 'standup'),
    '/slashCommands/0/command',
    /start with \//,
  ],
  [
    'command at most 32',
    (m) => (m.slashCommands[0].command = '/' + 'x'.repeat(32)),
    '/slashCommands/0/command',
    /at most 32/,
  ],
  ['command unique', (m) => m.slashCommands.push({ ...m.slashCommands[0] }), '/slashCommands/1/command', /unique/],
  ['command url required', (m) => delete m.slashCommands[0].url, '/slashCommands/0/url', /required/],
  [
    'usageHint at most 55',
    (m) => (m.slashCommands[0].usageHint = 'h'.repeat(56)),
    '/slashCommands/0/usageHint',
    /at most 55/,
  ],
  ['events url valid', (m) => (m.eventSubscriptions.url = 'ftp://x/y'), '/eventSubscriptions/url', /URL/],
  [
    'unknown event',
    (m) => m.eventSubscriptions.events.push('MESSAGE_SENT'),
    '/eventSubscriptions/events/5',
    /known event/,
  ],
  [
    'event needs its scope',
    (m) => m.eventSubscriptions.events.push('REACTION_ADDED'),
    '/eventSubscriptions/events/5',
    /reaction:read/,
  ],
  [
    'events url needed with events',
    (m) => (m.eventSubscriptions.url = ''),
    '/eventSubscriptions/url',
    /required when events/,
  ],
  ['blockInteraction url required', (m) => (m.blockInteraction = {}), '/blockInteraction/url', /required/],
  ['viewAction url valid', (m) => (m.viewAction = { url: 'javascript:alert(1)' }), '/viewAction/url', /URL/],
  ['dynamic menu onAction required', (m) => delete m.dynamicMenus[0].onAction, '/dynamicMenus/0/onAction', /required/],
  ['dynamic menu url required', (m) => delete m.dynamicMenus[0].url, '/dynamicMenus/0/url', /required/],
  [
    'home view only rich_text',
    (m) => (m.defaultHomeView.blocks[0].type = 'section'),
    '/defaultHomeView/blocks/0/type',
    /rich_text/,
  ],
  ['home view enabled required', (m) => delete m.defaultHomeView.enabled, '/defaultHomeView/enabled', /required/],
  ['helpUrl valid', (m) => (m.helpUrl = 'help'), '/helpUrl', /URL/],
  ['avatarUrl valid', (m) => (m.avatarUrl = 'data:image/png;base64,AAAA'), '/avatarUrl', /URL/],
  ['listingUrl valid', (m) => (m.listingUrl = '//x'), '/listingUrl', /URL/],
  ['offlineMessage string', (m) => (m.offlineMessage = 42), '/offlineMessage', /string/],
  ['redirect https only', (m) => (m.redirectUrls[0] = 'http://bot.example.com/redirect'), '/redirectUrls/0', /https/],
  [
    'redirect no userinfo',
    (m) => (m.redirectUrls[0] = 'https://bot.example.com@evil.com/cb'),
    '/redirectUrls/0',
    /user name/,
  ],
  ['redirect no fragment', (m) => (m.redirectUrls[0] = 'https://bot.example.com/cb#x'), '/redirectUrls/0', /fragment/],
  ['redirect no wildcard', (m) => (m.redirectUrls[0] = 'https://*.example.com/cb'), '/redirectUrls/0', /wildcard/],
  ['redirect no javascript:', (m) => (m.redirectUrls[0] = 'javascript:alert(1)'), '/redirectUrls/0', /scheme/],
  [
    'redirect canonical',
    (m) => (m.redirectUrls[0] = 'https://bot.example.com/a/../cb'),
    '/redirectUrls/0',
    /canonical/,
  ],
  [
    'redirect relative refused at registration',
    (m) => (m.redirectUrls[0] = '/redirect'),
    '/redirectUrls/0',
    /absolute/,
  ],
  ['redirect unique', (m) => m.redirectUrls.push(m.redirectUrls[0]), '/redirectUrls', /repeat/],
];

for (const [name, mutate, pointer, message] of cases) {
  t.test(`rejected: ${name}`, async (t) => {
    const m = full();
    mutate(m);
    rejects(t, m, pointer, message);
  });
}

t.test('every violation is reported at once', async (t) => {
  const m = full();
  m.shortcuts[0].name = 'x'.repeat(40);
  m.slashCommands[0].usageHint = 'h'.repeat(60);
  m.colour = 'blue';
  delete m.bot;
  const r = validateManifest(m);
  t.equal(r.ok, false);
  if (!r.ok)
    t.same(r.violations.map((v) => v.pointer).sort(), [
      '/bot',
      '/colour',
      '/shortcuts/0/name',
      '/slashCommands/0/usageHint',
    ]);
});

t.test('non-objects are refused with the root pointer', async (t) => {
  for (const v of [null, [], 'x', 3]) rejects(t, v, '');
});

t.test('R1: http is for loopback hosts unless the operator allows insecure redirects', async (t) => {
  for (const u of ['http://localhost:3000/cb', 'http://127.0.0.1/cb', 'http://[::1]:8080/cb'])
    t.same(checkRegisteredRedirect(u), {}, u);
  t.ok(checkRegisteredRedirect('http://dev.example.com/cb').error);
  t.same(checkRegisteredRedirect('http://dev.example.com/cb', { allowInsecureRedirects: true }), {});
  const m = full();
  m.redirectUrls = ['http://dev.example.com/cb'];
  t.equal(validateManifest(m, { allowInsecureRedirects: true }).ok, true);
});

t.test('R2: refused forms', async (t) => {
  for (const u of [
    'https://EXAMPLE.com/cb',
    'https://example.com',
    'https://example.com:443/cb',
    'https://exa mple.com/cb',
    'https://bücher.example/cb',
    'https://example.com/cb?code=1',
    'data:text/html,hi',
    'https://:pw@example.com/cb',
  ])
    t.ok(checkRegisteredRedirect(u).error, `${u} refused`);
  t.same(checkRegisteredRedirect('https://example.com/cb?tenant=1'), {}, 'a registered query is allowed');
});

t.test('R3: a path of / is accepted with a warning', async (t) => {
  const m = full();
  m.redirectUrls = ['https://bot.example.com/'];
  const r = validateManifest(m);
  t.equal(r.ok, true);
  if (r.ok) t.match(r.warnings, [{ pointer: '/redirectUrls/0', message: /every page/ }]);
});
