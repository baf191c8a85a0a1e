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
 * - docs/postgresql.md: `sudo -u postgres` is the throwaway cluster's administrator, `/srv/` a
 *   folder of the temporary directory, 127.0.0.1:5432 the cluster's address.
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
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { copyExamples } from '../helpers/example-app.js';
import { tempDir } from '../helpers/daemon.js';
import { shellSession, type Background, type ShellSession } from '../helpers/shell-session.js';
import { startPgCluster, testWithPg } from '../helpers/pg.js';
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
const logs = tempDir('appreg-readme-logs-');
const env: Record<string, string> = {
  // the node running this test first: bin/appreg.js starts with `#!/usr/bin/env -S node --`
  PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
  HOME: home,
  USER: os.userInfo().username,
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

void testWithPg(t, 'docs/postgresql.md: the how-to, after the README, on a throwaway cluster', async (t) => {
  if (process.env.APPREG_TEST_PG_URL)
    return void t.plan(
      0,
      'the how-to creates the role and database appreg: it runs on a throwaway cluster only (APPREG_TEST_PG_URL is set)',
    );
  const admin = new URL((await startPgCluster()).url('postgres'));
  const asRoot = process.getuid?.() === 0;
  const srv = path.join(work, 'srv');
  const steps = docSteps(fs.readFileSync(path.join(ROOT, 'docs/postgresql.md'), 'utf8'), {
    from: 'How to set it up',
    until: 'How it works',
  });
  t.ok(steps.length >= 8, `the how-to has its commands (${steps.length})`);
  // the documents' names for the cluster and the folders
  const local = steps.map((s) => ({
    ...s,
    command: s.command
      .replace(
        /^sudo -u postgres (.*)$/,
        (_a, rest: string) =>
          `PGHOST=${admin.hostname} PGPORT=${admin.port} ${asRoot ? 'runuser -u postgres -- ' : 'PGUSER=postgres '}${rest}`,
      )
      .replace(/^sudo /, '')
      .replaceAll('/srv/', `${srv}/`)
      .replaceAll('127.0.0.1:5432', `${admin.hostname}:${admin.port}`),
  }));
  await runSteps(t, local, keep, 'docs/postgresql.md');
  for (const bg of keep) t.ok(bg.running(), `${bg.command}: still running at the end`);
  for (const bg of keep.reverse()) t.equal(await bg.stop('SIGTERM'), 0, `${bg.command}: stops cleanly`);
  keep.length = 0;
  t.ok(fs.existsSync(path.join(work, 'data-copy', 'appreg.json')), 'the export made a data directory');
});
