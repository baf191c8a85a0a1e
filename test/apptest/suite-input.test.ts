/**
 * Suite files are untrusted input (docs/testing.md): a size limit checked before parsing
 * (--max-suite-bytes), YAML nesting and alias expansion bounded, each refusal exit 7 naming the file
 * and the limit; the files and folders a suite names stay inside its folder, symbolic links
 * followed (--allow-outside-paths lets them out); no error quotes what a file holds.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { loadSuite, SuiteInvalid } from '../../src/apptest/suite.js';
import { SUITE_LIMITS } from '../../src/apptest/suite-input.js';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';

const MANIFEST = path.join(ROOT, 'examples/standup-app/manifest.json');
/** What a secret file outside the suite's folder holds: no output may quote any of it. */
const SECRET = 'root:*:20240:0:99999:7:::';
const NOWHERE = ['--url', 'http://127.0.0.1:1'];

const suiteOf = (app: Record<string, unknown>) =>
  JSON.stringify({ app, tests: [{ name: 'x', steps: [{ expect: 'signature-check' }] }] });

/** A folder with a secret file beside it (outside it) and the example's manifest inside. */
function layout() {
  const root = tempDir();
  const dir = path.join(root, 'suite');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(root, 'secret'), SECRET + '\n');
  fs.copyFileSync(MANIFEST, path.join(dir, 'manifest.json'));
  return { root, dir };
}

async function problems(file: string, opts?: Parameters<typeof loadSuite>[1]) {
  try {
    await loadSuite(file, opts);
  } catch (e) {
    if (e instanceof SuiteInvalid) return e.problems;
    throw e;
  }
  return [];
}

t.test('a suite larger than the limit is refused before it is parsed, naming the file and the limit', async (t) => {
  const { dir } = layout();
  const big = path.join(dir, 'big.apptest.yaml');
  // beyond the limit, and no suite: the size alone refuses it
  fs.writeFileSync(big, `name: x\nnotes: ${'x'.repeat(SUITE_LIMITS.maxBytes)}\n`);
  let r = await runMain(['test', 'big.apptest.yaml', ...NOWHERE], { cwd: dir });
  t.equal(r.code, 7);
  t.match(
    r.stderr,
    /big\.apptest\.yaml: \/: the suite file is 1,048,\d{3} bytes, more than the 1,048,576 bytes allowed/,
  );
  t.match(r.stderr, /--max-suite-bytes/);
  r = await runMain(['test', 'big.apptest.yaml', '--max-suite-bytes', String(2 * SUITE_LIMITS.maxBytes), ...NOWHERE], {
    cwd: dir,
  });
  t.equal(r.code, 7, 'a larger limit lets it be parsed: then it is refused as a suite');
  t.match(r.stderr, /\/notes: is not a known field/);
  t.notMatch(r.stderr, /bytes allowed/);
  t.match(await runMain(['test', 'big.apptest.yaml', '--max-suite-bytes', '0'], { cwd: dir }), {
    code: 2,
    stderr: /--max-suite-bytes must be a positive integer/,
  });

  fs.writeFileSync(
    path.join(dir, 'small.apptest.json'),
    suiteOf({ manifest: 'manifest.json', start: { command: 'x' } }),
  );
  r = await runMain(['test', 'small.apptest.json', '--max-suite-bytes', '100', ...NOWHERE], { cwd: dir });
  t.equal(r.code, 7, 'the limit applies to the manifest the suite names too');
  t.match(r.stderr, /the suite file is \d+ bytes, more than the 100 bytes allowed/);
  t.equal(
    (await problems(path.join(dir, 'small.apptest.json'), { maxBytes: 1000 }))[0]?.message,
    `the manifest ${path.join(dir, 'manifest.json')} is ${fs.statSync(MANIFEST).size.toLocaleString('en-US')} bytes, more than the 1,000 bytes allowed (--max-suite-bytes changes the limit)`,
  );

  t.same(
    await problems(path.join(dir, 'small.apptest.json'), { maxBytes: 1e12 }),
    [],
    'a limit far beyond the file reserves no memory for it',
  );

  if (fs.existsSync('/dev/zero')) {
    // a file whose size says nothing (a device, a pipe) is read no further than the limit
    fs.symlinkSync('/dev/zero', path.join(dir, 'zero.apptest.yaml'));
    t.match(await problems(path.join(dir, 'zero.apptest.yaml')), [
      { pointer: '', message: /the suite file holds more than the 1,048,576 bytes allowed/ },
    ]);
  }
});

