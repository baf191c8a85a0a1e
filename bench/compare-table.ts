/**
 * The one table `npm run bench:compare` prints and records: per path and figure, each side's
 * median and spread over its rounds, the ratio working tree / ref (per round, both sides
 * measured in the same round, then the median), and the target with where each side
 * stands. A side that gave no number (no rounds, a figure missing, zero or not finite) is an
 * error, never a ratio: the comparison cannot silently read nothing. An open-loop round that
 * could not keep its offered rate says so (`saturated: 1`, bench/open-loop.ts) instead of giving
 * latencies: those rows of its side read "saturated" with the rate it achieved (its target not
 * met), neither a figure nor an error; its other figures (the achieved rate, CPU) still count.
 */
import type { Figures, FigureSpec, PathSpec } from './sides.js';
import { must } from '../src/must.js';

/** What one side of a path came to: its rounds, or why there are none. */
export type SideOutcome = { rounds: Figures[] } | { na: string } | { error: string };

export interface PathOutcome {
  spec: PathSpec;
  ref?: SideOutcome;
  wt: SideOutcome;
  floor?: SideOutcome;
}

/** Median and spread (min–max) over rounds. */
interface Stat {
  median: number;
  min: number;
  max: number;
}

export interface Row {
  path: string;
  figure: string;
  better: FigureSpec['better'];
  ref?: Stat | string;
  wt?: Stat | string;
  /** working tree / ref, per round */
  ratio?: Stat | string;
  target?: string;
  /** Where each side stands against the target: its ratio to the floor, or its own figure. */
  /** ('saturated': an open loop that could not keep its rate gave no latency, and misses the target.) */
  refAtTarget?: { value: Stat; met: boolean } | 'saturated';
  wtAtTarget?: { value: Stat; met: boolean } | 'saturated';
}

function stat(xs: number[]): Stat {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length / 2;
  return {
    median: s.length % 2 ? must(s[Math.floor(mid)]) : (must(s[mid - 1]) + must(s[mid])) / 2,
    min: must(s[0]),
    max: must(s.at(-1)),
  };
}

/** The side's rounds if every round gave every one of `keys` as a positive finite number; else why not. */
function checkedRounds(side: SideOutcome | undefined, keys: string[]): Figures[] | string {
  if (!side) return 'not run';
  if ('na' in side) return `n/a: ${side.na}`;
  if ('error' in side) return `error: ${side.error}`;
  if (!side.rounds.length) return 'error: no rounds';
  for (const [i, r] of side.rounds.entries()) {
    for (const k of keys) {
      const v = r[k];
      if (v === undefined && r.saturated) continue; // a saturated round gives no latencies
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
        return `error: round ${i + 1} gave no ${k} (${String(v)})`;
    }
  }
  return side.rounds;
}

/** Why the rounds give no `key`: the first round that was saturated without it, and the rate it achieved. */
function saturation(rounds: Figures[] | string, key: string): string | undefined {
  if (typeof rounds === 'string') return undefined;
  const i = rounds.findIndex((r) => r.saturated && r[key] === undefined);
  const r = rounds[i];
  return r && `saturated: round ${i + 1} achieved ${fmt(r.achievedRps ?? 0)}/s of ${fmt(r.offeredRps ?? 0)}/s offered`;
}

const perRound = (a: Figures[], b: Figures[], key: string) =>
  a.slice(0, b.length).map((r, i) => must(r[key]) / must(must(b[i])[key]));

/** Whether the figure's target is a ratio to the floor (at least or at most). */
const toFloor = (f: FigureSpec) => !!f.target && !('below' in f.target);

function targetText(f: FigureSpec, spec: PathSpec, floor: Figures[] | string): string | undefined {
  if (!f.target) return undefined;
  if ('below' in f.target) return `< ${f.target.below}`;
  const at =
    typeof floor === 'string'
      ? ` (${floor})`
      : ` (${saturation(floor, f.key) ?? fmt(stat(floor.map((r) => must(r[f.key]))).median)})`;
  const [op, n] = 'atLeastFloor' in f.target ? ['≥', f.target.atLeastFloor] : ['≤', f.target.atMostFloor];
  return `${op} ${n}× ${spec.floor ?? 'floor'}${at}`;
}

