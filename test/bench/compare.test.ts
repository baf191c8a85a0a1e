/**
 * npm run bench:compare without real load: the table's figures and ratios from given rounds
 * (and that a side which read nothing is an error, never a ratio), the costliest frames of a
 * profile inside the timed windows, and the lifecycle of the ref's worktree on a tiny
 * repository whose two commits differ in one number that a fake path reads from each build:
 * built in a temporary worktree (node_modules reused when the lockfile is the same, npm ci when
 * it is not), each side running its own build's code, and the worktree gone afterwards, also
 * when a side fails and when the run is interrupted.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { failed, renderTable, rowsOf, type PathOutcome } from '../../bench/compare-table.js';
import { runCompare } from '../../bench/compare-run.js';
import { parse } from '../../bench/compare.js';
import { topFrames, type CpuProfile } from '../../bench/profile.js';
import {
  launchOf,
  NotInBuild,
  takeTurns,
  type Build,
  type HotPath,
  type PathSpec,
  type Side,
} from '../../bench/sides.js';
import { must } from '../../src/must.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-compare-test-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

const spec: PathSpec = {
  id: 'fake',
  title: 'a fake path',
  floor: 'the fake floor',
  figures: [
    { key: 'rps', label: 'calls/s', better: 'higher', target: { atLeastFloor: 1.2 } },
    { key: 'p99', label: 'p99 ms', better: 'lower', target: { below: 10 } },
  ],
};

t.test('open-loop rows: a latency within 2× the floor, and a saturated side reads so, never as a p99', async (t) => {
  const open: PathSpec = {
    id: 'fake-open',
    title: 'a fake open loop',
    floor: 'the fake echo',
    figures: [
      { key: 'p99', label: 'p99 ms from schedule', better: 'lower', target: { atMostFloor: 2 } },
      { key: 'achievedRps', label: 'achieved/s', better: 'higher' },
    ],
  };
  const kept = (p99: number) => ({ offeredRps: 100, achievedRps: 99, p99, errors: 0 });
  const o: PathOutcome = {
    spec: open,
    ref: { rounds: [kept(30), { offeredRps: 100, achievedRps: 40, saturated: 1, errors: 0 }] },
    wt: { rounds: [kept(15), kept(25)] },
    floor: { rounds: [kept(10), kept(10)] },
  };
  const [p99, achieved] = rowsOf(o);
  t.equal(must(p99).target, '≤ 2× the fake echo (10.0)');
  t.match(must(p99).wtAtTarget, { value: { median: 2 }, met: true }, '1.5× and 2.5× the floor: median 2');
  t.match(must(p99).ref, /^saturated: round 2 achieved 40\.0\/s of 100\/s offered/);
  t.equal(must(p99).refAtTarget, 'saturated', 'a saturated side misses its latency target');
  t.equal(must(p99).ratio, 'saturated');
  t.same(must(achieved).ref, { median: 69.5, min: 40, max: 99 }, 'its achieved rate still counts');
  t.same(failed(o), [], 'saturated is not an error');
  const table = renderTable([o], { ref: 'abc1234', wt: 'working tree' });
  t.match(table, '| saturated (40.0/s) |');
  t.match(table, 'saturated: not met');
  t.match(table, 'fake-open: abc1234 saturated: round 2 achieved 40.0/s of 100/s offered');
  // a round that is not saturated and lacks its p99 is still an error
  const broken: PathOutcome = { ...o, wt: { rounds: [{ offeredRps: 100, achievedRps: 99, errors: 0 }] } };
  t.match(failed(broken), ['fake-open working tree: error: round 1 gave no p99 (undefined)']);
});

t.test('the table: medians, spreads, per-round ratios and targets', async (t) => {
  const o: PathOutcome = {
    spec,
    ref: {
      rounds: [
        { rps: 100, p99: 8 },
        { rps: 110, p99: 12 },
        { rps: 90, p99: 9 },
      ],
    },
    wt: {
      rounds: [
        { rps: 150, p99: 4 },
        { rps: 150, p99: 6 },
        { rps: 150, p99: 5 },
      ],
    },
    floor: { rounds: [{ rps: 100 }, { rps: 100 }, { rps: 100 }] },
  };
  const [rps, p99] = rowsOf(o);
  t.same(must(rps).ref, { median: 100, min: 90, max: 110 });
  t.same(must(rps).wt, { median: 150, min: 150, max: 150 });
  // per round: 150/100, 150/110, 150/90
  t.same(must(rps).ratio, { median: 1.5, min: 150 / 110, max: 150 / 90 });
  t.equal(must(rps).target, '≥ 1.2× the fake floor (100)');
  t.same(must(rps).refAtTarget, { value: { median: 1, min: 0.9, max: 1.1 }, met: false });
  t.same(must(rps).wtAtTarget, { value: { median: 1.5, min: 1.5, max: 1.5 }, met: true });
  t.same(must(p99).ratio, { median: 0.5, min: 0.5, max: 5 / 9 }); // 4/8, 6/12, 5/9
  t.equal(must(p99).target, '< 10');
  t.match(must(p99).refAtTarget, { met: true }); // median 9
  t.same(failed(o), []);
  const table = renderTable([o], { ref: 'abc1234', wt: 'working tree' });
  t.match(table, '| path | figure | abc1234 | working tree | wt / ref | target | ref at target | wt at target |');
  t.match(
    table,
    '| fake | calls/s (higher is better) | 100 (90.0–110) | 150 (150–150) | 1.50 (1.36–1.67) | ≥ 1.2× the fake floor (100) | 1.00× not met | 1.50× met |',
  );
  t.match(
    table,
    '| fake | p99 ms (lower is better) | 9.00 (8.00–12.0) | 5.00 (4.00–6.00) | 0.50 (0.50–0.56) | < 10 | 9.00 met | 5.00 met |',
  );
  // an even count of rounds: the median is the mean of the middle two
  t.same(
    must(
      rowsOf({
        spec,
        wt: {
          rounds: [
            { rps: 10, p99: 1 },
            { rps: 20, p99: 1 },
          ],
        },
      })[0],
    ).wt,
    { median: 15, min: 10, max: 20 },
  );
});

t.test('a side the ref does not have is n/a, not an error', async (t) => {
  const o: PathOutcome = { spec, ref: { na: 'no platform API' }, wt: { rounds: [{ rps: 5, p99: 1 }] } };
  const [rps] = rowsOf(o);
  t.equal(must(rps).ref, 'n/a: no platform API');
  t.equal(must(rps).ratio, 'n/a: no platform API');
  t.same(failed(o), []);
  t.match(renderTable([o], { ref: 'old', wt: 'working tree' }), 'fake: old n/a: no platform API');
});

t.test('a side that read nothing is an error, never a ratio', async (t) => {
  const wt = { rounds: [{ rps: 150, p99: 5 }] };
  const cases: Array<[string, PathOutcome['ref'], RegExp]> = [
    ['no rounds', { rounds: [] }, /no rounds/],
    ['a figure missing', { rounds: [{ p99: 5 }] }, /round 1 gave no rps \(undefined\)/],
    ['not a number', { rounds: [{ rps: NaN, p99: 5 }] }, /round 1 gave no rps \(NaN\)/],
    ['zero requests', { rounds: [{ rps: 0, p99: 5 }] }, /round 1 gave no rps \(0\)/],
    ['infinite', { rounds: [{ rps: 100, p99: Infinity }] }, /round 1 gave no p99/],
    ['it failed', { error: 'could not start: boom' }, /could not start: boom/],
  ];
  for (const [name, ref, why] of cases) {
    const o: PathOutcome = { spec, ref, wt };
    const rows = rowsOf(o);
    t.ok(
      rows.every((r) => r.ratio === 'error'),
      `${name}: no ratio`,
    );
    t.equal(failed(o).length, 1, `${name}: one failure`);
    t.match(failed(o)[0], why, name);
    t.match(renderTable([o], { ref: 'r', wt: 'working tree' }), why, `${name}: said under the table`);
  }
  // the floor is checked on the figures with a ratio target
  const noFloor: PathOutcome = { spec, ref: wt, wt, floor: { rounds: [{ rps: NaN }] } };
  t.match(failed(noFloor), [/fake floor: error: round 1 gave no rps/]);
  t.equal(must(rowsOf(noFloor)[0]).wtAtTarget, undefined);
});

t.test('the costliest frames count only samples inside the timed windows', async (t) => {
  const cf = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber, columnNumber: 0 });
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: cf('(root)') },
      { id: 2, callFrame: cf('(idle)') },
      { id: 3, callFrame: cf('parse', 'file:///b/dist/src/store.js', 9) },
      { id: 4, callFrame: cf('startUp', 'file:///b/dist/src/start.js', 1) },
      { id: 5, callFrame: cf('writev') },
    ],
    startTime: 1000,
    endTime: 2000,
    // at 1100 startUp, 1200 startUp (outside); 1500 parse, 1600 parse, 1700 writev, 1800 idle (inside 1450–1850); 1900
    // parse (outside)
    samples: [4, 4, 3, 3, 5, 2, 3],
    timeDeltas: [100, 100, 300, 100, 100, 100, 100],
  };
  const top = topFrames(profile, [[1450, 1850]], 5, '/b');
  t.same(
    top.frames.map((f) => f.frame),
    ['parse dist/src/store.js:10', 'writev'],
  );
  t.same(
    top.frames.map((f) => f.selfMs),
    [0.2, 0.1],
  );
  t.same(
    top.frames.map((f) => f.share),
    [66.7, 33.3],
  );
  t.equal(top.samples, 4);
  t.equal(top.busyMs, 0); // 300 µs, rounded to ms
  t.throws(() => topFrames(profile, [[5000, 6000]], 5), /no sample inside the timed rounds/);
});

t.test('the command line', async (t) => {
  t.throws(() => parse([]), /name the commit to compare with/);
  t.throws(() => parse(['main', '--paths', 'exchange,nope']), /unknown path nope/);
  t.throws(() => parse(['main', '--rounds', '0']), /--rounds takes a positive whole number/);
  t.throws(() => parse(['main', '--bogus']), /bogus/);
  t.throws(() => parse(['a', 'b']), /one ref at most/);
  const p = parse(['main', '--paths', 'delivery,socket', '--quick']);
  t.same(
    [p.ref, p.paths.map((x) => x.id), p.rounds, p.seconds, p.scale],
    ['main', ['delivery', 'socket'], 3, 2, 'quick'],
  );
  t.equal(parse(['--cpu-prof']).ref, undefined);
});

// ---- the ref's worktree, on a tiny repository ------------------------------------------------

function git(repo: string, args: string[]): string {
  const r = spawnSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * A repository of three commits: "old" (speed 50, another package-lock.json), "ref" (speed 100)
 * and the working tree's HEAD (speed 150). Its build copies src/speed.js into dist/.
 */
