/**
 * Suite files (docs/testing.md): JSON or YAML, checked before anything starts, every problem with
 * its JSON pointer and its line; references checked against what earlier steps save; the CLI's
 * exit codes for a bad suite (7), no suite or an unreadable one (2).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { loadSuite, SuiteInvalid } from '../../src/apptest/suite.js';
import { resolveDeep, resolveText, RefError } from '../../src/apptest/refs.js';
import { pointedAt } from '../../src/apptest/setup.js';
import { startOrder } from '../../src/apptest/runner.js';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';

const MANIFEST = path.join(ROOT, 'examples/standup-app/manifest.json');

function write(dir: string, name: string, text: string): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
}

async function problems(file: string): Promise<Array<{ at: string; pointer: string; message: string }>> {
  try {
    await loadSuite(file);
  } catch (e) {
    if (e instanceof SuiteInvalid) return e.problems;
    throw e;
  }
  return [];
}

t.test('the example suite and a minimal JSON one load', async (t) => {
  const s = await loadSuite(path.join(ROOT, 'examples/standup-app/standup.apptest.yaml'));
  t.equal(s.name, 'Standup');
  t.ok(s.tests.length >= 6);
  t.same(s.install, { users: ['owner', 'dev'] });
  t.equal(s.manifest?.name, 'standup', 'the manifest file is read with the suite');
  const dir = tempDir();
  fs.copyFileSync(MANIFEST, path.join(dir, 'manifest.json'));
  const f = write(
    dir,
    'min.apptest.json',
    JSON.stringify({
      app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } },
      tests: [{ name: 'x', steps: [{ expect: 'signature-check' }] }],
    }),
  );
  const m = await loadSuite(f);
  t.equal(m.name, 'min', 'named after its file');
  t.same(m.install, { users: ['owner'] }, 'the owner installs it by default');
});

t.test('every problem at once, with its pointer and its line', async (t) => {
  const dir = tempDir();
  fs.copyFileSync(MANIFEST, path.join(dir, 'manifest.json'));
  const f = write(
    dir,
    'bad.apptest.yaml',
    `app:
  manifest: manifest.json
  start:
    command: node app.mjs
    colour: red
users:
  dev: {}
tests:
  - name: one
    steps:
      - say: /standup
        as: alice
      - clik: Join
      - click: Join
        say: hi
      - expect: mesage
      - expect: message
        text: /(unclosed/
      - expect: updated
        message: \${standup}
  - name: one
    steps:
      - say: hello
        save: hi
      - expect: message
        thread: \${hi.id}
        within: 0
`,
  );
  const p = await problems(f);
  const find = (pointer: string) => p.find((x) => x.pointer === pointer);
  t.match(
    find('/app/start/colour'),
    { message: /is not a known field/, at: `${f}:5:5` },
    'an unknown field, at its line',
  );
  t.match(find('/tests/0/steps/0/as'), { message: /not a user of this suite: owner, dev/ });
  t.match(find('/tests/0/steps/1'), { message: /needs one of say, click.*did you mean "click"/ });
  t.match(find('/tests/0/steps/2'), { message: /has say and click: a step does one thing/ });
  t.match(find('/tests/0/steps/3/expect'), { message: /must be one of .*did you mean "message"/ });
  t.match(find('/tests/0/steps/4/text'), { message: /not a valid regular expression/ });
  t.match(find('/tests/0/steps/5/message'), { message: /\$\{standup\}: no earlier step of this test saves standup/ });
  t.match(find('/tests/1/name'), { message: /must be unique in the suite/ });
  t.match(find('/tests/1/steps/1/within'), { message: /must be at least 1/, at: `${f}:27:9` });
  t.notOk(
    p.some((x) => x.pointer.startsWith('/tests/1/steps/1/thread')),
    'a saved name may be referred to later in its test',
  );
  t.equal(p.length, 9, p.map((x) => `${x.pointer}: ${x.message}`).join('\n'));
});

t.test('references outside steps, app rules, the manifest and files that do not parse', async (t) => {
  const dir = tempDir();
  fs.copyFileSync(MANIFEST, path.join(dir, 'manifest.json'));
  const suite = (app: unknown, extra = {}) =>
    JSON.stringify({ app, tests: [{ name: 'x', steps: [{ expect: 'no-failed-deliveries' }] }], ...extra });
  let p = await problems(
    write(
      dir,
      'a.apptest.json',
      suite({
        manifest: { fromUrl: 'http://127.0.0.1:5000' },
        start: { command: 'x', env: { A: '${test.channel}', B: '${run.dri}' } },
      }),
    ),
  );
  t.match(
    p,
    [
      { pointer: '/app/start/env/A', message: /no test here/ },
      { pointer: '/app/start/env/B', message: /run has dir, id; did you mean "dir"/ },
      { pointer: '/app/manifest', message: /cannot serve its manifest first/ },
    ].map((x) => ({ ...x })),
  );
  p = await problems(write(dir, 'b.apptest.json', suite({ url: 'http://127.0.0.1:5000', manifest: 'manifest.json' })));
  t.match(p.map((x) => x.pointer).sort(), ['/app/id', '/app/manifest']);
  p = await problems(write(dir, 'c.apptest.json', suite({ manifest: 'nope.json', start: { command: 'x' } })));
  t.match(p, [{ pointer: '/app/manifest', message: /cannot read the manifest .*nope\.json: no such file/ }]);
  write(dir, 'broken.json', JSON.stringify({ name: 'x' }));
  p = await problems(write(dir, 'd.apptest.json', suite({ manifest: 'broken.json', start: { command: 'x' } })));
  t.match(p, [{ pointer: '/app/manifest', message: /is invalid: \/displayName is required/ }]);
  p = await problems(write(dir, 'e.apptest.yaml', 'app:\n  manifest: [unclosed\ntests: []\n'));
  t.match(p[0], { at: new RegExp(`e\\.apptest\\.yaml:\\d+:\\d+$`), message: /is not valid YAML/ });
  p = await problems(write(dir, 'f.apptest.json', '{"app": '));
  t.match(p[0], { message: /is not valid JSON/ });
  p = await problems(
    write(
      dir,
      'g.apptest.json',
      suite({ manifest: 'manifest.json', start: { command: 'x' } }, { install: { users: ['bob'], extra: 1 } }),
    ),
  );
  t.match(p.map((x) => x.pointer).sort(), ['/install/extra', '/install/users/0']);
});

t.test('references resolve to values, into text, and say what is missing', async (t) => {
  const saved: Record<string, unknown> = {
    standup: { id: 'msg_1', text: 'Sprint 12', blocks: [{ n: 1 }] },
    opts: [{ label: 'Good', value: 'good' }],
  };
  const scope = (root: string) => (root === 'env' ? { HOME: '/home/x' } : saved[root]);
  t.same(resolveText('${standup}', scope), saved.standup, 'a whole reference is the value itself');
  t.equal(resolveText('${standup.text}!', scope), 'Sprint 12!');
  t.equal(resolveText('id ${standup} in text', scope), 'id msg_1 in text', 'an object with an id is its id in text');
  t.equal(resolveText('${opts.0.value}', scope), 'good');
  t.equal(resolveText('$${standup} stays', scope), '${standup} stays', '$${ is a literal');
  t.equal(resolveText('${env.HOME}/tokens.json', scope), '/home/x/tokens.json');
  t.same(resolveDeep({ a: ['${standup.id}', 3] }, scope), { a: ['msg_1', 3] });
  t.throws(() => resolveText('${env.NOPE}', scope), new RefError('${env.NOPE}: NOPE is not set in the environment'));
  t.throws(() => resolveText('${standup.nope}', scope), /standup has no field nope \(it has id, text, blocks\)/);
  t.throws(() => resolveText('${a b}', scope), /is not a reference/);
});

t.test("the manifest's URLs on this machine are pointed at the app's port", async (t) => {
  const m = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
  const p = pointedAt({ ...m, helpUrl: 'https://example.com/help' }, 41234) as typeof m;
  t.equal(p.slashCommands[0].url, 'http://127.0.0.1:41234/slash');
  t.equal(p.redirectUrls[0], 'http://127.0.0.1:41234/redirect');
  t.equal(p.eventSubscriptions.url, 'http://127.0.0.1:41234/events');
  t.equal(p.helpUrl, 'https://example.com/help', 'other hosts as they are');
  t.equal(p.$schema, m.$schema);
});

t.test(
  'the command: exit 7 for a bad suite, 2 for no suite, a missing path or bad options; nothing started',
  async (t) => {
    const dir = tempDir();
    fs.copyFileSync(MANIFEST, path.join(dir, 'manifest.json'));
    write(
      dir,
      'bad.apptest.json',
      JSON.stringify({
        app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } },
        tests: [{ name: 'x', steps: [{ expect: 'ack', txt: 'x' }] }],
      }),
    );
    const bad = await runMain(['test', '--json'], { cwd: dir });
    t.equal(bad.code, 7);
    t.match(
      bad.stderr,
      /bad\.apptest\.json:\d+:\d+ \/tests\/0\/steps\/0\/txt: is not a known field; did you mean "text"\?/,
    );
    t.match(JSON.parse(bad.stdout), {
      exitCode: 7,
      error: { code: 'invalid_suite', details: [{ pointer: '/tests/0/steps/0/txt', file: String }] },
    });
    const empty = tempDir();
    t.match(await runMain(['test'], { cwd: empty }), { code: 2, stderr: /no suite files .*--init/ });
    t.match(await runMain(['test', 'nowhere'], { cwd: empty }), { code: 2, stderr: /nowhere: no such file or folder/ });
    t.match(await runMain(['test', '--reporter', 'xml'], { cwd: dir }), {
      code: 2,
      stderr: /--reporter must be one of pretty, tap, junit, json/,
    });
    t.match(await runMain(['test', '--jobs', '0'], { cwd: dir }), {
      code: 2,
      stderr: /--jobs must be a positive integer/,
    });
    t.match(await runMain(['test', '--grep', '('], { cwd: dir }), {
      code: 2,
      stderr: /--grep is not a valid regular expression/,
    });
    t.match(await runMain(['test', '--manifest', 'm.json'], { cwd: dir }), {
      code: 2,
      stderr: /--manifest is for --init/,
    });
    const ok = tempDir();
    fs.copyFileSync(MANIFEST, path.join(ok, 'manifest.json'));
    write(
      ok,
      'x.apptest.json',
      JSON.stringify({
        app: { manifest: 'manifest.json', start: { command: 'node app.mjs' } },
        tests: [{ name: 'x', steps: [{ expect: 'signature-check' }] }],
      }),
    );
    t.match(await runMain(['test', '--grep', 'nothing like it'], { cwd: ok }), {
      code: 2,
      stderr: /no test matches --grep/,
    });
    write(
      ok,
      'y.apptest.json',
      JSON.stringify({
        app: { url: 'http://127.0.0.1:9', id: 'app_1' },
        tests: [{ name: 'x', steps: [{ expect: 'signature-check' }] }],
      }),
    );
    t.match(await runMain(['test', 'y.apptest.json'], { cwd: ok }), {
      code: 2,
      stderr: /already running .*give that daemon with --url/,
    });
  },
);

t.test("side by side, the tests that must wait longest start first; one at a time, in the suite's order", async (t) => {
  const s = await loadSuite(path.join(ROOT, 'examples/standup-app/standup.apptest.yaml'));
  const names = (list: typeof s.tests) => list.map((x) => x.name);
  t.same(names(startOrder(s.tests, s, 1)), names(s.tests));
  const side = names(startOrder(s.tests, s, 4));
  t.same(
    side.slice(0, 2),
    ['closing the modal posts nothing', 'a message without the mention gets no reply'],
    'the two that wait out a budget first',
  );
  t.same(
    side.slice(2),
    names(s.tests).filter((n) => !side.slice(0, 2).includes(n)),
    "the others in the suite's order",
  );
});
