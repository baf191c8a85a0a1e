/**
 * A bench:compare run that never ends, for test/bench/compare.test.ts: argv is a repository
 * and a ref; once the ref's side has started it prints "RUNNING <the ref's worktree>" and its
 * warm-up waits forever, until the test interrupts the process.
 */
import { runCompare } from '../../bench/compare-run.js';
import type { HotPath } from '../../bench/sides.js';
import { must } from '../../src/must.js';

const [repo, ref] = process.argv.slice(2);

const forever: HotPath = {
  id: 'forever',
  title: 'a side that never finishes warming up',
  figures: [{ key: 'rps', label: 'calls/s', better: 'higher' }],
  async setup() {
    return {
      async open(build) {
        return {
          pids: () => [],
          async warm() {
            if (build.role === 'ref') process.stdout.write(`RUNNING ${build.root}\n`);
            await new Promise(() => setInterval(() => {}, 60_000));
          },
          round: async () => ({ rps: 1 }),
          close: async () => {},
        };
      },
      async close() {},
    };
  },
};

await runCompare({
  repo: must(repo),
  ref,
  paths: [forever],
  rounds: 1,
  seconds: 1,
  scale: 'quick',
  floors: false,
  log: () => {},
});
