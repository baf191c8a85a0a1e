/**
 * npm run bench:compare -- <ref>: the hot paths of another commit and of the working tree, side
 * by side in one run (see --help and bench/README.md). The command line, the table and the
 * record; the run itself is bench/compare-run.ts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { failed, renderTable, rowsOf } from './compare-table.js';
import { runCompare, type CompareResult } from './compare-run.js';
import { deliveryPath } from './delivery.js';
import { isMain, ROOT } from './lib.js';
import { createOpenPath, managementPath } from './management.js';
import { exchangeOpenPath, exchangePath } from './oauth-exchange.js';
import { fanoutOpenPath, fanoutPath } from './platform-fanout.js';
import { UnknownRef } from './ref-build.js';
import type { HotPath, Scale } from './sides.js';
import { socketOpenPath, socketPath, socketTransportPath } from './socket.js';
import { must } from '../src/must.js';

/** The closed-loop paths (throughput at a fixed concurrency), then the open-loop ones (latency at a fixed rate). */
const PATHS: HotPath[] = [
  exchangePath,
  deliveryPath,
  socketPath,
  socketTransportPath,
  managementPath,
  fanoutPath,
  exchangeOpenPath,
  socketOpenPath,
  createOpenPath,
  fanoutOpenPath,
];

const HELP = `Usage: npm run bench:compare -- <ref> [options]
       npm run bench:compare -- --node <path of another node> [options]
       npm run bench:compare -- --cpu-prof [<ref>] [options]

Builds <ref> (any commit: a hash, a branch, a tag) in a temporary git worktree and runs the
hot-path benchmarks for it and for the working tree side by side: the working tree's load
generator drives each build's own daemon, the sides (and each path's floor) take turns round
after round, each round once all of them are idle. Prints one table: each side's median and
spread (min-max over the rounds), the ratio working tree / ref (per round, then the median)
and the target of issue 25 with where each side stands. Records it in
bench/results/compare-<ref>.json. A path the ref does not have is n/a. The *-open paths are
open loops: requests sent on a schedule at a fixed rate, latency counted from the scheduled
time; a side that cannot keep the rate reads "saturated" instead of a p99.

With --node instead of a ref, the working tree runs on this Node (as the "ref" column) and on
the given binary side by side; recorded in bench/results/compare-node-<version>.json.

Paths: ${PATHS.map((p) => p.id).join(', ')}
${PATHS.map((p) => `  ${p.id.padEnd(16)} ${p.title}${p.floor ? `; floor: ${p.floor}` : ''}`).join('\n')}

Options:
  --paths <list>   comma-separated paths to run (default: all)
  --rounds <n>     timed rounds per side (default 3)
  --seconds <s>    length of a timed round (default 5; 2 with --quick)
  --quick          smaller data sets and 2 s rounds: a first look, noisier (about 12 minutes for all paths)
  --node <path>    compare the working tree on this Node against the same build on that binary
  --cpu-prof       run each build's daemon under node --cpu-prof (profiles in bench/.tmp/profiles/)
                   and print the five costliest frames (self time) of its timed rounds; floors are
                   not run and nothing is recorded. Without <ref>: the working tree alone
  --json           print the result as JSON instead of the table
  -h, --help       this help

Examples:
  npm run bench:compare -- 9d121e6                         main against itself: the noise floor
  npm run bench:compare -- db61b8d                         against the build before the platform work
  npm run bench:compare -- HEAD~1 --paths delivery,socket --quick
  npm run bench:compare -- --node ~/node-22/bin/node       Node 20 against Node 22, every path
  npm run bench:compare -- --cpu-prof --paths exchange     where the working tree's exchange spends its time

Exit codes: 0 done, 1 a path failed (the table says which; nothing recorded), 2 usage.`;

class Usage extends Error {}

interface Parsed {
  ref?: string;
  node?: string;
  paths: HotPath[];
  rounds: number;
  seconds: number;
  scale: Scale;
  cpuProf: boolean;
  json: boolean;
  help: boolean;
}

export function parse(argv: string[]): Parsed {
  let v;
  try {
    v = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        paths: { type: 'string' },
        rounds: { type: 'string' },
        seconds: { type: 'string' },
        quick: { type: 'boolean' },
        'cpu-prof': { type: 'boolean' },
        node: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    throw new Usage((e as Error).message);
  }
  const { values: o, positionals } = v;
  if (o.help) return { paths: [], rounds: 0, seconds: 0, scale: 'compare', cpuProf: false, json: false, help: true };
  if (positionals.length > 1) throw new Usage(`one ref at most, got ${positionals.join(' ')}`);
  const ref = positionals[0];
  if (o.node !== undefined && ref)
    throw new Usage('--node compares the working tree on two Node binaries: give no ref');
  if (o.node !== undefined && o['cpu-prof']) throw new Usage('--node and --cpu-prof do not go together');
  if (!ref && !o['cpu-prof'] && o.node === undefined)
    throw new Usage('name the commit to compare with, e.g. npm run bench:compare -- 9d121e6');
  const ids = o.paths
    ? o.paths
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : PATHS.map((p) => p.id);
  const unknown = ids.filter((id) => !PATHS.some((p) => p.id === id));
  if (unknown.length || !ids.length)
    throw new Usage(
      `unknown path ${unknown.join(', ') || '(none given)'}; the paths are ${PATHS.map((p) => p.id).join(', ')}`,
    );
  const num = (name: string, raw: string | undefined, dflt: number, integer: boolean) => {
    if (raw === undefined) return dflt;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
      throw new Usage(`--${name} takes a positive ${integer ? 'whole ' : ''}number, got "${raw}"`);
    return n;
  };
  const quick = !!o.quick;
  return {
    ref,
    node: o.node,
    paths: PATHS.filter((p) => ids.includes(p.id)),
    rounds: num('rounds', o.rounds, 3, true),
    seconds: num('seconds', o.seconds, quick ? 2 : 5, false),
    scale: quick ? 'quick' : 'compare',
    cpuProf: !!o['cpu-prof'],
    json: !!o.json,
    help: false,
  };
}