function tinyRepo(): { repo: string; old: string; ref: string } {
  const repo = fs.mkdtempSync(path.join(tmpRoot, 'repo-'));
  const write = (f: string, s: string) => fs.writeFileSync(path.join(repo, f), s);
  const lock = (version: string) =>
    JSON.stringify(
      { name: 'tiny', version, lockfileVersion: 3, requires: true, packages: { '': { name: 'tiny', version } } },
      null,
      2,
    ) + '\n';
  git(repo, ['init', '-q', '-b', 'main']);
  write('.gitignore', 'node_modules/\ndist/\n');
  write(
    'build.mjs',
    "import fs from 'node:fs';\nfs.mkdirSync('dist/src', { recursive: true });\nfs.copyFileSync('src/speed.js', 'dist/src/speed.js');\n",
  );
  fs.mkdirSync(path.join(repo, 'src'));
  const commit = (speed: number, version: string) => {
    write(
      'package.json',
      JSON.stringify({ name: 'tiny', version, private: true, type: 'module', scripts: { build: 'node build.mjs' } }) +
        '\n',
    );
    write('package-lock.json', lock(version));
    write('src/speed.js', `export const speed = ${speed};\n`);
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', `speed ${speed}`]);
    return git(repo, ['rev-parse', 'HEAD']);
  };
  const old = commit(50, '0.9.0');
  const ref = commit(100, '1.0.0');
  commit(150, '1.0.0');
  // the working tree: built, with node_modules of its own (untracked)
  fs.mkdirSync(path.join(repo, 'node_modules'));
  write('node_modules/marker.txt', "the working tree's modules");
  spawnSync(process.execPath, ['build.mjs'], { cwd: repo });
  return { repo, old, ref };
}