t.test('YAML aliases and nesting are bounded: each refusal is exit 7 naming the file and the limit', async (t) => {
  const { dir } = layout();
  const nine = (x: string) => `[${Array(9).fill(x).join(', ')}]`;
  let bomb = `a: &a ${nine('"lol"')}\n`;
  for (let i = 0; i < 9; i++) bomb += `b${i}: &b${i} ${nine(i ? `*b${i - 1}` : '*a')}\n`;
  fs.writeFileSync(path.join(dir, 'bomb.apptest.yaml'), bomb);
  fs.writeFileSync(path.join(dir, 'dashes.apptest.yaml'), `${'- '.repeat(100_000)}x\n`);
  fs.writeFileSync(path.join(dir, 'flow.apptest.yaml'), `${'['.repeat(100_000)}${']'.repeat(100_000)}\n`);
  fs.writeFileSync(path.join(dir, 'deep.apptest.json'), `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
  const cases: Array<[string, RegExp]> = [
    ['bomb.apptest.yaml', /bomb\.apptest\.yaml: \/: expands its aliases \(\*name\) beyond the 1,000 nodes/],
    ['dashes.apptest.yaml', /dashes\.apptest\.yaml: \/: nests mappings and lists deeper than the 64 levels allowed/],
    ['flow.apptest.yaml', /flow\.apptest\.yaml: \/: nests mappings and lists deeper than the 64 levels allowed/],
    ['deep.apptest.json', /deep\.apptest\.json: \/: nests objects and lists deeper than the 64 levels allowed/],
  ];
  for (const [file, said] of cases) {
    const r = await runMain(['test', file, ...NOWHERE], { cwd: dir });
    t.equal(r.code, 7, `${file}: exit 7`);
    t.match(r.stderr, said, `${file}: the file and the limit`);
    t.notMatch(r.stderr, /internal error|call stack|resource exhaustion/i, `${file}: none of the parser's own words`);
  }
  // a few aliases are fine: the limit is on their expansion
  fs.writeFileSync(
    path.join(dir, 'anchors.apptest.yaml'),
    `app: {manifest: manifest.json, start: {command: x}}\nsteps: &s [{expect: signature-check}]\ntests: [{name: a, steps: *s}, {name: b, steps: *s}]\n`,
  );
  t.match(await problems(path.join(dir, 'anchors.apptest.yaml')), [
    { pointer: '/steps', message: /not a known field/ },
  ]);
});