/** One row per figure of the path. */
export function rowsOf(o: PathOutcome): Row[] {
  const keys = o.spec.figures.map((f) => f.key);
  const ref = checkedRounds(o.ref, keys);
  const wt = checkedRounds(o.wt, keys);
  const floorKeys = o.spec.figures.filter(toFloor).map((f) => f.key);
  const floor = floorKeys.length ? checkedRounds(o.floor, floorKeys) : 'not run';
  return o.spec.figures.map((f) => {
    const side = (s: Figures[] | string) =>
      typeof s === 'string' ? s : (saturation(s, f.key) ?? stat(s.map((r) => must(r[f.key]))));
    const row: Row = {
      path: o.spec.id,
      figure: f.label,
      better: f.better,
      ref: o.ref ? side(ref) : undefined,
      wt: side(wt),
      target: targetText(f, o.spec, floor),
    };
    if (o.ref)
      row.ratio =
        typeof ref === 'string'
          ? ref.replace(/^error: .*/, 'error')
          : typeof wt === 'string'
            ? wt.replace(/^error: .*/, 'error')
            : saturation(ref, f.key) || saturation(wt, f.key)
              ? 'saturated'
              : stat(perRound(wt, ref, f.key));
    const at = (s: Figures[] | string): Row['wtAtTarget'] => {
      if (!f.target || typeof s === 'string') return undefined;
      if (saturation(s, f.key)) return 'saturated';
      if (!('below' in f.target) && saturation(floor, f.key)) return undefined;
      if ('below' in f.target) {
        const v = stat(s.map((r) => must(r[f.key])));
        return { value: v, met: v.median < f.target.below };
      }
      if (typeof floor === 'string') return undefined;
      const v = stat(perRound(s, floor, f.key));
      return {
        value: v,
        met: 'atLeastFloor' in f.target ? v.median >= f.target.atLeastFloor : v.median <= f.target.atMostFloor,
      };
    };
    row.refAtTarget = at(ref);
    row.wtAtTarget = at(wt);
    return row;
  });
}

/**
 * Each side that ran, with its checked rounds (or why there are none); the floor is checked on the figures with a ratio
 * target.
 */
function checkedSides(
  o: PathOutcome,
  labels: { ref?: string; wt: string },
): Array<{ name: string; side: SideOutcome; rounds: Figures[] | string }> {
  const all = o.spec.figures.map((f) => f.key);
  const floorKeys = o.spec.figures.filter(toFloor).map((f) => f.key);
  const sides: Array<[string, SideOutcome | undefined, string[]]> = [
    [labels.ref ?? 'ref', o.ref, all],
    [labels.wt, o.wt, all],
    ['floor', o.floor, floorKeys],
  ];
  return sides.flatMap(([name, side, keys]) => (side ? [{ name, side, rounds: checkedRounds(side, keys) }] : []));
}

/** The errors of a path's outcome, one line each (an n/a is not one). */
export function failed(o: PathOutcome): string[] {
  return checkedSides(o, { wt: 'working tree' }).flatMap((s) =>
    typeof s.rounds === 'string' && s.rounds.startsWith('error') ? [`${o.spec.id} ${s.name}: ${s.rounds}`] : [],
  );
}

function fmt(x: number): string {
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US');
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

const statText = (s: Stat | string | undefined) =>
  s === undefined
    ? ''
    : typeof s === 'string'
      ? s.replace(/^(n\/a|error): .*/, '$1').replace(/^saturated: round \d+ achieved (\S+) .*/, 'saturated ($1)')
      : `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;
const atText = (a: Row['refAtTarget'], ratio: boolean) =>
  a === 'saturated'
    ? 'saturated: not met'
    : a
      ? `${fmt(a.value.median)}${ratio ? '×' : ''} ${a.met ? 'met' : 'not met'}`
      : '';

/** The table as Markdown, then a line for each side that is n/a or failed and for failed requests. */
export function renderTable(outcomes: PathOutcome[], labels: { ref?: string; wt: string }): string {
  const withRef = outcomes.some((o) => o.ref);
  const head = [
    'path',
    'figure',
    ...(withRef ? [labels.ref ?? 'ref'] : []),
    labels.wt,
    ...(withRef ? ['wt / ref'] : []),
    'target',
    ...(withRef ? ['ref at target'] : []),
    'wt at target',
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  const notes: string[] = [];
  for (const o of outcomes) {
    for (const r of rowsOf(o)) {
      const ratio = /^[≥≤]/.test(r.target ?? '');
      const cells = [
        r.path,
        `${r.figure} (${r.better} is better)`,
        ...(withRef ? [statText(r.ref)] : []),
        statText(r.wt),
        ...(withRef ? [statText(r.ratio)] : []),
        r.target ?? '—',
        ...(withRef ? [atText(r.refAtTarget, ratio)] : []),
        atText(r.wtAtTarget, ratio),
      ];
      lines.push(`| ${cells.join(' | ')} |`);
    }
    for (const s of checkedSides(o, labels)) {
      if (typeof s.rounds === 'string') notes.push(`${o.spec.id}: ${s.name} ${s.rounds}`);
      else {
        const sat = saturation(s.rounds, 'p99');
        if (sat) notes.push(`${o.spec.id}: ${s.name} ${sat}`);
      }
      const n = 'rounds' in s.side ? s.side.rounds.reduce((sum, r) => sum + (r.errors ?? 0), 0) : 0;
      if (n > 0) notes.push(`${o.spec.id}: ${s.name}: ${n} failed requests over its rounds`);
    }
  }
  return [...lines, ...(notes.length ? ['', ...notes] : [])].join('\n');
}
