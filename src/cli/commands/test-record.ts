/**
 * `appreg test --record`: record a conversation and save it as a suite (docs/testing.md, "Recording a test"). The
 * recording lives in the daemon, so what is done in the console and with `appreg say`, `react` and `deliver-test`
 * lands in the same one. Started, it waits until Ctrl-C; `--stop` stops the one that is on from another terminal;
 * `--recording ID` writes the suite of a recording made in the console. The suite is written with its `app` section
 * as `appreg test --init` guesses it from the folder it is written in (the manifest beside it, how the app starts,
 * where it keeps its tokens).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Invocation } from '../options.js';
import { CliError, EXIT } from '../../client/exit.js';
import { errnoOf, messageOf, recordOr } from '../../unknown-values.js';

interface RecordingInfo {
  id: string;
  startedAt: string;
  stoppedAt?: string;
  events: number;
}
interface SuiteAnswer {
  suite: Record<string, unknown>;
  notes: string[];
  steps: unknown[];
}

const DEFAULT_OUT = 'recorded.apptest.yaml';

/** The suite's `app`: the manifest beside the file, started as `--init` would start it. */
async function appSection(dir: string, manifest: string | undefined): Promise<Record<string, unknown>> {
  const { guessStart, tokensEnv } = await import('../../apptest/init.js');
  const manifestFile = path.resolve(dir, manifest ?? 'manifest.json');
  const env = tokensEnv(dir);
  return {
    manifest: path.relative(dir, manifestFile) || 'manifest.json',
    start: { command: guessStart(dir) ?? 'npm start', ...(Object.keys(env).length ? { env } : {}) },
  };
}

/** How often the CLI looks whether the recording was stopped elsewhere (the console, another terminal). */
const STOP_POLL_MS = 1000;

/**
 * Wait for Ctrl-C, or for the recording to be stopped elsewhere (the console's Stop, `--stop` in another terminal):
 * both ends see the one recording the daemon keeps. A poll that fails (the daemon restarting) is tried again.
 */
function stoppedOrSignal(x: Invocation, url: string): Promise<void> {
  const { run } = x;
  const client = x.client();
  const clock = run.io.clock;
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clock.clear(timer);
      resolve();
    };
    const timer = clock.setInterval(async () => {
      try {
        const { recording } = await client.request<{ recording: RecordingInfo }>('GET', url);
        if (recording.stoppedAt) finish();
      } catch {
        /* not reachable now: looked at again at the next tick */
      }
    }, STOP_POLL_MS);
    void run.io.stopSignal().then(finish);
  });
}

export async function recordCommand(x: Invocation): Promise<void> {
  const { o, out, run } = x;
  const client = x.client();
  const base = client.base();
  const target = path.resolve(run.io.cwd, String(o.recordOut ?? DEFAULT_OUT));
  if (!/\.apptest\.(ya?ml)$/i.test(target))
    throw new CliError(`--record-out must name a .apptest.yaml file (appreg test finds it by that name)`, EXIT.usage);
  if (fs.existsSync(target) && !o.force)
    throw new CliError(
      `${path.relative(run.io.cwd, target) || target} exists: give another --record-out, or --force to overwrite it`,
      EXIT.usage,
    );

  let id = typeof o.recording === 'string' ? o.recording : undefined;
  if (!id && o.stop) {
    const { recordings } = await client.request<{ recordings: RecordingInfo[] }>('GET', `${base}/recordings`);
    id = recordings[0]?.id;
    if (!id)
      throw new CliError('no recording is on: start one with appreg test --record, or in the console', EXIT.usage);
  }
  if (!id) {
    // start one, and wait for Ctrl-C
    const started = await client.request<{ recording: RecordingInfo; consoleUrl: string }>(
      'POST',
      `${base}/recordings`,
    );
    id = started.recording.id;
    if (out.json) {
      run.io.stdout.write(JSON.stringify({ recording: started.recording, consoleUrl: started.consoleUrl }) + '\n');
    } else
      run.io.stderr.write(
        `recording ${id}: what you do in the console (${started.consoleUrl.replace(/\/console\/recordings\/.*$/, '/console/channels')}) and with appreg say, react and deliver-test is recorded.\nCtrl-C (or appreg test --record --stop in another terminal) stops it and writes ${path.relative(run.io.cwd, target) || target}.\n`,
      );
    await stoppedOrSignal(x, `${base}/recordings/${encodeURIComponent(id)}`);
  }
  const stopped = await client.request<{ recording: RecordingInfo }>(
    'POST',
    `${base}/recordings/${encodeURIComponent(id)}/stop`,
  );
  const made = await client.request<SuiteAnswer>('GET', `${base}/recordings/${encodeURIComponent(id)}/suite`);
  const dir = path.dirname(target);
  const { name, app: _app, ...rest } = made.suite;
  void _app;
  const suite = { name, app: await appSection(dir, typeof o.manifest === 'string' ? o.manifest : undefined), ...rest };
  const tests = Array.isArray(rest.tests) ? rest.tests : [];
  const first = recordOr(tests[0])?.steps;
  const steps = Array.isArray(first) ? first.length : 0;
  if (!steps)
    throw new CliError(`recording ${id} saw nothing of an app to make a test of: nothing written`, EXIT.usage);
  const { suiteYaml } = await import('../../apptest/recorder/suite-yaml.js');
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(target, suiteYaml(suite));
  } catch (e) {
    throw new CliError(`cannot write ${target}: ${errnoOf(e) ?? messageOf(e)}`, EXIT.usage);
  }
  out.print(
    { recording: stopped.recording, file: target, tests: tests.length, steps, notes: made.notes },
    () =>
      `wrote ${path.relative(run.io.cwd, target) || target}: ${tests.length === 1 ? '1 test' : `${tests.length} tests`}, the recorded one of ${steps} steps (recording ${id}, ${stopped.recording.events} events)\n` +
      made.notes.map((n) => `  note: ${n}\n`).join('') +
      `run it: appreg test ${path.relative(run.io.cwd, target) || target}\n`,
  );
}
