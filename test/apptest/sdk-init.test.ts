/**
 * Issue 33: `appreg test --init` on an app on the official SDK. The fixture (test/fixtures/sdk-like-app) is such a
 * project as far as --init can tell: its package.json depends on pumble-sdk, its manifest.json is partial (no command,
 * shortcut, menu, event or redirect URL), and its code declares the rest, which it serves at GET /manifest. --init
 * must start it, read that, and write a suite that passes as written.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import type { RunResult } from '../../src/apptest/results.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/sdk-like-app');

/** The SDK project alone: its code, its partial manifest, its package.json (not the fixture's own suite). */
function project(t: Tap.Test): string {
  const dir = tempDir('appreg-sdk-init-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of ['app.mjs', 'manifest.json', 'package.json'])
    fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  return dir;
}

t.test('--init reads an SDK app’s whole manifest from the app, and its suite passes as written', async (t) => {
  const dir = project(t);
  const r = await runMain(['test', '--init'], { cwd: dir });
  t.equal(r.code, 0, r.stderr);
  t.match(
    r.stdout,
    /^\. depends on pumble-sdk: its manifest\.json is partial \(the SDK adds what the code declares\), so the app was started with "npm start" \(placeholder credentials, no daemon\), read at \/manifest after \d+ ms and stopped; its whole manifest is in appreg-manifest\.json\nwrote sdk-like-partial\.apptest\.json: 5 tests\n/,
    'it says what it did',
  );
  const served = JSON.parse(fs.readFileSync(path.join(dir, 'appreg-manifest.json'), 'utf8'));
  t.match(
    served,
    {
      name: 'sdk-like-partial',
      slashCommands: [{ command: '/sdk-check', url: 'http://localhost:5000/hook' }],
      shortcuts: [{ name: 'sdk_hello', shortcutType: 'GLOBAL' }],
      dynamicMenus: [{ onAction: 'sdk_pick' }],
      eventSubscriptions: { url: 'http://localhost:5000/hook', events: ['APP_UNINSTALLED'] },
      redirectUrls: ['http://localhost:5000/redirect'],
    },
    'what the code declares, its URLs absolute',
  );
  t.equal(served.id, undefined, 'without the placeholder id');
  const suite = JSON.parse(fs.readFileSync(path.join(dir, 'sdk-like-partial.apptest.json'), 'utf8'));
  t.same(suite.app, {
    manifest: 'appreg-manifest.json',
    start: { command: 'npm start', env: { PUMBLE_ADDON_MANIFEST_PATH: 'manifest.json' } },
  });
  const run = await runMain(['test', '--reporter', 'json'], { cwd: dir });
  const result = JSON.parse(run.stdout) as RunResult;
  t.equal(
    run.code,
    0,
    JSON.stringify(
      result.suites[0]?.tests.filter((x) => x.status !== 'passed'),
      null,
      2,
    ),
  );
  t.match(result, { passed: true, counts: { tests: 5, passed: 5 } }, 'the starter suite passes');

  const again = await runMain(['test', '--init', '--output', 'other.apptest.json'], { cwd: dir });
  t.equal(again.code, 2, 'nor does it overwrite the manifest it wrote');
  t.match(again.stderr, /appreg-manifest\.json exists: give another --output, or --force/);
  const json = await runMain(['test', '--init', '--force', '--json'], { cwd: dir });
  t.match(JSON.parse(json.stdout), {
    tests: 5,
    start: 'npm start',
    sdk: { package: 'pumble-sdk', manifest: path.join(dir, 'appreg-manifest.json'), readyMs: Number },
  });
});

t.test('an SDK app that does not start: --init says why, with what it printed, and writes nothing', async (t) => {
  const dir = project(t);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  pkg.scripts.start = 'node -e "null.port"';
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg));
  const r = await runMain(['test', '--init'], { cwd: dir });
  t.equal(r.code, 6);
  t.match(
    r.stderr,
    /\. depends on pumble-sdk, so its manifest is read from the app's \/manifest; the app was started with "npm start" and ended \(exit code \d+\) before it was ready\nthe app printed \(last \d+ lines\):\n/,
  );
  t.match(r.stderr, /TypeError: Cannot read properties of null \(reading 'port'\)/, "the app's own lines");
  t.same(fs.readdirSync(dir).sort(), ['app.mjs', 'manifest.json', 'package.json']);
});
