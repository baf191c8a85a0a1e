/**
 * What `npm run bench:compare` does, apart from its command line: build the ref in a temporary
 * worktree, then for each hot path open a side for the ref, one for the working tree and the
 * floor, run their rounds taking turns (bench/sides.ts), and close them; a side the ref cannot
 * have is n/a, a side that fails is an error, and the other paths still run. With profiling,
 * every build's daemon runs under `node --cpu-prof` and the costliest frames of its timed
 * rounds are read back from the profile.
 */
import path from 'node:path';
import type { PathOutcome, SideOutcome } from './compare-table.js';
import { readProfile, topFrames, type TopFrames } from './profile.js';
import { buildRef, type RefBuild } from './ref-build.js';
import { NotInBuild, takeTurns, type Build, type HotPath, type PathRun, type RunOptions, type Side } from './sides.js';
import { must } from '../src/must.js';

export interface CompareOptions extends Omit<RunOptions, 'nodeArgs'> {
  /** The working tree (a git checkout, built). */
  repo: string;
  /** The commit to compare with; none: the working tree alone (a profile), or on two Node binaries (`node`). */
  ref?: string;
  /**
   * Instead of a ref: the working tree on this process's Node (the "ref" side) against the working tree on this binary
   * (the "wt" side), each labelled with its version.
   */
  node?: { path: string; version: string };
  paths: HotPath[];
  /** Measure each path's floor too (the ratio targets need it). */
  floors: boolean;
  /** Run every build's daemon under --cpu-prof, its profiles under this directory. */
  profileDir?: string;
}

interface Profiled {
  path: string;
  side: string;
  file: string;
  top: TopFrames;
}

export interface CompareResult {
  ref?: Omit<RefBuild, 'remove' | 'root'>;
  outcomes: PathOutcome[];
  profiles: Profiled[];
  /** Profiles that could not be read (the rounds still count). */
  profileErrors: string[];
}

/** A side that started, and when its timed rounds ran. */
interface Opened {
  key: 'ref' | 'wt' | 'floor';
  side: Side;
  build?: Build;
  pid?: number;
  windows?: Array<[number, number]>;
}

const message = (e: unknown) => (e as Error).message ?? String(e);

/** Open a side; NotInBuild makes it n/a, anything else an error. */
async function tryOpen(open: () => Promise<Side>): Promise<Side | SideOutcome> {
  try {
    return await open();
  } catch (e) {
    return e instanceof NotInBuild ? { na: e.message } : { error: `could not start: ${message(e)}` };
  }
}

export async function runCompare(o: CompareOptions): Promise<CompareResult> {
  let ref: RefBuild | undefined;
  try {
    if (o.ref) ref = await buildRef(o.repo, o.ref, o.log);
    const builds: Build[] = o.node
      ? [
          { role: 'ref', root: o.repo, label: `Node ${process.version}`, node: process.execPath },
          { role: 'wt', root: o.repo, label: `Node ${o.node.version}`, node: o.node.path },
        ]
      : [
          ...(ref ? [{ role: 'ref' as const, root: ref.root, label: must(o.ref) }] : []),
          { role: 'wt', root: o.repo, label: 'working tree' },
        ];
    const result: CompareResult = {
      ref: ref && { given: ref.given, sha: ref.sha, subject: ref.subject, nodeModules: ref.nodeModules },
      outcomes: [],
      profiles: [],
      profileErrors: [],
    };
    const profileDir = (p: HotPath, b: Build) => path.join(must(o.profileDir), `${p.id}-${b.role}`);
    for (const p of o.paths) {
      o.log(`${p.id}: ${p.title}`);
      const runOpts: RunOptions = {
        ...o,
        nodeArgs: o.profileDir ? (b) => ['--cpu-prof', `--cpu-prof-dir=${profileDir(p, b)}`] : undefined,
      };
      const outcome: PathOutcome = { spec: p, wt: { error: 'not run' } };
      const opened: Opened[] = [];
      let run: PathRun | undefined;
      try {
        run = await p.setup(runOpts);
        for (const b of builds) {
          const s = await tryOpen(() => must(run).open(b));
          if ('round' in s) opened.push({ key: b.role, side: s, build: b, pid: s.pids()[0] });
          else outcome[b.role] = s;
        }
        if (o.floors && run.floor && opened.length) {
          const s = await tryOpen(run.floor);
          if ('round' in s) opened.push({ key: 'floor', side: s });
          else outcome.floor = s;
        }
        if (opened.length) {
          const turns = await takeTurns(
            opened.map((s) => [s.key, s.side]),
            o,
          );
          for (const s of opened) {
            outcome[s.key] = { rounds: must(turns[s.key]).rounds };
            s.windows = must(turns[s.key]).windows;
          }
        }
      } catch (e) {
        for (const s of opened)
          if (!outcome[s.key] || !('rounds' in must(outcome[s.key]))) outcome[s.key] = { error: message(e) };
        if (!run) for (const b of builds) outcome[b.role] = { error: `setting up the path failed: ${message(e)}` };
      } finally {
        for (const s of opened) await s.side.close().catch((e) => o.log(`  closing ${s.key} failed: ${message(e)}`));
        await run?.close().catch((e) => o.log(`  closing ${p.id} failed: ${message(e)}`));
      }
      result.outcomes.push(outcome);
      if (o.profileDir) {
        for (const s of opened) {
          if (!s.build || !s.pid || !s.windows) continue;
          const dir = profileDir(p, s.build);
          try {
            const profile = readProfile(dir, s.pid);
            result.profiles.push({
              path: p.id,
              side: s.build.label,
              file: profile.file,
              top: topFrames(profile.profile, s.windows, 5, s.build.root),
            });
          } catch (e) {
            result.profileErrors.push(`${p.id} ${s.build.label}: ${message(e)}`);
          }
        }
      }
    }
    return result;
  } finally {
    ref?.remove();
  }
}
