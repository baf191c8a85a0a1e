/**
 * The side-by-side model the hot-path benchmarks are written in, so that `npm run bench:<path>`
 * and `npm run bench:compare` run the same code. A path opens one *side* per build of appreg
 * (that build's own daemon code, driven by the working tree's load generator) and, where the
 * issue measures against one, its *floor* (a plain server doing the same work: oidc-provider,
 * an undici loop, a bare ws echo, a bare node:http server). The sides then run their timed
 * rounds taking turns (A B F, F B A, A B F, …), each after every side's processes went idle, so that
 * the shared machine's drift hits all of them alike.
 */
import { quiet } from './lib.js';
import { must } from '../src/must.js';

/** The named figures one timed round of one side gives (e.g. rps, p99). */
export type Figures = Record<string, number>;

/** A build of appreg a side runs: the checkout at `root`, built (bin/appreg.js, dist/src/…). */
export interface Build {
  /** 'wt': the working tree the benchmark runs from; 'ref': another commit, built apart. */
  role: 'ref' | 'wt';
  root: string;
  /** How tables name it: the ref as given, or "working tree" (with its Node version under --node). */
  label: string;
  /** The Node binary its processes run on (bench:compare --node); this process's when absent. */
  node?: string;
}

/** How big a path's data set is: a quick look, bench:compare's default, or the standalone benchmark's. */
export type Scale = 'quick' | 'compare' | 'full';

export interface RunOptions {
  /** Timed rounds per side. */
  rounds: number;
  /** Length of a timed round (s). */
  seconds: number;
  scale: Scale;
  /** Node options for the process that runs a build's daemon (e.g. --cpu-prof); none by default. */
  nodeArgs?(build: Build): string[];
  /** Progress lines (stderr). */
  log(line: string): void;
}

/** How a path starts the process that runs a build's daemon: its Node binary and options. */
export interface Launch {
  execPath?: string;
  nodeArgs?: string[];
}

export const launchOf = (o: Pick<RunOptions, 'nodeArgs'>, build: Build): Launch => ({
  execPath: build.node,
  nodeArgs: o.nodeArgs?.(build),
});

export interface Side {
  /** The processes this side runs; the rounds wait until they are idle. */
  pids(): number[];
  /** Before the first timed round: the JIT, connections. */
  warm(): Promise<void>;
  /** One timed round; r counts from 0. */
  round(r: number): Promise<Figures>;
  /** Stops every process the side started (a profiled daemon writes its profile on the way out). */
  close(): Promise<void>;
}

export interface FigureSpec {
  key: string;
  /** e.g. "exchanges/s" */
  label: string;
  better: 'higher' | 'lower';
  /**
   * The issue's target: a ratio to the floor measured in the same round (at least, or at most: a latency within 2× the
   * floor's), or a bound on the figure itself.
   */
  target?: { atLeastFloor: number } | { atMostFloor: number } | { below: number };
}

export interface PathSpec {
  /** As --paths names it. */
  id: string;
  title: string;
  /** What the floor is, when the path has one (the ratio targets are to it). */
  floor?: string;
  figures: FigureSpec[];
}

/** A path set up for one run: what its sides share (a receiver, a reference server's codes) lives here. */
export interface PathRun {
  /** The side of `build`; throws NotInBuild when the build has no such path. */
  open(build: Build): Promise<Side>;
  floor?(): Promise<Side>;
  close(): Promise<void>;
}

export interface HotPath extends PathSpec {
  setup(o: RunOptions): Promise<PathRun>;
}

/** The build lacks what the path measures (e.g. a commit before the platform API): reported as n/a. */
export class NotInBuild extends Error {}

/** One side's timed rounds, and when each ran (µs of the monotonic clock, as CPU profiles count time). */
export interface SideRounds {
  rounds: Figures[];
  windows: Array<[number, number]>;
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * Warm every side, then run `rounds` timed rounds taking turns, each once all sides' processes are
 * idle: in the order given in the first round and every other one, in the reverse order in the
 * rounds between, so that no build always runs first (a side that runs right after another read
 * 10–20 % cheaper or dearer depending on the path, whatever code it held). A round that throws
 * ends the run (its error names the side).
 */
export async function takeTurns(
  sides: Array<[string, Side]>,
  o: Pick<RunOptions, 'rounds' | 'log'>,
): Promise<Record<string, SideRounds>> {
  const pids = () => sides.flatMap(([, s]) => s.pids());
  const out: Record<string, SideRounds> = Object.fromEntries(
    sides.map(([name]) => [name, { rounds: [], windows: [] }]),
  );
  for (const [name, side] of sides) {
    await quiet(pids);
    await side.warm().catch((e: Error) => {
      throw new Error(`${name}: warm-up failed: ${e.message}`);
    });
  }
  for (let r = 0; r < o.rounds; r++) {
    for (const [name, side] of r % 2 ? [...sides].reverse() : sides) {
      await quiet(pids);
      const t0 = nowUs();
      const figures = await side.round(r).catch((e: Error) => {
        throw new Error(`${name}: round ${r + 1} failed: ${e.message}`);
      });
      must(out[name]).windows.push([t0, nowUs()]);
      must(out[name]).rounds.push(figures);
      o.log(
        `  round ${r + 1} ${name}: ${Object.entries(figures)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
    }
  }
  return out;
}
