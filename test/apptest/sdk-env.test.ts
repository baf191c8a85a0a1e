/**
 * Issue 33: `appreg test` starts an app on the official SDK unchanged. The fixture takes its settings as the SDK does
 * (test/fixtures/sdk-like-app: it listens on PUMBLE_ADDON_PORT, not PORT; it reads the manifest file
 * PUMBLE_ADDON_MANIFEST_PATH names; it sends people to PUMBLE_CONSENT_SCREEN_URL and files to PUMBLE_FILEUPLOAD_URL),
 * and says what it was given when asked: the run must have handed it every one of them, pointing at the daemon.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, runMain } from '../helpers/cli.js';
import { tempDir } from '../helpers/daemon.js';
import type { RunResult } from '../../src/apptest/results.js';
import { must } from '../../src/must.js';

const FIXTURE = path.join(ROOT, 'test/fixtures/sdk-like-app');

t.test('an app that reads its settings as the SDK does passes its suite', async (t) => {
  const dir = tempDir('appreg-sdk-like-');
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const f of fs.readdirSync(FIXTURE)) fs.copyFileSync(path.join(FIXTURE, f), path.join(dir, f));
  const r = await runMain(['test', dir, '--reporter', 'json']);
  const result = JSON.parse(r.stdout) as RunResult;
  const suite = must(result.suites[0]);
  t.equal(r.code, 0, JSON.stringify(suite, null, 2));
  t.equal(result.counts.passed, 1);
  t.match(suite.app, { started: /^node app\.mjs \(port \d+\)$/, ready: /ms$/ }, 'ready on the port it was handed');
});