const worktrees = (repo: string) =>
  git(repo, ['worktree', 'list', '--porcelain'])
    .split('\n')
    .filter((l) => l.startsWith('worktree ')).length;

/** A path whose figure is the build's own src/speed.js, read from its dist; notes where each side ran. */
function speedPath(
  seen: Array<{ role: string; root: string; modules?: string }>,
  fail?: (role: string) => Error | undefined,
): HotPath {
  return {
    ...spec,
    async setup() {
      return {
        async open(build) {
          const broken = fail?.(build.role);
          if (broken) throw broken;
          const { speed } = (await import(pathToFileURL(path.join(build.root, 'dist/src/speed.js')).href)) as {
            speed: number;
          };
          const nm = path.join(build.root, 'node_modules');
          seen.push({
            role: build.role,
            root: build.root,
            modules: fs.existsSync(nm) ? fs.realpathSync(nm) : undefined,
          });
          return {
            pids: () => [],
            warm: async () => {},
            round: async (r) => ({ rps: speed + r, p99: 5 }),
            close: async () => {},
          };
        },
        floor: async () => ({
          pids: () => [],
          warm: async () => {},
          round: async () => ({ rps: 100 }),
          close: async () => {},
        }),
        async close() {},
      };
    },
  };
}

t.test('the ref is built in a worktree that reuses node_modules, runs its own code, and is removed', async (t) => {
  const { repo, ref } = tinyRepo();
  const seen: Array<{ role: string; root: string; modules?: string }> = [];
  const r = await runCompare({
    repo,
    ref,
    paths: [speedPath(seen)],
    rounds: 2,
    seconds: 1,
    scale: 'quick',
    floors: true,
    log: () => {},
  });
  t.equal(must(r.ref).sha, ref);
  t.equal(must(r.ref).subject, 'speed 100');
  t.equal(must(r.ref).nodeModules, 'reused');
  const refSide = must(seen.find((s) => s.role === 'ref'));
  t.not(refSide.root, repo, 'the ref ran from its own worktree');
  t.equal(refSide.modules, fs.realpathSync(path.join(repo, 'node_modules')), "with the working tree's node_modules");
  t.same(must(r.outcomes[0]).ref, {
    rounds: [
      { rps: 100, p99: 5 },
      { rps: 101, p99: 5 },
    ],
  });
  t.same(must(r.outcomes[0]).wt, {
    rounds: [
      { rps: 150, p99: 5 },
      { rps: 151, p99: 5 },
    ],
  });
  t.same(must(r.outcomes[0]).floor, { rounds: [{ rps: 100 }, { rps: 100 }] });
  t.same(must(rowsOf(must(r.outcomes[0]))[0]).ratio, { median: (1.5 + 151 / 101) / 2, min: 151 / 101, max: 1.5 });
  t.notOk(fs.existsSync(refSide.root), 'the worktree is gone');
  t.equal(worktrees(repo), 1, 'and git no longer lists it');
  t.equal(
    fs.readFileSync(path.join(repo, 'node_modules/marker.txt'), 'utf8'),
    "the working tree's modules",
    'the reused node_modules are intact',
  );
});

