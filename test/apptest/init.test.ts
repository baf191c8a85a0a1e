/**
 * `appreg test --init`: a starter suite from a manifest, one test per slash command, shortcut,
 * dynamic menu and subscribed event plus the signature check, with the start command guessed from
 * the app's folder; run against the example, it passes.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { runMain } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';

t.test("--init on the example's manifest writes a suite that passes against the example", async (t) => {
  const root = copyExamples();
  const dir = path.join(root, 'examples/standup-app');
  fs.rmSync(path.join(dir, 'standup.apptest.yaml'));
  const r = await runMain(['test', '--init', '--manifest', 'examples/standup-app/manifest.json'], { cwd: root });
  t.equal(r.code, 0, r.code === 0 ? 'exit 0' : r.stderr);
  t.match(
    r.stdout,
    /wrote examples\/standup-app\/standup\.apptest\.json: 5 tests\nthe app is started with "node app\.mjs" in examples\/standup-app/,
  );
  const suite = JSON.parse(fs.readFileSync(path.join(dir, 'standup.apptest.json'), 'utf8'));
  t.match(
    suite,
    {
      $schema: 'https://appreg.dev/schemas/test-suite.schema.json',
      name: 'Standup',
      app: {
        manifest: 'manifest.json',
        start: { command: 'node app.mjs', env: { STANDUP_TOKENS_FILE: '${run.dir}/standup-tokens.json' } },
      },
    },
    "the app, its manifest beside the suite, started with node app.mjs, its tokens in the run's folder",
  );
  t.match(r.stdout, /its tokens are kept in the run's own folder: app\.start\.env sets STANDUP_TOKENS_FILE\n/);
  t.same(
    suite.tests.map((x: { name: string }) => x.name),
    [
      '/standup answers in time',
      'the shortcut Start standup answers in time',
      'the menu pick_mood answers in time',
      'NEW_MESSAGE is accepted',
      'calls that are not properly signed are refused',
    ],
  );
  const run = await runMain(['test', 'examples/standup-app', '--reporter', 'json'], { cwd: root });
  t.equal(run.code, 0, run.code === 0 ? 'exit 0' : run.stdout.slice(0, 3000));
  t.match(JSON.parse(run.stdout), { passed: true, counts: { tests: 5, passed: 5 } }, 'the starter suite passes');
  t.notOk(fs.existsSync(path.join(dir, 'tokens.json')), "the run's tokens were not written beside the app");

  const again = await runMain(['test', '--init', '--manifest', 'examples/standup-app/manifest.json'], { cwd: root });
  t.equal(again.code, 2, 'it does not overwrite a suite');
  t.match(again.stderr, /standup\.apptest\.json exists: give another --output, or --force/);
  t.equal(
    (await runMain(['test', '--init', '--manifest', 'examples/standup-app/manifest.json', '--force'], { cwd: root }))
      .code,
    0,
    '--force overwrites it',
  );
});

t.test('--init writes YAML for a .yaml --output, a message shortcut gets a message to use, --json', async (t) => {
  const root = copyExamples();
  const m = JSON.parse(fs.readFileSync(path.join(root, 'examples/standup-app/manifest.json'), 'utf8'));
  m.shortcuts.push({
    shortcutType: 'ON_MESSAGE',
    url: 'http://127.0.0.1:8750/shortcut',
    name: 'remind',
    displayName: 'Remind me',
  });
  const dir = path.join(root, 'plain');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(m));
  const ok = await runMain(['test', '--init', '--output', 'ci/app.apptest.yaml', '--json'], { cwd: dir });
  t.equal(ok.code, 0, ok.code === 0 ? 'exit 0' : ok.stderr);
  t.match(
    JSON.parse(ok.stdout),
    { file: path.join(dir, 'ci/app.apptest.yaml'), tests: 6, start: null },
    'with --json: the file, its tests, no start command found (its folder is made)',
  );
  const text = fs.readFileSync(path.join(dir, 'ci/app.apptest.yaml'), 'utf8');
  t.match(text, /^# yaml-language-server: \$schema=https:\/\/appreg\.dev\/schemas\/test-suite\.schema\.json\n/);
  const suite = parse(text);
  t.equal(suite.app.manifest, '../manifest.json', 'the manifest relative to the suite');
  t.equal(suite.app.start.command, 'node app.js', 'a placeholder when nothing tells how the app starts');
  t.equal(suite.app.start.env, undefined, 'no source: no variable for its tokens');
  t.same(suite.tests.find((x: { name: string }) => /Remind me/.test(x.name)).steps, [
    { say: 'a message to use Remind me on', save: 'message' },
    { shortcut: 'remind', message: '${message}' },
    { expect: 'answered' },
  ]);
  t.match(await runMain(['test', '--init', '--manifest', 'nope.json'], { cwd: dir }), {
    code: 2,
    stderr: /cannot read the manifest nope\.json: no such file\n$/,
  });
});

t.test("--init follows the app's relative imports for the variable of its tokens (the socket example's)", async (t) => {
  const root = copyExamples();
  const r = await runMain(
    [
      'test',
      '--init',
      '--manifest',
      'examples/standup-socket/manifest.json',
      '--output',
      'socket.apptest.json',
      '--json',
    ],
    { cwd: root },
  );
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout).env, { STANDUP_TOKENS_FILE: '${run.dir}/standup-tokens.json' });
  const suite = JSON.parse(fs.readFileSync(path.join(root, 'socket.apptest.json'), 'utf8'));
  t.same(suite.app.start.env, { STANDUP_TOKENS_FILE: '${run.dir}/standup-tokens.json' });
});
