/**
 * Docs that cannot drift (issue 22 §3): every shell command of README.md, in order, then the
 * how-to of docs/postgresql.md, run in one bash as a person follows them from a fresh clone,
 * against the example app. A command fails the test when it exits non-zero, or when what it
 * printed no longer has the shape the document shows.
 *
 * How the documents' commands map to this test, so that they can stay natural for people:
 * - they run in a temporary directory laid out as the clone: a copy of examples/, and this
 *   repository's bin/, package.json and node_modules linked beside it (the rest is not needed);
 *   the commands that put `appreg` on the PATH are run as written, so the first `appreg` a person
 *   types is this test's first too, and what it costs is measured (below);
 * - the set-up block: `npm ci` is what built this very test, and `npm test` is what runs it:
 *   neither is run again; `npm start` is what it runs once built, `node -- bin/appreg.js serve`;
 * - ports: the daemon listens where APPREG_PORT=0 puts it (`--port <n>` is `--port 0`), and the
 *   example app on a free port written into the copy of its manifest; the documents' 8740 and
 *   8750 in what a command prints stand for them;
 * - `$PUMBLE_APP_ID` and the other variables come from `. examples/standup-app/.env`, as for a
 *   person; an id written `app_…`, `dlv_…`, `msg_…` or `ws_…` in a command is the last one of
 *   that kind an earlier command printed;
 * - a command ending with `&`, `npm start`, or one that follows until Ctrl-C (`… tail`) runs in
 *   the background: the next command waits until it has printed (a daemon: its address); `tail`
 *   commands are stopped at the end of their block and must have printed something, the others
 *   at the end, and each must still be running then;
 * - docs/postgresql.md: its how-to runs as written after the README, in the same bash, on the server
 *   of its own it starts (a block marked as an illustration, for a server you already run, is
 *   not run), as a person with PostgreSQL's programs on the PATH and PGPORT set to a free port
 *   would; USER is not set (nothing may need it), and as root its `$PGRUN` runs them as postgres;
 *   then the daemons are stopped, and its last section stops its server.
 * The first `appreg` call from the fresh set-up and the one after it must each start in well under
 * a second and install or build nothing (issue 34): each is timed by bash's `time`, and the test
 * fails when one takes more than 1 s of CPU (user + system, its child processes included: a busy
 * machine stretches the wall time, not the CPU a command needs) or when npm's cache in HOME was
 * written (`npx` installs there); the wall time is printed with it.
 * HOME is a temporary directory (`appreg login` saves there) and there is no display (`appreg
 * open` prints its link). The data directory a clone uses by default, data/ of the clone, is data/ of the temporary
 * directory (APPREG_DATA_DIR), never this repository's own.
 * Every file the README's commands write must be one this repository's .gitignore ignores (they write under tmp/):
 * a person who follows them is not left with untracked files in the clone.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';
import { tempDir } from '../helpers/daemon.js';
import { shellSession, type Background, type ShellSession } from '../helpers/shell-session.js';
import { POSTGRES_COMPONENT } from '../helpers/pg.js';
import { testNeeding } from '../helpers/system-component.js';
import { alive } from '../../src/server/data-dir.js';
import { docSteps, missingShape, withoutComment, type Step } from './doc-blocks.js';
import { must } from '../../src/must.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });

// A README run and the how-to take about 40 s on this machine; a loaded one may take longer.
t.setTimeout(600_000);

const work = copyExamples();
for (const f of ['bin', 'package.json']) fs.symlinkSync(path.join(ROOT, f), path.join(work, f));
const home = tempDir('appreg-readme-home-');
// TMPDIR, where docs/postgresql.md's `mktemp -d` makes its server's folder: the test finds a server left running
// there; other users may pass through it (as root, the how-to's server runs as the user postgres)
const scratch = tempDir('appreg-readme-tmp-');
fs.chmodSync(scratch, 0o711);
const logs = tempDir('appreg-readme-logs-');
const env: Record<string, string> = {
  // the node running this test first: bin/appreg.js starts with `#!/usr/bin/env -S node --`
  PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
  HOME: home,
  TMPDIR: scratch,
  LANG: 'C.UTF-8',
  NO_COLOR: '1',
  APPREG_PORT: '0',
  // the clone's default data directory (its data/) is this test's copy's: a person runs the README in the clone
  APPREG_DATA_DIR: path.join(work, 'data'),
};
const shell: ShellSession = shellSession({ cwd: work, env, logDir: logs });
t.teardown(() => shell.close());

/** The ids seen in what commands printed, by kind. */
const seen = new Map<string, string>();
const remember = (text: string) => {
  for (const m of text.matchAll(/\b(app|dlv|msg|ws)_[A-Za-z0-9_-]+/g)) seen.set(must(m[1]), m[0]);
};
let daemonUrl = '';
let appPort = 0;

