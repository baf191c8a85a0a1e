/**
 * What `appreg test` does once its options are read (loaded when it runs, not at start): see test.ts and
 * docs/testing.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Out } from '../output.js';
import { CliError, EXIT } from '../../client/exit.js';
import { positiveInt } from '../options.js';
import type { GlobalOpts } from '../../client/io.js';
import type { Run } from '../run.js';
import { givenDaemon, ownDaemon, type Daemon } from '../../apptest/daemon.js';
import { NoSuchPath, suiteFiles } from '../../apptest/files.js';
import type { Reporter } from '../../apptest/runner.js';
import type { Suite } from '../../apptest/suite.js';
import type { InputOptions } from '../../apptest/suite-input.js';
import type { RunResult } from '../../apptest/results.js';
import { must } from '../../must.js';
import { errnoOf, messageOf } from '../../unknown-values.js';

type Opts = GlobalOpts & Record<string, unknown>;

/** `--init`: the starter suite for --manifest, written beside it (or to --output). */
async function init(run: Run, o: Opts, out: Out): Promise<void> {
  const { guessStart, starterSuite, tokensEnv } = await import('../../apptest/init.js');
  const cwd = run.io.cwd;
  const rel = (f: string) => path.relative(cwd, f) || f;
  const manifestFile = path.resolve(cwd, String(o.manifest ?? 'manifest.json'));
  const { InputRefused, InputUnreadable, parseJson, readBounded, SUITE_LIMITS } =
    await import('../../apptest/suite-input.js');
  let raw: unknown;
  try {
    const maxBytes = positiveInt(o.maxSuiteBytes, '--max-suite-bytes') ?? SUITE_LIMITS.maxBytes;
    const text = readBounded(manifestFile, maxBytes, `the manifest ${manifestFile}`);
    raw = parseJson(manifestFile, text, `the manifest ${manifestFile}`, SUITE_LIMITS.maxDepth);
  } catch (e) {
    if (e instanceof InputUnreadable)
      throw new CliError(
        `cannot read the manifest ${rel(manifestFile)}: ${e.message}${o.manifest === undefined ? ' (give it with --manifest)' : ''}`,
        EXIT.usage,
      );
    // the parser's own message would quote the file
    if (e instanceof InputRefused)
      throw new CliError(`${e.message}${e.at.endsWith(':') ? '' : ` (${e.at})`}`, EXIT.invalidInput);
    throw e;
  }
  const dir = path.dirname(manifestFile);
  const dirShown = path.relative(cwd, dir) || '.';
  const guessed = guessStart(dir);
  const { usesSdk, manifestFromApp, SDK_PACKAGE, SDK_MANIFEST_PATH } = await import('../../apptest/init-sdk.js');
  // an app on the official SDK: its file is partial, its code declares the rest; the app itself says the whole
  const sdk = usesSdk(dir);
  let fromApp: { readyMs: number } | undefined;
  if (sdk) {
    const served = await manifestFromApp({
      command: guessed ?? 'npm start',
      cwd: dir,
      manifestFile,
      env: run.io.env,
      timeoutMs: INIT_READY_MS,
    });
    if (!served.ok)
      throw new CliError(
        `${dirShown} depends on ${SDK_PACKAGE}, so its manifest is read from the app's ${SDK_MANIFEST_PATH}; the app was started with "${guessed ?? 'npm start'}" and ${served.problem.replace(/^it /, '')}${served.appOutput.length ? `\nthe app printed (last ${served.appOutput.length} lines):\n${served.appOutput.map((l) => `  | ${l}`).join('\n')}` : ''}`,
        EXIT.deliveryFailed,
      );
    raw = served.manifest;
    fromApp = served;
  }
  const { validateManifest } = await import('../../validation/manifest.js');
  const v = validateManifest(raw);
  if (!v.ok)
    throw new CliError(
      `the manifest${sdk ? ` the app serves at ${SDK_MANIFEST_PATH}` : ''} is invalid:\n${v.violations.map((x) => `  ${x.pointer || '/'}: ${x.message}`).join('\n')}`,
      EXIT.invalidInput,
      { code: 'invalid_manifest', message: 'the manifest is invalid', details: v.violations },
    );
  const target = path.resolve(
    cwd,
    String(o.output ?? path.join(dir, `${v.manifest.name.replace(/[^A-Za-z0-9_-]+/g, '-')}.apptest.json`)),
  );
  // the whole manifest the app served, beside the suite: the run registers the app from it before the app starts
  const servedFile = sdk ? path.join(path.dirname(target), SERVED_MANIFEST) : undefined;
  for (const f of [target, servedFile])
    if (f && fs.existsSync(f) && !o.force)
      throw new CliError(`${rel(f)} exists: give another --output, or --force to overwrite it`, EXIT.usage);
  const suiteDir = path.dirname(target);
  const env = tokensEnv(dir);
  // the SDK starts from its own file (with the run's registration around it), not from the one written here
  if (sdk) env.PUMBLE_ADDON_MANIFEST_PATH = path.relative(dir, manifestFile);
  const suite = starterSuite(
    v.manifest,
    path.relative(suiteDir, servedFile ?? manifestFile) || path.basename(manifestFile),
    {
      command: guessed ?? (sdk ? 'npm start' : 'node app.js'),
      cwd: path.relative(suiteDir, dir) || undefined,
      env,
      // an app slow to start here (npm start compiling it first) is given three times as long in a run
      ...(fromApp && fromApp.readyMs * 3 > DEFAULT_READY_MS
        ? { ready: { timeoutMs: Math.ceil((fromApp.readyMs * 3) / 1000) * 1000 } }
        : {}),
    },
  );
  const tests = suite.tests.length;
  if (!tests)
    throw new CliError(
      'the manifest has no slash command, shortcut, menu or event to test, and a socket-mode app has no signature to check: there is nothing to start a suite with',
      EXIT.invalidInput,
    );
  const yaml = /\.ya?ml$/i.test(target);
  const text = yaml
    ? `# yaml-language-server: $schema=${suite.$schema}\n${(await import('yaml')).stringify({ ...suite, $schema: undefined })}`
    : JSON.stringify(suite, null, 2) + '\n';
  try {
    fs.mkdirSync(suiteDir, { recursive: true });
    if (servedFile) fs.writeFileSync(servedFile, JSON.stringify(v.manifest, null, 2) + '\n');
    fs.writeFileSync(target, text);
  } catch (e) {
    throw new CliError(`cannot write ${target}: ${errnoOf(e) ?? messageOf(e)}`, EXIT.usage);
  }
  const own = Object.keys(env).filter((k) => k !== 'PUMBLE_ADDON_MANIFEST_PATH');
  out.print(
    {
      file: target,
      tests,
      start: guessed ?? null,
      env,
      ...(servedFile && fromApp
        ? { sdk: { package: SDK_PACKAGE, manifest: servedFile, readyMs: fromApp.readyMs } }
        : {}),
    },
    (c) =>
      (servedFile && fromApp
        ? c.dim(
            `${dirShown} depends on ${SDK_PACKAGE}: its ${rel(manifestFile)} is partial (the SDK adds what the code declares), so the app was started with "${guessed ?? 'npm start'}" (placeholder credentials, no daemon), read at ${SDK_MANIFEST_PATH} after ${fromApp.readyMs} ms and stopped; its whole manifest is in ${rel(servedFile)}`,
          ) + '\n'
        : '') +
      `wrote ${rel(target)}: ${tests} test${tests === 1 ? '' : 's'}\n` +
      (guessed
        ? c.dim(`the app is started with "${guessed}" in ${path.relative(cwd, dir) || '.'}: check app.start.command`)
        : c.yellow(
            `set app.start.command: no package.json start script or main file was found in ${path.relative(cwd, dir) || '.'}`,
          )) +
      (own.length
        ? '\n' + c.dim(`its tokens are kept in the run's own folder: app.start.env sets ${own.join(', ')}`)
        : '') +
      `\nrun it: appreg test ${rel(target)}`,
  );
}

