/**
 * test/run.mjs's time limit stops everything a test file started: a fixture file that hangs and
 * ignores the runner's SIGALRM, with a plain child, a child in a process group of its own and an
 * orphan in a session of its own, is run with a limit of one second (APPREG_TEST_FILE_LIMIT_S); the
 * runner reports it timed out, and when the runner has ended none of the three is alive.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';

/** Alive: in /proc and not a zombie (an orphan's zombie waits for init, which may not reap it). */
function alive(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

t.test('a test file over its limit is ended with every process it started', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-run-limit-'));
  const pidsFile = path.join(dir, 'pids');
  const pids = () =>
    fs.existsSync(pidsFile) ? fs.readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number) : [];
  const runner = spawn(process.execPath, [path.join(ROOT, 'test/run.mjs'), 'test/fixtures/runner/hang.mjs'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      APPREG_TEST_BUILT: '1', // the tree is built: no tsc, no set-up
      APPREG_TEST_FILE_LIMIT_S: '1',
      APPREG_TEST_TIMES: path.join(dir, 'times.json'),
      APPREG_TEST_PG_SHARED: 'unused', // no PostgreSQL cluster for the run
      APPREG_TEST_MATRIX: '0',
      APPREG_FIXTURE_PIDS: pidsFile,
    },
  });
  t.teardown(() => {
    runner.kill('SIGKILL');
    for (const pid of pids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone, as it should be */
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
  let out = '';
  runner.stdout.on('data', (c) => (out += c));
  runner.stderr.on('data', (c) => (out += c));
  const code = await new Promise((resolve) => runner.on('close', resolve));

  t.equal(code, 1, 'the run failed');
  t.match(
    out,
    /^not ok 1 - test\/fixtures\/runner\/hang\.mjs .*\(timed out: limit 1 s/m,
    'the file is reported timed out',
  );
  t.match(out, /^0 passed, 1 failed, 0 skipped$/m, 'the closing line counts it failed');
  const started = pids();
  t.equal(started.length, 3, `the fixture started its three processes (it said: ${out.slice(-400)})`);
  t.same(
    started.filter((pid) => alive(pid)),
    [],
    'none of them is alive after the run',
  );
  // the time of a run cut at its limit says nothing of what the file needs: the next limit is not raised by it
  const times = JSON.parse(fs.readFileSync(path.join(dir, 'times.json'), 'utf8')) as Record<string, unknown>;
  t.notOk('test/fixtures/runner/hang.mjs' in times, 'its time is not recorded');
});
