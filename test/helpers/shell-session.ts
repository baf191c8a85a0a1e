/**
 * One bash that runs commands one after another, as a person types them in one terminal: what a
 * command sets (`. .env`, `export X=…`) stays for the next ones. Each command's stdout and stderr
 * go to files of their own; a command run in the background (`&`) keeps writing to its files and
 * is stopped by stop() (or stopAll(), which teardown calls). Only bash and the processes it starts
 * are ever signalled, by their pids.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { must } from '../../src/must.js';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Background {
  pid: number;
  command: string;
  /** What it printed so far (stdout, then stderr). */
  output(): string;
  /** Whether it is still running. */
  running(): boolean;
  /** Send `signal` and wait until it is gone; resolves with its exit status (null when a signal ended it). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export interface ShellSession {
  run(command: string, timeoutMs?: number): Promise<Ran>;
  background(command: string): Promise<Background>;
  stopAll(): Promise<void>;
  close(): Promise<void>;
}

let seq = 0;

export function shellSession(o: { cwd: string; env: Record<string, string>; logDir: string }): ShellSession {
  const bash: ChildProcessWithoutNullStreams = spawn('bash', ['--norc', '--noprofile'], {
    cwd: o.cwd,
    env: o.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let pending = '';
  const waiters: Array<{ marker: string; resolve: (v: string) => void }> = [];
  bash.stdout.on('data', (c: Buffer) => {
    pending += c.toString();
    for (let w = waiters[0]; w; w = waiters[0]) {
      const m = new RegExp(`${w.marker}:(-?\\d+)\\n`).exec(pending);
      if (!m) break;
      pending = pending.slice(m.index + m[0].length);
      waiters.shift();
      w.resolve(must(m[1]));
    }
  });
  let bashErr = '';
  bash.stderr.on('data', (c: Buffer) => (bashErr += c.toString()));
  const exited = new Promise<void>((r) => bash.on('exit', () => r()));
  const started: Background[] = [];

  const ask = (script: string, marker: string, timeoutMs: number) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs} ms (bash said: ${bashErr.slice(-500)})`)),
        timeoutMs,
      );
      waiters.push({ marker, resolve: (v) => (clearTimeout(timer), resolve(v)) });
      bash.stdin.write(script);
    });

  const files = () => {
    const n = ++seq;
    return { out: path.join(o.logDir, `${n}.out`), err: path.join(o.logDir, `${n}.err`) };
  };
  const read = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '');
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  return {
    async run(command, timeoutMs = 60_000) {
      const f = files();
      const marker = `__appreg_done_${seq}__`;
      // a command on a line of its own (it may end with a comment), its streams to its files
      const code = await ask(
        `{\n${command}\n} > ${f.out} 2> ${f.err} < /dev/null\necho "${marker}:$?"\n`,
        marker,
        timeoutMs,
      );
      return { code: Number(code), stdout: read(f.out), stderr: read(f.err) };
    },
    async background(command) {
      const f = files();
      const marker = `__appreg_bg_${seq}__`;
      const pid = Number(
        await ask(`${command} > ${f.out} 2> ${f.err} < /dev/null &\necho "${marker}:$!"\n`, marker, 10_000),
      );
      let status: number | null | undefined;
      const bg: Background = {
        pid,
        command,
        output: () => read(f.out) + read(f.err),
        running: () => status === undefined && alive(pid),
        async stop(signal = 'SIGTERM', timeoutMs = 15_000) {
          if (status !== undefined) return status;
          const marker = `__appreg_wait_${++seq}__`;
          const waited = ask(`wait ${pid}\necho "${marker}:$?"\n`, marker, timeoutMs);
          try {
            process.kill(pid, signal);
          } catch {
            /* already gone */
          }
          const code = Number(await waited);
          status = code > 128 ? null : code;
          return status;
        },
      };
      started.push(bg);
      return bg;
    },
    async stopAll() {
      for (const bg of started.reverse()) await bg.stop().catch(() => process.kill(bg.pid, 'SIGKILL'));
      started.length = 0;
    },
    async close() {
      await this.stopAll();
      bash.stdin.end('exit\n');
      await exited;
    },
  };
}
