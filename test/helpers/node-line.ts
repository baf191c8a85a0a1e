/**
 * The packaged install on one Node LTS line (binaries from tools/test-nodes.mjs; .ci/run installs them): in a new
 * project outside the repository, `npm install <tarball>`, `npx appreg --version`, `npx appreg serve --port 0`
 * until /healthz answers and a clean stop on SIGTERM, and `npx appreg test` of the example app copied outside the
 * repository with its JUnit report read back. One test file per line (test/package/node-*.test.ts), so the lines
 * run side by side.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './daemon.js';
import { fileLimit } from './file-limit.js';
import { testNeeding } from './system-component.js';
import { until } from './until.js';
import {
  exampleCopy,
  junitCounts,
  newProject,
  packWorkingTree,
  serveCommand,
  sh,
  testNodes,
  userEnv,
} from './packed.js';
import { must } from '../../src/must.js';

export async function nodeLineTest(major: number): Promise<void> {
  fileLimit(t, 600_000);
  const packed = await packWorkingTree();
  const node = must(testNodes().get(major), `Node ${major} among tools/test-nodes.mjs's lines`);
  await testNeeding(
    t,
    `Node ${major}: npm install of the tarball, --version, serve until /healthz, appreg test with a JUnit report`,
    { path: node, install: 'node tools/test-nodes.mjs' },
    async (t, node) => {
      const project = newProject(`app-on-node-${major}`);
      const home = tempDir('appreg-home-');
      const env = userEnv({ node, home });
      const version = await sh('node --version', project, env);
      t.match(version.stdout, new RegExp(`^v${major}\\.`), `the PATH's node is ${version.stdout.trim()}`);

      const install = await sh(`npm install --save-dev ${JSON.stringify(packed.tarball)}`, project, env);
      t.equal(install.code, 0, `npm install of the tarball: ${install.stderr.slice(-500)}`);
      t.comment(`Node ${major}: npm install <tarball> into an empty project took ${install.ms} ms`);
      t.notMatch(install.stderr, /install-scripts|EBADENGINE/, 'no install script to allow, no engine warning');

      const v = await sh('npx appreg --version', project, env);
      t.equal(v.stdout.trim(), packed.manifest.version, 'npx appreg --version prints the package version');

      const data = path.join(home, 'daemon-data');
      const served = await serveCommand(`npx appreg serve --port 0 --data-dir ${data} --json`, project, env, (f) =>
        t.teardown(f),
      );
      const health = await until(
        () =>
          fetch(`${served.url}/healthz`).then(
            (r) => r.status,
            () => 0,
          ),
        (s) => s === 200,
      );
      t.equal(health, 200, `/healthz answers at ${served.url}`);
      const stopped = await served.stop();
      t.match(stopped.stderr, /SIGTERM: shutting down/, 'SIGTERM stops it through its shutdown');
      t.equal(stopped.code, 0, 'and it exits 0');
      t.notOk(fs.existsSync(path.join(data, 'daemon.lock')), 'its lock is given back');

      const app = exampleCopy('standup-app');
      const report = path.join(path.dirname(app), 'report.xml');
      const run = await sh(`npx appreg test ${app} --reporter junit --output ${report}`, project, env);
      t.equal(run.code, 0, `npx appreg test of the example outside the repository: ${run.stderr.slice(-1500)}`);
      const counts = await junitCounts(report);
      t.match(counts, { tests: 8, failures: 0 }, `the JUnit report: ${counts.tests} tests, ${counts.failures} failed`);
      t.comment(`Node ${major}: npx appreg test ran the example's 8 tests in ${run.ms} ms`);
    },
  );
}
