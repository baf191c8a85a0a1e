/** CLI output: human text (colour only on a terminal, never with NO_COLOR) or --json. Exit codes: client/exit.ts. */
import type { ChalkInstance } from 'chalk';
import type { Io } from '../client/io.js';
import type { Run } from './run.js';

export interface Out {
  json: boolean;
  c: ChalkInstance;
  /** Print data: as JSON with --json, else through the human formatter. */
  print(data: unknown, human?: (c: ChalkInstance) => string): void;
  info(line: string): void;
  warn(line: string): void;
}

export const colourOn = (io: Io) => io.isTTY && !('NO_COLOR' in io.env) && io.env.TERM !== 'dumb';

/**
 * The output of one command of this run; with `json`, data is printed as JSON and info lines not at all.
 * Asynchronous because chalk is loaded only when a command runs: `--help` does without it.
 */
export async function createOut(run: Run, json: boolean): Promise<Out> {
  const { stdout, stderr } = run.io;
  const [{ Chalk }] = await Promise.all([import('chalk'), loadDisplayWidth()]);
  const c = new Chalk({ level: colourOn(run.io) ? 1 : 0 });
  return {
    json,
    c,
    print(data, human) {
      run.printedJson ||= json || !human;
      if (json || !human) stdout.write(JSON.stringify(data, null, 2) + '\n');
      else stdout.write(human(c) + '\n');
    },
    info(line) {
      if (!json) stdout.write(line + '\n');
    },
    warn(line) {
      stderr.write(c.yellow('warning: ') + line + '\n');
    },
  };
}

/** string-width, loaded with chalk by createOut (like chalk, `--help` does without it). */
let measure: ((text: string) => number) | undefined;

/** Loads what displayWidth measures with; createOut does it before any command prints. */
export async function loadDisplayWidth(): Promise<void> {
  measure ??= (await import('string-width')).default;
}

/**
 * Terminal columns a text takes: a wide (CJK) character or an emoji (a ZWJ sequence, a flag) takes
 * two, ANSI colour codes none. `.length` counts UTF-16 code units, which misaligns such text.
 */
function displayWidth(text: string): number {
  if (!measure) throw new Error('displayWidth before loadDisplayWidth (createOut loads it)');
  return measure(text);
}

/** `text` followed by spaces up to `width` terminal columns (String#padEnd counts code units). */
export function padDisplay(text: string, width: number): string {
  return text + ' '.repeat(Math.max(0, width - displayWidth(text)));
}

/** Key/value lines for human output. */
export function kv(c: ChalkInstance, rows: Array<[string, unknown]>): string {
  const shown = rows.filter(([, v]) => v !== undefined);
  const w = Math.max(...shown.map(([k]) => displayWidth(k)));
  return shown
    .map(([k, v]) => `${c.bold(padDisplay(k, w))}  ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('\n');
}

/** Columns two spaces apart, each as wide as its widest cell on a terminal (cells may be coloured). */
export function table(c: ChalkInstance, headers: string[], rows: string[][]): string {
  if (!rows.length) return c.dim('(none)');
  const widths = headers.map((h, i) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((s, i) => padDisplay(s ?? '', widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [c.bold(line(headers)), ...rows.map(line)].join('\n');
}
