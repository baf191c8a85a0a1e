// Loaded into each test file's process by test/run.mjs (node --import): at its exit, writes what the
// process cost in CPU seconds, the child processes it waited for included (/proc/self/stat: utime,
// stime, cutime, cstime, in ticks of 1/100 s), to the file APPREG_TEST_CPU_OUT names. The variable is
// taken out of the environment so that no process the test starts writes there too. `pg`: whether this process made a
// PostgreSQL database (test/helpers/pg.ts sets APPREG_TEST_PG_USED), for the runner's store matrix.
import fs from 'node:fs';

const out = process.env.APPREG_TEST_CPU_OUT;
delete process.env.APPREG_TEST_CPU_OUT;
if (out) {
  process.on('exit', () => {
    try {
      const f = fs.readFileSync('/proc/self/stat', 'utf8').split(') ').at(-1).split(' ');
      const [user, sys, childUser, childSys] = [11, 12, 13, 14].map((i) => Number(f[i]) / 100);
      fs.writeFileSync(
        out,
        JSON.stringify({
          user: +(user + childUser).toFixed(2),
          sys: +(sys + childSys).toFixed(2),
          pg: process.env.APPREG_TEST_PG_USED === '1',
        }),
      );
    } catch {
      /* no /proc: no figure */
    }
  });
}