function mapped(step: Step): string | undefined {
  let c = withoutComment(step.command);
  if (/^npm test\b/.test(c)) return undefined; // this test is part of it
  c = c.replace(/^(npm ci && )?npm start$/, 'node -- bin/appreg.js serve &');
  c = c.replace(/--port \d+/g, '--port 0');
  c = c.replace(/\b(app|dlv|msg|ws)_…/g, (all, kind: string) => {
    const id = seen.get(kind);
    if (!id) throw new Error(`line ${step.line}: ${all} stands for an id no earlier command printed`);
    return id;
  });
  return c;
}

/** The shape a command's output is shown with, in this run's addresses. */
const shapeOf = (shows: string[]) =>
  shows.map((l) =>
    l.replaceAll('http://127.0.0.1:8740', daemonUrl).replaceAll('127.0.0.1:8750', `127.0.0.1:${appPort}`),
  );

const longRunning = (c: string) => /&$/.test(c) || /\btail\b/.test(c);

/** The first calls of appreg a person types (`appreg …`, or `npx appreg …` if a document said so), timed. */
const calls: Array<{ where: string; wallS: number; cpuS: number }> = [];
const TIMED_CALLS = 2;
const CPU_LIMIT_S = 1;
const isCall = (c: string) => /^(npx )?appreg\b/.test(c);

/**
 * `command` under bash's `time`: its report (wall, user and system seconds, the command's child
 * processes included) goes to `file`, and the command's own output where it went.
 */
const timed = (command: string, file: string) =>
  `{ TIMEFORMAT='%3R %3U %3S'; time {\n${command}\n} 2>&3; } 3>&2 2> ${file}`;

function timing(file: string): { wallS: number; cpuS: number } {
  const said = fs.readFileSync(file, 'utf8');
  const [wall, user, sys] = must(said.trim().split('\n').at(-1))
    .split(/\s+/)
    .map((x) => Number(x.replace(',', '.')));
  if (
    wall === undefined ||
    user === undefined ||
    sys === undefined ||
    [wall, user, sys].some((x) => !Number.isFinite(x))
  )
    throw new Error(`bash's time said: ${said}`);
  return { wallS: wall, cpuS: Math.round((user + sys) * 1000) / 1000 };
}

