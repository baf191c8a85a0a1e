/**
 * A test file's time limit when it runs on its own (`node dist/test/….test.js`, where tap's default is
 * 30 s). Under test/run.mjs this does nothing: the runner's limit holds there, and it follows the
 * file's recorded time and the machine's load (docs/development.md), where a fixed one here would
 * fail the file on a busy machine. test/run.mjs marks each file's processes with APPREG_TEST_FILE.
 */
export function fileLimit(t: { setTimeout(ms: number): void }, ms: number): void {
  if (!process.env.APPREG_TEST_FILE) t.setTimeout(ms);
}
