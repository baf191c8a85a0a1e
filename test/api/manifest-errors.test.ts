/**
 * The 400 invalid_manifest bodies of the management API, byte for byte: every problem of a manifest
 * at once (the schema's and the rules beyond it), in one order and one wording, on create and update
 * alike (a PUT to an app that does not exist too: the manifest is checked first); the warnings header of a
 * manifest accepted with a warning, and the operator's allowance of insecure redirect URLs.
 */
import t from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';

const NOT_AN_OBJECT = {
  code: 'invalid_manifest',
  message: 'The manifest has 1 problem: / the manifest must be a JSON object.',
  details: [{ pointer: '', message: 'the manifest must be a JSON object' }],
};

const cases: Array<[string, unknown, unknown]> = [
  ['a JSON array', [], NOT_AN_OBJECT],
  ['JSON null', null, NOT_AN_OBJECT],
  ['a string', 'manifest', NOT_AN_OBJECT],
  [
    'every kind of problem at once',
    manifest({
      name: undefined,
      shortcutz: [],
      displayName: 'x'.repeat(81),
      scopes: { botScopes: ['messages:raed'], userScopes: [] },
      shortcuts: [
        { shortcutType: 'GLOBAL', url: 'http://127.0.0.1:9/s', name: 'same', displayName: 'A' },
        { shortcutType: 'LOCAL', url: 'not a url', name: 'Same', displayName: 'B', extra: 1 },
      ],
      slashCommands: [
        { command: 'no slash', url: 'http://127.0.0.1:9/c' },
        { command: '/c', url: 'http://127.0.0.1:9/c' },
        { command: '/C', url: 'http://127.0.0.1:9/c' },
      ],
      eventSubscriptions: { url: '', events: ['NEW_MESAGE', 'CHANNEL_CREATED', 'REACTION_ADDED'] },
      defaultHomeView: { enabled: true, blocks: [{ type: 'section', elements: [] }] },
      redirectUrls: ['http://example.com/cb', 'https://example.com/#frag', 7],
      bot: 'yes',
    }),
    {
      code: 'invalid_manifest',
      message: 'The manifest has 19 problems: /name is required (and more in details).',
      details: [
        { pointer: '/name', message: 'is required' },
        { pointer: '/shortcutz', message: 'is not a known field; did you mean "shortcuts"?' },
        { pointer: '/displayName', message: 'must be at most 80 characters' },
        { pointer: '/bot', message: 'must be boolean' },
        {
          pointer: '/scopes/botScopes/0',
          message: 'is not a known scope; did you mean "messages:read"? (see docs/protocol.md §8 for the list)',
        },
        { pointer: '/shortcuts/1/extra', message: 'is not a known field' },
        { pointer: '/shortcuts/1/shortcutType', message: 'must be one of "ON_MESSAGE", "GLOBAL"' },
        { pointer: '/shortcuts/1/url', message: 'must be a valid http(s) URL' },
        { pointer: '/slashCommands/0/command', message: 'must start with / and contain no spaces' },
        { pointer: '/eventSubscriptions/events/0', message: 'is not a known event name; did you mean "NEW_MESSAGE"?' },
        { pointer: '/defaultHomeView/blocks/0/type', message: 'only blocks of type rich_text are allowed' },
        { pointer: '/redirectUrls/2', message: 'must be string' },
        {
          pointer: '/shortcuts/1/name',
          message: 'must be unique within the app (shortcut "Same" is also at /shortcuts/0)',
        },
        {
          pointer: '/slashCommands/2/command',
          message: 'must be unique within the app (command "/C" is also at /slashCommands/1)',
        },
        {
          pointer: '/eventSubscriptions/events/1',
          message: 'needs the scope channels:read in scopes.botScopes or scopes.userScopes',
        },
        {
          pointer: '/eventSubscriptions/events/2',
          message: 'needs the scope reaction:read in scopes.botScopes or scopes.userScopes',
        },
        { pointer: '/eventSubscriptions/url', message: 'is required when events are subscribed' },
        {
          pointer: '/redirectUrls/0',
          message:
            'must use https; http is allowed only to localhost, 127.0.0.1 or [::1] (the operator can allow insecure redirect URLs for development)',
        },
        { pointer: '/redirectUrls/1', message: 'must not contain a fragment (#)' },
      ],
    },
  ],
  [
    'a wrong type at the top',
    manifest({ scopes: 'all', eventSubscriptions: [] }),
    {
      code: 'invalid_manifest',
      message: 'The manifest has 2 problems: /scopes must be object (and more in details).',
      details: [
        { pointer: '/scopes', message: 'must be object' },
        { pointer: '/eventSubscriptions', message: 'must be object' },
      ],
    },
  ],
  [
    'rules alone (the schema passes)',
    manifest({ redirectUrls: ['http://example.com/cb'] }),
    {
      code: 'invalid_manifest',
      message:
        'The manifest has 1 problem: /redirectUrls/0 must use https; http is allowed only to localhost, 127.0.0.1 or [::1] (the operator can allow insecure redirect URLs for development).',
      details: [
        {
          pointer: '/redirectUrls/0',
          message:
            'must use https; http is allowed only to localhost, 127.0.0.1 or [::1] (the operator can allow insecure redirect URLs for development)',
        },
      ],
    },
  ],
];