t.test('the files and folders a suite names stay in its folder, symbolic links followed', async (t) => {
  const { root, dir } = layout();
  const outside = path.join(root, 'secret');
  fs.symlinkSync(outside, path.join(dir, 'link.json'));
  fs.symlinkSync(root, path.join(dir, 'up'));
  fs.mkdirSync(path.join(dir, 'app'));
  const write = (name: string, app: Record<string, unknown>) =>
    fs.writeFileSync(path.join(dir, name), suiteOf({ start: { command: 'x' }, ...app }));
  write('dotdot.apptest.json', { manifest: '../secret' });
  write('absolute.apptest.json', { manifest: outside });
  write('link.apptest.json', { manifest: 'link.json' });
  write('linked-folder.apptest.json', { manifest: 'up/secret' });
  write('cwd.apptest.json', { manifest: 'manifest.json', start: { command: 'x', cwd: '..' } });
  write('cwd-link.apptest.json', { manifest: 'manifest.json', start: { command: 'x', cwd: 'up' } });
  write('inside.apptest.json', { manifest: './manifest.json', start: { command: 'x', cwd: 'app' } });
  // the suite itself through a link from another folder: its paths are still those of the folder it is in
  const elsewhere = path.join(root, 'elsewhere');
  fs.mkdirSync(elsewhere);
  fs.symlinkSync(path.join(dir, 'dotdot.apptest.json'), path.join(elsewhere, 'via-link.apptest.json'));

  const cases: Array<[string, string, RegExp]> = [
    ['dotdot.apptest.json', '/app/manifest', /^\.\.\/secret is outside the suite's folder/],
    ['absolute.apptest.json', '/app/manifest', /is outside the suite's folder/],
    ['link.apptest.json', '/app/manifest', /^link\.json leads outside the suite's folder through a symbolic link/],
    [
      'linked-folder.apptest.json',
      '/app/manifest',
      /^up\/secret leads outside the suite's folder through a symbolic link/,
    ],
    ['cwd.apptest.json', '/app/start/cwd', /^\.\. is outside the suite's folder/],
    ['cwd-link.apptest.json', '/app/start/cwd', /^up leads outside the suite's folder through a symbolic link/],
  ];
  for (const [file, pointer, message] of cases) {
    const p = await problems(path.join(dir, file));
    t.match(p, [{ pointer, message }], file);
    t.equal(p.length, 1, `${file}: that one problem`);
  }
  t.match(await problems(path.join(elsewhere, 'via-link.apptest.json')), [
    { pointer: '/app/manifest', message: /is outside the suite's folder/ },
  ]);
  t.same(await problems(path.join(dir, 'inside.apptest.json')), [], 'a manifest and a folder inside are fine');

  const r = await runMain(['test', '.', ...NOWHERE], { cwd: dir });
  t.equal(r.code, 7);
  t.match(r.stderr, /--allow-outside-paths lets them out/);
  t.notMatch(r.stdout + r.stderr, /root:|20240|99999/, 'nothing of the secret file');

  // with the flag, the file is read: and still not quoted
  const allowed = await runMain(['test', 'link.apptest.json', '--allow-outside-paths', ...NOWHERE], { cwd: dir });
  t.equal(allowed.code, 7);
  t.match(allowed.stderr, /\/app\/manifest: the manifest .*link\.json is not valid JSON/);
  t.notMatch(allowed.stdout + allowed.stderr, /root:|20240|99999/, 'nothing of the secret file');
  t.same(await problems(path.join(dir, 'cwd.apptest.json'), { allowOutside: true }), [], 'nor is the folder refused');
});

t.test('no error quotes what a file holds: the suite, its manifest, a manifest for --init', async (t) => {
  const { dir } = layout();
  const leaks = /root|20240|s3cr3t/;
  fs.writeFileSync(path.join(dir, 'shadow.apptest.json'), SECRET);
  fs.writeFileSync(path.join(dir, 'shadow2.apptest.json'), `{"app": {"manifest": root:*:20240}}`);
  fs.writeFileSync(path.join(dir, 'tag.apptest.yaml'), `app: !s3cr3t {}\ntests: "\\q s3cr3t"\n`);
  fs.writeFileSync(path.join(dir, 'bad-manifest.json'), `{"name": root:*:20240}`);
  fs.writeFileSync(
    path.join(dir, 'm.apptest.json'),
    suiteOf({ manifest: 'bad-manifest.json', start: { command: 'x' } }),
  );
  for (const file of ['shadow.apptest.json', 'shadow2.apptest.json', 'tag.apptest.yaml', 'm.apptest.json']) {
    const r = await runMain(['test', file, ...NOWHERE], { cwd: dir });
    t.equal(r.code, 7, `${file}: exit 7`);
    t.match(r.stderr, /not valid (JSON|YAML)/, `${file}: why`);
    t.notMatch(r.stdout + r.stderr, leaks, `${file}: nothing of the file`);
  }
  t.match(await problems(path.join(dir, 'shadow2.apptest.json')), [
    { at: /shadow2\.apptest\.json:(1:22)?$/, message: 'is not valid JSON' },
  ]);
  t.match(await problems(path.join(dir, 'tag.apptest.yaml')), [
    { at: /tag\.apptest\.yaml:2:9$/, message: 'is not valid YAML: a double-quoted string has an invalid escape' },
  ]);
  const init = await runMain(['test', '--init', '--manifest', 'bad-manifest.json'], { cwd: dir });
  t.equal(init.code, 7);
  t.match(init.stderr, /the manifest .*bad-manifest\.json is not valid JSON/);
  t.notMatch(init.stderr, leaks);
});
