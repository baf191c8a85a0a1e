/**
 * One of docs/ci.md's two jobs, its commands run as written (the `run:` steps of the GitHub Actions workflow, the
 * `script:` of the GitLab job) in an app's repository that has appreg among its devDependencies: the example app at
 * the repository's root, appreg added with `npm install --save-dev --package-lock-only` of the package (which writes
 * package.json and the lockfile `npm ci` needs, and installs nothing: the repository is committed without
 * node_modules). The job must leave reports/appreg.xml with the example's tests passed. One test file per job
 * (test/package/ci-doc-*.test.ts), so the two run side by side.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './cli.js';
import { fileLimit } from './file-limit.js';
import { tempDir } from './daemon.js';
import { exampleCopy, junitCounts, packWorkingTree, sh, userEnv } from './packed.js';
import { must } from '../../src/must.js';

/** The job of docs/ci.md named `name` ('GitHub Actions' or 'GitLab CI'), run as a tap test of this file. */
export async function ciDocJobTest(job: 'GitHub Actions' | 'GitLab CI'): Promise<void> {
  fileLimit(t, 600_000);
  const packed = await packWorkingTree();

  const doc = fs.readFileSync(path.join(ROOT, 'docs/ci.md'), 'utf8');
  const blocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map(
    (m) => parseYaml(must(m[1])) as Record<string, unknown>,
  );
  const github = blocks.find((b) => 'jobs' in b) as
    { jobs: Record<string, { steps: Array<{ run?: string }> }> } | undefined;
  const gitlab = blocks.find((b) => 'app-tests' in b) as { 'app-tests': { script: string[] } } | undefined;
  const jobs: Array<[string, string[]]> = [
    ['GitHub Actions', Object.values(must(github).jobs).flatMap((j) => j.steps.flatMap((s) => (s.run ? [s.run] : [])))],
    ['GitLab CI', must(gitlab)['app-tests'].script],
  ];

  for (const [name, commands] of jobs.filter(([n]) => n === job)) {
    t.test(`${name}: ${commands.join('; ')}`, async (t) => {
      t.ok(
        commands.some((c) => /appreg test/.test(c)),
        'the job runs appreg test',
      );
      const repo = exampleCopy('standup-app');
      const env = userEnv({ home: tempDir('appreg-home-'), extra: { CI: 'true' } });
      fs.writeFileSync(path.join(repo, 'package.json'), JSON.stringify({ name: 'standup', private: true }, null, 2));
      // the repository as committed: package.json and its lockfile, no node_modules (nothing is installed here)
      const add = await sh(`npm install --save-dev --package-lock-only ${JSON.stringify(packed.tarball)}`, repo, env);
      t.equal(add.code, 0, `npm install --save-dev --package-lock-only appreg: ${add.stderr.slice(-500)}`);
      t.notOk(fs.existsSync(path.join(repo, 'node_modules')), 'the repository has no node_modules before the job');
      for (const command of commands) {
        const r = await sh(command, repo, env);
        t.equal(
          r.code,
          0,
          `${command} (${r.ms} ms)${r.code === 0 ? '' : `: ${r.stdout.slice(-1500)}${r.stderr.slice(-1500)}`}`,
        );
      }
      const counts = await junitCounts(path.join(repo, 'reports', 'appreg.xml'));
      t.match(
        counts,
        { tests: 8, failures: 0 },
        `reports/appreg.xml: ${counts.tests} tests, ${counts.failures} failed`,
      );
    });
  }
}