/** How long --init waits for an SDK app's manifest (npm start may compile it first), and a run by default. */
const INIT_READY_MS = 120_000;
const DEFAULT_READY_MS = 30_000;
/** The file --init writes an SDK app's whole manifest to, beside the suite (not *.apptest.json: it is no suite). */
const SERVED_MANIFEST = 'appreg-manifest.json';

/** Every suite file, each checked; all the problems of all of them at once. */
async function loadAll(files: string[], input: InputOptions): Promise<Suite[]> {
  const { loadSuite, SuiteInvalid, SuiteUnreadable } = await import('../../apptest/suite.js');
  const suites: Suite[] = [];
  const invalid: InstanceType<typeof SuiteInvalid>[] = [];
  for (const f of files) {
    try {
      suites.push(await loadSuite(f, input));
    } catch (e) {
      if (e instanceof SuiteUnreadable) throw new CliError(e.message, EXIT.usage);
      if (e instanceof SuiteInvalid) invalid.push(e);
      else throw e;
    }
  }
  if (invalid.length) {
    const details = invalid.flatMap((i) =>
      i.problems.map((p) => ({ file: i.file, at: p.at, pointer: p.pointer, message: p.message })),
    );
    throw new CliError(
      `invalid suite file${invalid.length > 1 ? 's' : ''}:\n${invalid.map((i) => i.problems.map((p) => `  ${p.at} ${p.pointer || '/'}: ${p.message}`).join('\n')).join('\n')}`,
      EXIT.invalidInput,
      {
        code: 'invalid_suite',
        message: `${details.length} problem${details.length === 1 ? '' : 's'} in suite files`,
        details,
      },
    );
  }
  return suites;
}

