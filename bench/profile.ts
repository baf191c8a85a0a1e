/**
 * The costliest frames of a V8 CPU profile (a .cpuprofile that `node --cpu-prof` writes), by
 * self time, counting only the samples inside given windows (the timed rounds: not start-up,
 * seeding or warm-up). A profile counts time in µs of the monotonic clock, the clock of
 * process.hrtime, so windows taken in another process line up with it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { must } from '../src/must.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame }>;
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Frame {
  /** "functionName file:line" (the file relative to `root` when it is under it). */
  frame: string;
  selfMs: number;
  /** Share of the busy (not idle) time in the windows. */
  share: number;
}

export interface TopFrames {
  frames: Frame[];
  /** Time in the windows (ms), and how much of it the process was busy. */
  windowMs: number;
  busyMs: number;
  samples: number;
}

function frameName(cf: CallFrame, root: string): string {
  const file = cf.url.startsWith('file://') ? decodeURIComponent(new URL(cf.url).pathname) : cf.url;
  const rel = root && file.startsWith(root + path.sep) ? path.relative(root, file) : file;
  return `${cf.functionName || '(anonymous)'}${rel ? ` ${rel}:${cf.lineNumber + 1}` : ''}`;
}

/**
 * The `n` frames of most self time in the samples inside `windows` ([start, end] µs); throws when no sample falls
 * inside.
 */
export function topFrames(p: CpuProfile, windows: Array<[number, number]>, n: number, root = ''): TopFrames {
  const byId = new Map(p.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, number>();
  let t = p.startTime;
  let busy = 0;
  let counted = 0;
  const inside = (x: number) => windows.some(([a, b]) => x >= a && x <= b);
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (!inside(t)) continue;
    // a sample stands for the time until the next one
    const dt = p.timeDeltas[i + 1] ?? 0;
    const cf = byId.get(must(p.samples[i]));
    if (!cf) continue;
    counted++;
    if (cf.functionName === '(idle)') continue;
    busy += dt;
    const key = frameName(cf, root);
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  if (!counted)
    throw new Error(`the profile has no sample inside the timed rounds (profile ${p.startTime}–${p.endTime} µs)`);
  const frames = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([frame, us]) => ({
      frame,
      selfMs: Math.round(us / 100) / 10,
      share: Math.round((us / Math.max(1, busy)) * 1000) / 10,
    }));
  const windowMs = windows.reduce((sum, [a, b]) => sum + (b - a), 0) / 1000;
  return { frames, windowMs: Math.round(windowMs), busyMs: Math.round(busy / 1000), samples: counted };
}

/** The profile `node --cpu-prof --cpu-prof-dir=<dir>` wrote for process `pid`, and its file. */
export function readProfile(dir: string, pid: number): { file: string; profile: CpuProfile } {
  const name = fs.existsSync(dir)
    ? fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.split('.').includes(String(pid)))
    : undefined;
  if (!name) throw new Error(`no CPU profile of process ${pid} in ${dir}`);
  const file = path.join(dir, name);
  return { file, profile: JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile };
}
