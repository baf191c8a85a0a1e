/** Issue 22 §4: a misspelt manifest field, scope or event name gets "did you mean" the one it is close to. */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { validateManifest } from '../../src/validation/manifest.js';
import { closest } from '../../src/validation/did-you-mean.js';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import { must } from '../../src/must.js';

const base = JSON.parse(fs.readFileSync(path.join(ROOT, 'examples/standup-app/manifest.json'), 'utf8')) as Record<
  string,
  unknown
>;
const problems = (m: unknown) => {
  const r = validateManifest(m);
  return r.ok ? [] : r.violations;
};

t.test('fields, at the top and inside, scopes and events', async (t) => {
  const { slashCommands, ...rest } = base;
  t.match(problems({ ...rest, slashcommands: slashCommands }), [
    { pointer: '/slashCommands', message: 'is required' },
    { pointer: '/slashcommands', message: 'is not a known field; did you mean "slashCommands"?' },
  ]);
  t.match(problems({ ...base, redirectUrl: [] }), [
    { pointer: '/redirectUrl', message: 'is not a known field; did you mean "redirectUrls"?' },
  ]);
  const shortcut = must((base.shortcuts as object[])[0]);
  t.match(problems({ ...base, shortcuts: [{ ...shortcut, displayname: 'x' }] }), [
    { pointer: '/shortcuts/0/displayname', message: 'is not a known field; did you mean "displayName"?' },
  ]);
  t.match(
    problems({
      ...base,
      scopes: {
        botScopes: ['messages:wirte', 'messages:read', 'messages:edit', 'user:read'],
        userScopes: ['chanels:read'],
      },
    }),
    [
      {
        pointer: '/scopes/botScopes/0',
        message: 'is not a known scope; did you mean "messages:write"? (see docs/protocol.md §8 for the list)',
      },
      {
        pointer: '/scopes/userScopes/0',
        message: 'is not a known scope; did you mean "channels:read"? (see docs/protocol.md §8 for the list)',
      },
    ],
  );
  t.match(problems({ ...base, eventSubscriptions: { url: 'http://127.0.0.1:8750/events', events: ['NEW_MESAGE'] } }), [
    { pointer: '/eventSubscriptions/events/0', message: 'is not a known event name; did you mean "NEW_MESSAGE"?' },
  ]);
});

t.test('no guess for a word close to nothing', async (t) => {
  t.same(problems({ ...base, colour: 'red' }), [{ pointer: '/colour', message: 'is not a known field' }]);
  t.equal(closest('xyz', ['messages:read', 'user:read']), undefined);
  t.equal(closest('scpoes', ['scopes', 'name']), 'scopes', 'two letters swapped');
  t.equal(closest('NAME', ['name']), 'name', 'case alone');
});

t.test('apps validate prints it', async (t) => {
  const file = path.join(tempDir(), 'manifest.json');
  const { slashCommands, ...rest } = base;
  fs.writeFileSync(file, JSON.stringify({ ...rest, slash_commands: slashCommands }));
  const r = await runMain(['apps', 'validate', '--file', file]);
  t.equal(r.code, 7);
  t.match(r.stderr, '  /slash_commands: is not a known field; did you mean "slashCommands"?\n');
});
