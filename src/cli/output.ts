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
  const { Chalk } = await import('chalk');
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

/** Key/value lines for human output. */
export function kv(c: ChalkInstance, rows: Array<[string, unknown]>): string {
  const shown = rows.filter(([, v]) => v !== undefined);
  const w = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${c.bold(k.padEnd(w))}  ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n');
}

export function table(c: ChalkInstance, headers: string[], rows: string[][]): string {
  if (!rows.length) return c.dim('(none)');
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((s, i) => (s ?? '').padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [c.bold(line(headers)), ...rows.map(line)].join('\n');
}