t.test('a ref with another lockfile gets npm ci; a side that fails or is n/a leaves no worktree behind', async (t) => {
  const { repo, old } = tinyRepo();
  const seen: Array<{ role: string; root: string; modules?: string }> = [];
  const logs: string[] = [];
  const na = await runCompare({
    repo,
    ref: old,
    paths: [speedPath(seen, (role) => (role === 'ref' ? new NotInBuild('not in this build') : undefined))],
    rounds: 1,
    seconds: 1,
    scale: 'quick',
    floors: true,
    log: (l) => logs.push(l),
  });
  t.equal(must(na.ref).nodeModules, 'installed');
  t.match(logs.join('\n'), /package-lock\.json differs, npm ci/);
  t.same(must(na.outcomes[0]).ref, { na: 'not in this build' });
  t.same(must(na.outcomes[0]).wt, { rounds: [{ rps: 150, p99: 5 }] });
  t.same(failed(must(na.outcomes[0])), []);

  const broken = await runCompare({
    repo,
    ref: old,
    paths: [speedPath(seen, (role) => (role === 'ref' ? new Error('boom') : undefined))],
    rounds: 1,
    seconds: 1,
    scale: 'quick',
    floors: true,
    log: () => {},
  });
  t.same(must(broken.outcomes[0]).ref, { error: 'could not start: boom' });
  t.match(failed(must(broken.outcomes[0])), [/fake ref: error: could not start: boom/]);
  t.equal(worktrees(repo), 1, 'no worktree left after either run');
  t.same(
    fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith(`appreg-compare-${old.slice(0, 7)}-`)),
    [],
    'nor its directory',
  );
  await t.rejects(
    runCompare({
      repo,
      ref: 'no-such-ref',
      paths: [],
      rounds: 1,
      seconds: 1,
      scale: 'quick',
      floors: false,
      log: () => {},
    }),
    /"no-such-ref" names no commit/,
  );
});