/** What must hold of the suites before a run: a test to run, and a daemon for an app already running. */
function check(o: Opts, suites: Suite[], grep: RegExp | undefined, url: string | undefined, cwd: string): void {
  const total = suites.reduce(
    (n, s) => n + s.tests.filter((t) => !grep || grep.test(`${s.name} › ${t.name}`)).length,
    0,
  );
  if (!total) throw new CliError(`no test matches --grep ${String(o.grep)}`, EXIT.usage);
  // an app already running talks to the daemon it was started with: that one must be given
  const running = suites.find((s) => s.app.url !== undefined);
  if (running && !url)
    throw new CliError(
      `${path.relative(cwd, running.file)}: the app is already running (app.url), so it talks to its own daemon: give that daemon with --url`,
      EXIT.usage,
    );
}

/** `reporters`: the names --reporter takes (test.ts lists them in its help without loading this module). */
export async function testCommand(
  run: Run,
  o: Opts,
  out: Out,
  paths: string[],
  reporters: readonly string[],
): Promise<void> {
  if (o.init) {
    if (paths.length)
      throw new CliError("--init writes a suite: give the app's manifest with --manifest, not paths", EXIT.usage);
    return init(run, o, out);
  }
  if (o.manifest !== undefined || o.force)
    throw new CliError(`${o.manifest !== undefined ? '--manifest' : '--force'} is for --init`, EXIT.usage);
  const reporter = String(o.reporter ?? (o.json ? 'json' : 'pretty'));
  if (!reporters.includes(reporter))
    throw new CliError(`--reporter must be one of ${reporters.join(', ')}`, EXIT.usage);
  if (o.json && o.reporter !== undefined && reporter !== 'json')
    throw new CliError('--json prints the json report: it cannot go with --reporter ' + reporter, EXIT.usage);
  const jobs = must(positiveInt(o.jobs, '--jobs'));
  const input: InputOptions = {
    maxBytes: positiveInt(o.maxSuiteBytes, '--max-suite-bytes'),
    allowOutside: o.allowOutsidePaths === true,
  };
  let grep: RegExp | undefined;
  if (o.grep !== undefined) {
    try {
      grep = new RegExp(String(o.grep), 'i');
    } catch (e) {
      throw new CliError(`--grep is not a valid regular expression: ${messageOf(e)}`, EXIT.usage);
    }
  }
  const io = run.io;
  let files: string[];
  try {
    files = suiteFiles(io.cwd, paths);
  } catch (e) {
    if (e instanceof NoSuchPath) throw new CliError(e.message, EXIT.usage);
    throw e;
  }
  if (!files.length)
    throw new CliError(
      `no suite files (*.apptest.json, *.apptest.yaml, *.apptest.yml) in ${paths.length ? paths.join(', ') : 'this folder'}; appreg test --init --manifest manifest.json writes one`,
      EXIT.usage,
    );
  // a daemon of the run's own starts while the suites are read (it takes a moment)
  const url = o.url ?? io.env.APPREG_URL;
  const starting = url ? undefined : ownDaemon(io);
  starting?.catch(() => undefined);
  let suites: Suite[];
  try {
    suites = await loadAll(files, input);
    check(o, suites, grep, url, io.cwd);
  } catch (e) {
    await (await starting?.catch(() => undefined))?.stop();
    throw e;
  }

  // the report goes to --output, else stdout; the terminal gets the pretty one as tests end
  const toFile = o.output !== undefined ? path.resolve(io.cwd, String(o.output)) : undefined;
  const live = toFile !== undefined || reporter === 'pretty';
  let stopped = false;
  void io.stopSignal().then(() => {
    stopped = true;
    io.stderr.write('appreg: stopping: no more tests start; cleaning up\n');
  });

  const [{ createApi }, { runSuites }, { prettyReporter }, { junitReport }, { tapReport }] = await Promise.all([
    import('../../apptest/api.js'),
    import('../../apptest/runner.js'),
    import('../../apptest/report/pretty.js'),
    import('../../apptest/report/junit.js'),
    import('../../apptest/report/tap.js'),
  ]);
  const pretty = prettyReporter(out.c, (s) => io.stdout.write(s));
  const daemon: Daemon = starting ? await starting : givenDaemon(io, o);
  let result: RunResult;
  try {
    const api = createApi(io, daemon.client);
    await api.whoami(); // the daemon answers, and the credentials are good, before anything starts
    const quiet: Reporter = {};
    result = await runSuites(suites, {
      api,
      daemon: { url: daemon.url, own: daemon.own },
      env: io.env,
      jobs,
      bail: !!o.bail,
      grep,
      stopped: () => stopped,
      reporter: live ? pretty : quiet,
    });
  } finally {
    await daemon.stop();
  }
  if (stopped) result.passed = false;
  if (live) pretty.end(result);
  const report =
    reporter === 'json'
      ? JSON.stringify(result, null, 2) + '\n'
      : reporter === 'junit'
        ? junitReport(result, io.cwd)
        : reporter === 'tap'
          ? tapReport(result)
          : undefined;
  if (toFile) {
    const { Chalk } = await import('chalk');
    const plain = new Chalk({ level: 0 });
    let text = report;
    if (text === undefined) {
      const buf: string[] = [];
      const p = prettyReporter(plain, (s) => buf.push(s));
      for (const s of result.suites) {
        const suite = must(suites.find((x) => x.file === s.file));
        must(p.suiteStart)(suite, { app: s.app, tests: s.tests.length });
        for (const t of s.tests) must(p.testEnd)(suite, t);
      }
      p.end(result);
      text = buf.join('');
    }
    try {
      fs.mkdirSync(path.dirname(toFile), { recursive: true });
      fs.writeFileSync(toFile, text);
    } catch (e) {
      throw new CliError(`cannot write the report to ${toFile}: ${errnoOf(e) ?? messageOf(e)}`, EXIT.usage);
    }
    io.stdout.write(out.c.dim(`${reporter} report written to ${path.relative(io.cwd, toFile) || toFile}\n`));
  } else if (report !== undefined) {
    io.stdout.write(report);
    run.printedJson ||= reporter === 'json';
  }
  if (!result.passed) run.exitCode = EXIT.deliveryFailed;
}
