/**
 * Issue 34 §9, errors that say enough: an unreadable file in words ("no such file", not ENOENT), a file that is not
 * JSON with the line and column of its mistake, a channel that is not found named, and a manifest the daemon refuses
 * listed once (its headline no longer repeats the first problem the lines below list).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, manifest, tempDir } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';

const work = tempDir('appreg-error-words-');
t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
const bad = path.join(work, 'bad.json');
fs.writeFileSync(bad, '{\n  "name": "x",\n  }\n');

t.test('a file that is missing, or a folder: said in words, exit 2', async (t) => {
  const missing = await runMain(['apps', 'validate', '--file', path.join(work, 'nope.json')]);
  t.equal(missing.code, 2);
  t.equal(missing.stderr, `appreg: cannot read ${path.join(work, 'nope.json')}: no such file\n`);
  const folder = await runMain(['apps', 'validate', '--file', work]);
  t.equal(folder.code, 2);
  t.equal(folder.stderr, `appreg: cannot read ${work}: it is a folder, not a file\n`);
});

t.test('a file that is not JSON: where, as a line and column', async (t) => {
  const r = await runMain(['apps', 'validate', '--file', bad]);
  t.equal(r.code, 7);
  t.equal(r.stderr, `appreg: ${bad} is not valid JSON: Expected double-quoted property name at line 3, column 3\n`);
  const init = await runMain(['test', '--init', '--manifest', bad]);
  t.equal(init.code, 7);
  // appreg test reads the manifest as untrusted input: the place, never the parser's words (they may quote the file)
  t.match(init.stderr, /is not valid JSON \(.*bad\.json:3:3\)\n$/);
});

t.test('against a daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  await t.test('a channel that is not found is named', async (t) => {
    const list = await runMain([...g, 'messages', 'list', 'nosuch']);
    t.equal(list.code, 4);
    t.equal(list.stderr, 'appreg: Channel nosuch not found. (not_found)\n');
    const say = await runMain([...g, 'say', '#nosuch', 'hello', '--json']);
    t.match(JSON.parse(say.stdout), { error: { code: 'not_found', message: 'Channel #nosuch not found.' } });
  });

  await t.test('apps create of an invalid manifest: the headline, then each problem once', async (t) => {
    const file = path.join(work, 'invalid.json');
    fs.writeFileSync(file, JSON.stringify({ ...manifest(), bot: undefined, displayName: 5 }));
    const r = await runMain([...g, 'apps', 'create', '--file', file]);
    t.equal(r.code, 4);
    t.equal(
      r.stderr,
      'appreg: The manifest has 2 problems (invalid_manifest):\n  /bot: is required\n  /displayName: must be string\n',
    );
    const one = path.join(work, 'one.json');
    fs.writeFileSync(one, JSON.stringify({ ...manifest(), bot: undefined }));
    const single = await runMain([...g, 'apps', 'create', '--file', one, '--json']);
    t.match(
      JSON.parse(single.stdout),
      { error: { code: 'invalid_manifest', message: 'The manifest has 1 problem: /bot is required.' } },
      '--json: the daemon’s error as it is',
    );
    t.equal(single.stderr, 'appreg: The manifest has 1 problem (invalid_manifest):\n  /bot: is required\n');
  });
});
