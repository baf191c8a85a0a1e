/** CLI output: human text (colour only on a terminal, never with NO_COLOR) or --json; errors → exit codes. */
import { Chalk, type ChalkInstance } from 'chalk';

export const EXIT = { ok: 0, internal: 1, usage: 2, unreachable: 3, rejected: 4, daemonError: 5, deliveryFailed: 6 } as const;

/** An error the CLI reports in one line and turns into an exit code. */
export class CliError extends Error {
  constructor(message: string, public readonly exitCode: number, public readonly body?: unknown) {
    super(message);
  }
}

export interface Out {
  json: boolean;
  c: ChalkInstance;
  /** Print data: as JSON with --json, else through the human formatter. */
  print(data: unknown, human?: (c: ChalkInstance) => string): void;
  info(line: string): void;
  warn(line: string): void;
}

/** Whether this process already printed a JSON document on stdout (a --json failure then adds none). */
export const printed = { json: false };

export function createOut(opts: { json?: boolean; stdout?: NodeJS.WriteStream; stderr?: NodeJS.WriteStream; env?: NodeJS.ProcessEnv } = {}): Out {
  const stdout = opts.stdout ?? process.stdout;
  const stderr = opts.stderr ?? process.stderr;
  const env = opts.env ?? process.env;
  const colour = !!stdout.isTTY && !('NO_COLOR' in env) && env.TERM !== 'dumb';
  const c = new Chalk({ level: colour ? 1 : 0 });
  const json = !!opts.json;
  return {
    json,
    c,
    print(data, human) {
      printed.json ||= json || !human;
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
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${c.bold(k.padEnd(w))}  ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('\n');
}

export function table(c: ChalkInstance, headers: string[], rows: string[][]): string {
  if (!rows.length) return c.dim('(none)');
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((s, i) => (s ?? '').padEnd(widths[i]!)).join('  ').trimEnd();
  return [c.bold(line(headers)), ...rows.map(line)].join('\n');
}