async function firstApp(d: TestDaemon): Promise<string> {
  const res = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() });
  return ((await res.json()) as { id: string }).id;
}

t.test('invalid_manifest bodies, byte for byte, on create and update', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const appId = await firstApp(d);
  for (const [name, value, expected] of cases) {
    for (const [how, path, method] of [
      ['create', `${d.mgmt}/apps`, 'POST'],
      ['update', `${d.mgmt}/apps/${appId}`, 'PUT'],
    ] as const) {
      const res = await d.api(path, { method, json: value });
      t.equal(res.status, 400, `${name} (${how}): 400`);
      t.equal(await res.text(), JSON.stringify(expected), `${name} (${how}): the body`);
    }
  }
  const missing = await d.api(`${d.mgmt}/apps/app_missing`, { method: 'PUT', json: [] });
  t.equal(await missing.text(), JSON.stringify(NOT_AN_OBJECT), 'the manifest is checked before the app is looked up');
  const none = await d.api(`${d.mgmt}/apps`, { method: 'POST' });
  t.equal(await none.text(), JSON.stringify(NOT_AN_OBJECT), 'no body at all is not an object');
  t.equal(((await (await d.api(`${d.mgmt}/apps/mine`)).json()) as unknown[]).length, 1, 'no app was made');
  const got = (await (await d.api(`${d.mgmt}/apps/mine/${appId}`)).json()) as { displayName: string };
  t.equal(got.displayName, 'Test App', 'and the app was not changed');
});

t.test('a manifest accepted with a warning, and lengths counted in characters', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ redirectUrls: ['https://example.com/'], displayName: '😀'.repeat(80) }),
  });
  t.equal(res.status, 201);
  t.equal(
    res.headers.get('x-appreg-warnings'),
    JSON.stringify([
      {
        pointer: '/redirectUrls/0',
        message: 'a path of / matches every page of the site; register the exact callback path instead',
      },
    ]),
  );
  t.equal(((await res.json()) as { displayName: string }).displayName, '😀'.repeat(80));
});

t.test('the operator may allow insecure redirect URLs', async (t) => {
  const d = await startTestDaemon({ config: { allowInsecureRedirects: true } });
  t.teardown(() => d.stop());
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ redirectUrls: ['http://example.com/cb'] }),
  });
  t.equal(res.status, 201);
  const appId = ((await res.json()) as { id: string }).id;
  const upd = await d.api(`${d.mgmt}/apps/${appId}`, {
    method: 'PUT',
    json: manifest({ redirectUrls: ['http://example.com/other'] }),
  });
  t.equal(upd.status, 200);
});