async function until(ok: () => boolean, what: string, ms = 30_000): Promise<void> {
  for (const end = Date.now() + ms; !ok();) {
    if (Date.now() > end) throw new Error(`${what}: nothing within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Run the steps in order; background processes of a block that follow (tail) stop with it. */
async function runSteps(t: Tap.Test, steps: Step[], keep: Background[], doc: string): Promise<void> {
  let following: Background[] = [];
  const endBlock = async () => {
    for (const bg of following) {
      t.ok(bg.running(), `${bg.command}: still following at the end of its block`);
      t.equal(await bg.stop('SIGTERM'), 0, `${bg.command}: stops cleanly`);
      t.ok(bg.output().trim().length > 0, `${bg.command}: printed what it follows`);
    }
    following = [];
  };
  let block = steps[0]?.block;
  for (const step of steps) {
    if (step.block !== block) {
      await endBlock();
      block = step.block;
    }
    const command = mapped(step);
    if (command === undefined) continue;
    const where = `${doc} line ${step.line} (${step.section}): ${step.command}`;
    if (longRunning(command)) {
      const bg = await shell.background(command.replace(/\s*&$/, ''));
      const serve = /\bappreg\b.*\bserve\b/.test(command);
      await until(
        () => (serve ? /listening on|"url"/.test(bg.output()) : bg.output().trim().length > 0) || !bg.running(),
        where,
      );
      t.ok(bg.running(), `${where}: started${bg.running() ? '' : `, but exited: ${bg.output()}`}`);
      if (serve && !daemonUrl) daemonUrl = /listening on (http:\/\/[^\s"]+)/.exec(bg.output())?.[1] ?? '';
      (/\btail\b/.test(command) ? following : keep).push(bg);
      remember(bg.output());
      if (step.shows.length) {
        const missing = missingShape(shapeOf(step.shows), bg.output());
        t.notOk(
          missing,
          `${where}: prints ${missing === undefined ? 'what the document shows' : `a line like "${missing}"; it printed:\n${bg.output()}`}`,
        );
      }
      continue;
    }
    const timeFile =
      isCall(command) && calls.length < TIMED_CALLS ? path.join(logs, `time-${calls.length}`) : undefined;
    const r = await shell.run(timeFile ? timed(command, timeFile) : command);
    if (timeFile) calls.push({ where, ...timing(timeFile) });
    t.equal(r.code, 0, `${where}${r.code ? `\n${r.stderr || r.stdout}` : ''}`);
    if (step.shows.length) {
      const missing = missingShape(shapeOf(step.shows), r.stdout + r.stderr);
      t.notOk(
        missing,
        `${where}: prints ${missing === undefined ? 'what the document shows' : `a line like "${missing}"; it printed:\n${r.stdout}${r.stderr}`}`,
      );
    }
    remember(r.stdout + r.stderr);
  }
  await endBlock();
}

const keep: Background[] = [];

t.test('README.md: every command, in order, from a fresh clone', async (t) => {
  // the example app on a free port, as its copied manifest says
  appPort = await freePort();
  const manifest = path.join(work, 'examples/standup-app/manifest.json');
  fs.writeFileSync(manifest, fs.readFileSync(manifest, 'utf8').replaceAll('127.0.0.1:8750', `127.0.0.1:${appPort}`));
  const steps = docSteps(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  t.ok(steps.length >= 40, `the README has its commands (${steps.length})`);
  t.match(
    steps.map((s) => s.command).join('\n'),
    /npm start[\s\S]*apps create --file examples\/standup-app\/manifest\.json --env-out[\s\S]*app\.mjs &[\s\S]*authorize \$PUMBLE_APP_ID --follow[\s\S]*say general \/standup[\s\S]*open[\s\S]*deliver-test .*--probe-signature/,
    'the quickstart in its order',
  );
  const before = new Set(filesIn(work));
  await runSteps(t, steps, keep, 'README.md');
  for (const bg of keep) t.ok(bg.running(), `${bg.command}: still running at the end`);
  // stopped in reverse order: the daemons after the apps that call them
  for (const bg of keep.reverse()) t.equal(await bg.stop('SIGTERM'), 0, `${bg.command}: stops cleanly`);
  keep.length = 0;
  // what the commands wrote is ignored by the clone's git, or a person's `git status` fills with it
  // the first call from the fresh set-up and a later one: fast, and nothing installed or built on the way
  t.equal(calls.length, TIMED_CALLS, `the README calls appreg (${calls.length} calls timed)`);
  calls.forEach((c, i) => {
    const which = i === 0 ? 'the first appreg call' : 'a later appreg call';
    t.comment(`${which}: ${c.wallS.toFixed(2)} s wall, ${c.cpuS.toFixed(2)} s CPU (${c.where})`);
    t.ok(c.cpuS <= CPU_LIMIT_S, `${which} takes at most ${CPU_LIMIT_S} s of CPU: ${c.cpuS} s (${c.where})`);
  });
  t.notOk(
    fs.existsSync(path.join(home, '.npm', '_npx')),
    "no call went through npx: nothing was installed in npm's cache to run appreg",
  );
  const written = filesIn(work).filter((f) => !before.has(f));
  t.ok(written.length > 0, 'the commands wrote files (tmp/hello.json, the data directory, …)');
  t.same(notIgnored(written), [], 'every file the commands wrote is one git ignores');
});

/** The files under `dir` (not through a symbolic link: node_modules), relative to it. */
function filesIn(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/** Of `files` (paths in a clone), those that this repository's .gitignore does not ignore. */
function notIgnored(files: string[]): string[] {
  const r = spawnSync('git', ['-C', ROOT, 'check-ignore', '--no-index', '--stdin', '-z'], {
    input: files.join('\0') + '\0',
    encoding: 'utf8',
  });
  // exit 1: none of them is ignored
  if (r.status !== 0 && r.status !== 1) throw new Error(`git check-ignore: ${r.error?.message ?? r.stderr}`);
  const ignored = new Set(r.stdout.split('\0'));
  return files.filter((f) => !ignored.has(f));
}

void testNeeding(
  t,
  'docs/postgresql.md: the how-to, after the README, on a server of its own',
  POSTGRES_COMPONENT,
  async (t, initdb) => {
    t.teardown(() => stopServersIn(scratch));
    const doc = fs.readFileSync(path.join(ROOT, 'docs/postgresql.md'), 'utf8');
    const steps = docSteps(doc, { from: 'How to set it up', until: 'How it works' });
    const done = docSteps(doc, { from: 'When you are done' });
    t.ok(steps.length >= 10, `the how-to has its commands (${steps.length})`);
    t.ok(done.length >= 2, `and says how to stop its server (${done.length})`);
    // a person with PostgreSQL's programs on their PATH, whose port 5432 may be another server's
    const ready = await shell.run(`export PATH="${path.dirname(initdb)}:$PATH" PGPORT=${await freePort()}`);
    t.equal(ready.code, 0, 'PostgreSQL on the PATH, PGPORT a free port');
    await runSteps(t, steps, keep, 'docs/postgresql.md');
    for (const bg of keep) t.ok(bg.running(), `${bg.command}: still running at the end`);
    for (const bg of keep.reverse()) t.equal(await bg.stop('SIGTERM'), 0, `${bg.command}: stops cleanly`);
    keep.length = 0;
    t.ok(fs.existsSync(path.join(work, 'tmp', 'data-copy', 'appreg.json')), 'the export made a data directory');
    t.equal(serversIn(scratch).length, 1, 'the how-to started its server, in a folder of TMPDIR');
    await runSteps(t, done, keep, 'docs/postgresql.md');
    t.same(serversIn(scratch), [], 'and its last commands stopped it');
  },
);

/** The PostgreSQL servers running with their data in a folder of `dir` (mktemp's folders there): their pids. */
function serversIn(dir: string): number[] {
  return fs
    .readdirSync(dir)
    .map((d) => path.join(dir, d, 'data', 'postmaster.pid'))
    .filter((f) => fs.existsSync(f))
    .map((f) => Number(fs.readFileSync(f, 'utf8').split('\n')[0]))
    .filter((pid) => Number.isInteger(pid) && pid > 0 && alive(pid));
}

/** A server the how-to started and did not stop (it failed midway) is stopped: fast shutdown, by its pid. */
async function stopServersIn(dir: string): Promise<void> {
  for (const pid of serversIn(dir)) {
    process.kill(pid, 'SIGINT');
    await until(() => !alive(pid), `PostgreSQL server ${pid} stopping`);
  }
}
