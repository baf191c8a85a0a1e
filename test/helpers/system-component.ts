/**
 * Tests that need a program of the system (Debian's Chromium; later PostgreSQL).
 *
 * On a developer's machine without it, the test is skipped with one line naming what
 * is missing and how to install it, so `npm test` passes on a fresh machine. Under
 * CI (the CI environment variable set, as .ci/run does) the component must be there:
 * .ci/run installs it, so a missing one is a failure, never a silent skip.
 */
import fs from 'node:fs';
import type tap from 'tap';

/** The type of `t` inside a tap test callback. */
type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

export interface SystemComponent {
  /** Where the executable is expected, e.g. /usr/bin/chromium. */
  path: string;
  /** An environment variable that, when set, names another path (e.g. APPREG_CHROMIUM). */
  envVar?: string;
  /** The command that installs it, e.g. "apt-get install chromium". */
  install: string;
}

export type Availability = { found: true; path: string } | { found: false; underCi: boolean; message: string };

/** CI=true (or any value other than "", "0", "false") means we run under CI. */
export function isCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.CI?.trim().toLowerCase();
  return v !== undefined && v !== '' && v !== '0' && v !== 'false';
}

/**
 * Whether the component is there (an executable file), and if not, the one line to
 * show: "/usr/bin/chromium not found (apt-get install chromium); .ci/run installs it".
 */
export function findSystemComponent(c: SystemComponent, env: NodeJS.ProcessEnv = process.env): Availability {
  const p = (c.envVar && env[c.envVar]) || c.path;
  let problem: string | null = null;
  try {
    if (!fs.statSync(p).isFile()) problem = 'is not a file';
    else fs.accessSync(p, fs.constants.X_OK);
  } catch (err) {
    problem = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : 'is not executable';
  }
  if (problem === null) return { found: true, path: p };
  const what = `${p} ${problem} (${c.install})`;
  const underCi = isCi(env);
  return underCi
    ? {
        found: false,
        underCi,
        message: `${what}: under CI a missing system component is a failure; .ci/run should have installed it`,
      }
    : { found: false, underCi, message: `${what}; .ci/run installs it` };
}

/**
 * t.test(name, fn) when the component is there (fn gets its path); otherwise a
 * test skipped with one line saying what is missing, or, under CI, a failing test.
 */
export function testNeeding(
  t: TapTest,
  name: string,
  component: SystemComponent,
  fn: (t: TapTest, path: string) => Promise<void>,
  env: NodeJS.ProcessEnv = process.env,
): ReturnType<TapTest['test']> {
  const a = findSystemComponent(component, env);
  if (a.found) return t.test(name, (t) => fn(t, a.path));
  if (!a.underCi) return t.test(name, { skip: a.message }, async () => {});
  return t.test(name, async (t) => {
    t.fail(a.message);
  });
}