t.test('a path whose setup fails is an error of its sides, and the next path still runs', async (t) => {
  const { repo } = tinyRepo();
  const broken: HotPath = {
    ...spec,
    id: 'broken',
    setup: async () => {
      throw new Error('no receiver');
    },
  };
  const r = await runCompare({
    repo,
    paths: [broken, speedPath([])],
    rounds: 1,
    seconds: 1,
    scale: 'quick',
    floors: false,
    log: () => {},
  });
  t.same(must(r.outcomes[0]).wt, { error: 'setting up the path failed: no receiver' });
  t.match(failed(must(r.outcomes[0])), [/broken working tree: error: setting up the path failed: no receiver/]);
  t.same(must(r.outcomes[1]).wt, { rounds: [{ rps: 150, p99: 5 }] });
});

t.test(
  '--node: the working tree on this Node and on the other binary, each side labelled with its version',
  async (t) => {
    const { repo } = tinyRepo();
    const builds: Build[] = [];
    const path0 = speedPath([]);
    const watched: HotPath = {
      ...path0,
      async setup(o) {
        const run = await path0.setup(o);
        return { ...run, open: async (b) => (builds.push(b), run.open(b)) };
      },
    };
    const r = await runCompare({
      repo,
      node: { path: '/opt/node-22/bin/node', version: 'v22.0.0' },
      paths: [watched],
      rounds: 1,
      seconds: 1,
      scale: 'quick',
      floors: false,
      log: () => {},
    });
    t.same(
      builds.map((b) => [b.role, b.root, b.label, b.node]),
      [
        ['ref', repo, `Node ${process.version}`, process.execPath],
        ['wt', repo, 'Node v22.0.0', '/opt/node-22/bin/node'],
      ],
    );
    t.equal(r.ref, undefined, 'no ref was built');
    t.same(launchOf({ nodeArgs: () => ['--cpu-prof'] }, must(builds[1])), {
      execPath: '/opt/node-22/bin/node',
      nodeArgs: ['--cpu-prof'],
    });
    t.same(parse(['--node', '/opt/node-22/bin/node']).node, '/opt/node-22/bin/node');
    t.throws(() => parse(['main', '--node', '/x']), /give no ref/);
  },
);

t.test('an interrupted run (Ctrl-C) removes the worktree on its way out', async (t) => {
  const { repo, ref } = tinyRepo();
  const child = spawn(process.execPath, [path.join(here, '../helpers/compare-child.js'), repo, ref], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  const running = await new Promise<string>((resolve, reject) => {
    must(child.stdout).on('data', (c) => {
      out += c;
      const m = /RUNNING (\S+)/.exec(out);
      if (m) resolve(must(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the run ended (${code}) before its ref side started: ${out}`)));
  });
  t.ok(fs.existsSync(path.join(running, 'dist/src/speed.js')), 'the ref was built in its worktree');
  t.equal(worktrees(repo), 2);
  const code = await new Promise<number | null>((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', (c) => resolve(c));
    child.kill('SIGINT');
  });
  t.equal(code, 130);
  t.notOk(fs.existsSync(running), 'the worktree is gone');
  t.equal(worktrees(repo), 1);
});

t.test('the sides take turns in the order given, then reversed, so no build always runs first', async (t) => {
  const ran: string[] = [];
  const side = (name: string): Side => ({
    pids: () => [],
    warm: async () => {},
    round: async (r) => (ran.push(`${r + 1}${name}`), { r }),
    close: async () => {},
  });
  const out = await takeTurns(
    [
      ['ref', side('ref')],
      ['wt', side('wt')],
      ['floor', side('floor')],
    ],
    { rounds: 4, log: () => {} },
  );
  t.same(ran, ['1ref', '1wt', '1floor', '2floor', '2wt', '2ref', '3ref', '3wt', '3floor', '4floor', '4wt', '4ref']);
  t.same(
    must(out['wt']).rounds.map((f) => f['r']),
    [0, 1, 2, 3],
    "each side's rounds are recorded in round order",
  );
});