function git(args: string[]): string {
  return execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();
}

/** The five costliest frames of each profiled side, as lines. */
function profileLines(r: CompareResult): string[] {
  const out: string[] = [];
  for (const p of r.profiles) {
    out.push(
      '',
      `${p.path}, ${p.side}: ${p.top.busyMs.toLocaleString('en-US')} ms busy in ${p.top.windowMs.toLocaleString('en-US')} ms of timed rounds (${path.relative(ROOT, p.file)})`,
    );
    p.top.frames.forEach((f, i) =>
      out.push(
        `  ${i + 1}. ${f.share.toFixed(1).padStart(5)} %  ${f.selfMs.toLocaleString('en-US').padStart(8)} ms  ${f.frame}`,
      ),
    );
  }
  for (const e of r.profileErrors) out.push(`profile unreadable: ${e}`);
  return out;
}

async function main(argv: string[]): Promise<number> {
  let a: Parsed;
  try {
    a = parse(argv);
  } catch (e) {
    if (!(e instanceof Usage)) throw e;
    console.error(`bench:compare: ${e.message}\n(npm run bench:compare -- --help)`);
    return 2;
  }
  if (a.help) {
    console.log(HELP);
    return 0;
  }
  let node: { path: string; version: string } | undefined;
  if (a.node !== undefined) {
    try {
      node = { path: a.node, version: execFileSync(a.node, ['--version'], { encoding: 'utf8' }).trim() };
    } catch (e) {
      console.error(`bench:compare: --node ${a.node} does not run: ${(e as Error).message.split('\n')[0]}`);
      return 2;
    }
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const profileDir = a.cpuProf ? path.join(ROOT, 'bench/.tmp/profiles', stamp) : undefined;
  let r: CompareResult;
  try {
    r = await runCompare({
      repo: ROOT,
      ref: a.ref,
      node,
      paths: a.paths,
      rounds: a.rounds,
      seconds: a.seconds,
      scale: a.scale,
      floors: !a.cpuProf,
      profileDir,
      log: (l) => console.error(l),
    });
  } catch (e) {
    if (!(e instanceof UnknownRef)) throw e;
    console.error(`bench:compare: ${e.message}`);
    return 2;
  }
  const labels = node
    ? { ref: `Node ${process.version}`, wt: `Node ${node.version}` }
    : { ref: r.ref ? `${a.ref} (${r.ref.sha.slice(0, 7)})` : undefined, wt: 'working tree' };
  // the record's name: the ref, or the other Node's version
  const name = node ? `node-${node.version}` : (a.ref ?? 'profile');
  const table = renderTable(r.outcomes, labels);
  const errors = r.outcomes.flatMap(failed);
  const record = {
    benchmark:
      'bench:compare: hot paths of a ref and of the working tree, side by side in one run, rounds taking turns',
    ref: r.ref,
    nodes: node && { ref: { path: process.execPath, version: process.version }, workingTree: node },
    workingTree: {
      head: git(['rev-parse', 'HEAD']),
      changed: git(['status', '--porcelain']).split('\n').filter(Boolean).length,
    },
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}, load ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
    // BENCH_DAEMON_LOG: the in-process daemons (delivery, socket) logged at this level into BENCH_DAEMON_LOG_FILE
    daemonLog: process.env.BENCH_DAEMON_LOG
      ? { level: process.env.BENCH_DAEMON_LOG, file: process.env.BENCH_DAEMON_LOG_FILE ?? 'stderr' }
      : undefined,
    options: {
      rounds: a.rounds,
      seconds: a.seconds,
      scale: a.scale,
      paths: a.paths.map((p) => p.id),
      cpuProf: a.cpuProf,
    },
    paths: r.outcomes.map((o) => ({
      id: o.spec.id,
      title: o.spec.title,
      floor: o.spec.floor,
      sides: { ref: o.ref, workingTree: o.wt, floor: o.floor },
      rows: rowsOf(o),
    })),
    profiles: r.profiles.map((p) => ({ ...p, file: path.relative(ROOT, p.file) })),
    table,
    at: new Date().toISOString(),
  };
  if (a.json) console.log(JSON.stringify(record, null, 2));
  else console.log([table, ...profileLines(r)].join('\n'));
  if (a.cpuProf) {
    console.error(`profiled: nothing recorded; profiles under ${path.relative(ROOT, must(profileDir))}`);
  } else if (errors.length) {
    const file = path.join(ROOT, 'bench/.tmp', `compare-${name.replace(/[^\w.-]/g, '_')}.failed.json`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(record, null, 2) + '\n');
    console.error(
      `${errors.length} failed: ${errors.join('; ')}\nnot recorded in bench/results (kept in ${path.relative(ROOT, file)})`,
    );
  } else {
    const file = path.join(ROOT, 'bench/results', `compare-${name.replace(/[^\w.-]/g, '_')}.json`);
    fs.writeFileSync(file, JSON.stringify(record, null, 2) + '\n');
    console.error(`recorded in ${path.relative(ROOT, file)}`);
  }
  return errors.length ? 1 : 0;
}

if (isMain(import.meta.url))
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
