/**
 * A test that needs a system component (test/helpers/system-component.ts): found when
 * present, skipped with one line when missing, a failure when missing under CI; and the
 * browser test itself, run as its own process against a Chromium path that does not exist.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { findSystemComponent, isCi, testNeeding } from '../helpers/system-component.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-syscomp-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
const missing = path.join(tmp, 'no-such-dir', 'chromium');
const component = { path: missing, envVar: 'APPREG_TEST_COMPONENT', install: 'apt-get install chromium' };

t.test('CI is on for CI=true or 1, off when unset, empty, 0 or false', async (t) => {
  t.equal(isCi({ CI: 'true' }), true);
  t.equal(isCi({ CI: '1' }), true);
  t.equal(isCi({}), false);
  t.equal(isCi({ CI: '' }), false);
  t.equal(isCi({ CI: '0' }), false);
  t.equal(isCi({ CI: 'false' }), false);
});

t.test('a missing component: one line naming the path and the install command', async (t) => {
  t.same(findSystemComponent(component, {}), {
    found: false,
    underCi: false,
    message: `${missing} not found (apt-get install chromium); .ci/run installs it`,
  });
});

t.test('a missing component under CI is marked as a failure, with the reason', async (t) => {
  const a = findSystemComponent(component, { CI: 'true' });
  t.equal(a.found, false);
  if (a.found) return;
  t.equal(a.underCi, true);
  t.match(a.message, `${missing} not found (apt-get install chromium)`);
  t.match(a.message, /under CI a missing system component is a failure/);
});

t.test(
  'the environment variable names another path; a file that cannot run or a directory is not the component',
  async (t) => {
    t.same(findSystemComponent(component, { APPREG_TEST_COMPONENT: process.execPath }), {
      found: true,
      path: process.execPath,
    });
    t.same(findSystemComponent({ ...component, path: process.execPath }, {}), { found: true, path: process.execPath });
    const plain = path.join(tmp, 'not-executable');
    fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
    const a = findSystemComponent(component, { APPREG_TEST_COMPONENT: plain });
    t.equal(a.found, false);
    if (!a.found) t.match(a.message, `${plain} is not executable`);
    const b = findSystemComponent(component, { APPREG_TEST_COMPONENT: tmp });
    t.equal(b.found, false);
    if (!b.found) t.match(b.message, `${tmp} is not a file`);
  },
);

t.test('a present component: the test runs and gets its path', async (t) => {
  let got: string | null = null;
  await testNeeding(
    t,
    'uses the component',
    { path: process.execPath, install: 'none' },
    async (t, p) => {
      got = p;
      t.pass('ran');
    },
    {},
  );
  t.equal(got, process.execPath);
});

/** Run the compiled browser test as its own process, as tap would, with Chromium missing. */
function runBrowserTest(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP') && k !== 'CI'));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(here, 'consent-browser.test.js')], {
      env: { ...clean, APPREG_CHROMIUM: missing, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

// both runs at once: each mostly waits for the daemon code to load
const withoutCi = runBrowserTest({});
const underCi = runBrowserTest({ CI: 'true' });

t.test('the browser test without Chromium: skipped with one line, exit 0', async (t) => {
  const r = await withoutCi;
  t.equal(r.code, 0);
  const skips = r.stdout.split('\n').filter((l) => l.includes('# SKIP'));
  t.same(skips, [
    `ok 1 - authorize an app in headless Chromium # SKIP ${missing} not found (apt-get install chromium); .ci/run installs it`,
  ]);
  t.notMatch(r.stdout, /not ok/);
});

t.test('the browser test without Chromium under CI: a failure, exit 1', async (t) => {
  const r = await underCi;
  t.equal(r.code, 1);
  t.match(r.stdout, `not ok 1 - ${missing} not found (apt-get install chromium): under CI`);
  t.notMatch(r.stdout, /# SKIP/);
});
