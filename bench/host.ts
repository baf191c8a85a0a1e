/**
 * A benchmark target hosted in a child process of its own and driven over IPC: the target (a
 * daemon of some build, run in-process, or a floor such as a bare ws server) and the load loop
 * that calls it share that process, so the parent's event loop (the clients of 1,000 sockets,
 * other sides) stays out of it. The child runs `serveTarget`; the parent `openHost`.
 *
 *   parent → child: go {concurrency, seconds | total} → result (the load loop's figures and the
 *                   process's CPU per round trip); open {rate, seconds} → opened (an open loop's
 *                   latencies from schedule, bench/open-loop.ts); call {name} → called {value}; stop → exit
 *   child → parent: ready {info} once the target is up; error {message} when something failed
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { exitOnSignals, load, type LoadResult } from './lib.js';
import { openLoop, type OpenLoopResult } from './open-loop.js';
import { must } from '../src/must.js';

export interface Target {
  /** Sent to the parent with `ready` (a URL, the apps made, …). */
  info?: Record<string, unknown>;
  /** One round trip of the load loop; i is unique over the target's life. */
  roundTrip(i: number): Promise<boolean>;
  /** One-off measurements the parent can ask for by name. */
  calls?: Record<string, () => Promise<unknown>>;
  close(): Promise<void>;
}

export interface HostResult extends LoadResult {
  /** CPU of the host process (target and load loop) per round trip, user + system (µs). */
  cpuUsPerRoundTrip: number;
  /** The host process's share of one core over the round. */
  cpuCoreShare: number;
  rss: number;
}

interface OpenHostResult extends OpenLoopResult {
  /** CPU of the host process (target and load loop) per answered request, user + system (µs). */
  cpuUsPerRoundTrip: number;
}

interface GoMessage {
  type: 'go';
  concurrency: number;
  seconds?: number;
  total?: number;
}
/** An open loop: `rate` round trips per second on schedule for `seconds` (bench/open-loop.ts). */
interface OpenMessage {
  type: 'open';
  rate: number;
  seconds: number;
}
type ParentMessage = GoMessage | OpenMessage | { type: 'call'; name: string } | { type: 'stop' };
type ChildMessage =
  | { type: 'ready'; info: Record<string, unknown> }
  | { type: 'result'; result: HostResult }
  | { type: 'opened'; result: OpenHostResult }
  | { type: 'called'; value: unknown }
  | { type: 'error'; message: string };

// ---- in the child ----------------------------------------------------------------------------

/** Start the target `make` builds and serve the parent's requests until it says stop. */
export function serveTarget(make: () => Promise<Target>): void {
  const send = (m: ChildMessage) => {
    if (!process.send) throw new Error('a bench target runs as a child process with an IPC channel (fork)');
    process.send(m);
  };
  const fail = (e: unknown) => send({ type: 'error', message: (e as Error).stack ?? String(e) });
  make().then(
    (target) => {
      let n = 0;
      process.on(
        'message',
        (m: ParentMessage) =>
          void (async () => {
            try {
              if (m.type === 'go') {
                const cpu0 = process.cpuUsage();
                const base = n;
                const result = await load((i) => target.roundTrip(base + i), {
                  concurrency: m.concurrency,
                  seconds: m.seconds,
                  total: m.total,
                });
                n += result.requests + m.concurrency;
                const cpu = process.cpuUsage(cpu0);
                const cpuUs = cpu.user + cpu.system;
                send({
                  type: 'result',
                  result: {
                    ...result,
                    cpuUsPerRoundTrip: Math.round((cpuUs / Math.max(1, result.requests)) * 10) / 10,
                    cpuCoreShare: Math.round((cpuUs / 1e6 / result.seconds) * 100) / 100,
                    rss: Math.round(process.memoryUsage().rss / 1048576),
                  },
                });
              } else if (m.type === 'open') {
                const cpu0 = process.cpuUsage();
                const base = n;
                const result = await openLoop((i) => target.roundTrip(base + i), { rate: m.rate, seconds: m.seconds });
                n += result.sent;
                const cpu = process.cpuUsage(cpu0);
                const cpuUsPerRoundTrip = (cpu.user + cpu.system) / Math.max(1, result.answered);
                send({
                  type: 'opened',
                  result: { ...result, cpuUsPerRoundTrip: Math.round(cpuUsPerRoundTrip * 10) / 10 },
                });
              } else if (m.type === 'call') {
                const fn = target.calls?.[m.name];
                if (!fn) throw new Error(`the target has no call "${m.name}"`);
                send({ type: 'called', value: await fn() });
              } else if (m.type === 'stop') {
                await target.close();
                process.exit(0); // a --cpu-prof profile is written on the way out
              }
            } catch (e) {
              fail(e);
            }
          })().catch(fail),
      );
      send({ type: 'ready', info: target.info ?? {} });
    },
    (e) => {
      fail(e);
      process.exit(1);
    },
  );
}

// ---- in the parent ---------------------------------------------------------------------------

export interface Host {
  pid: number;
  info: Record<string, unknown>;
  go(o: { concurrency: number; seconds?: number; total?: number }): Promise<HostResult>;
  /** An open loop at `rate` per second for `seconds`, in the host's process. */
  open(o: { rate: number; seconds: number }): Promise<OpenHostResult>;
  call<T>(name: string): Promise<T>;
  stop(): Promise<void>;
}

/** Fork `script` (a module that calls serveTarget) with `args` on `opts.execPath`; resolves once its target is up. */
export async function openHost(
  script: string,
  args: string[],
  opts: { nodeArgs?: string[]; execPath?: string } = {},
): Promise<Host> {
  // BENCH_DAEMON_LOG_FILE: the host's stderr (a daemon's log, bench/build.ts) appended to this file, as an operator's
  // `appreg serve 2>>file` (or /dev/null), instead of this process's stderr
  const logFile = process.env.BENCH_DAEMON_LOG_FILE;
  const logFd = logFile ? fs.openSync(logFile, 'a') : undefined;
  const child: ChildProcess = fork(script, args, {
    execArgv: opts.nodeArgs ?? [],
    execPath: opts.execPath,
    stdio: ['ignore', 'inherit', logFd ?? 'inherit', 'ipc'],
  });
  if (logFd !== undefined) fs.closeSync(logFd);
  // a benchmark that dies takes its hosts with it
  exitOnSignals();
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      process.removeListener('exit', orphaned);
      r();
    }),
  );
  const next = () =>
    new Promise<ChildMessage>((resolve, reject) => {
      const onExit = (code: number | null, signal: string | null) =>
        reject(new Error(`${script} ${args.join(' ')} exited (${code ?? signal})`));
      child.once('exit', onExit);
      child.once('message', (m: ChildMessage) => {
        child.off('exit', onExit);
        if (m.type === 'error') reject(new Error(m.message));
        else resolve(m);
      });
    });
  const ask = async <K extends ChildMessage['type']>(
    m: ParentMessage,
    want: K,
  ): Promise<Extract<ChildMessage, { type: K }>> => {
    const answer = next();
    child.send(m);
    const got = await answer;
    if (got.type !== want) throw new Error(`expected ${want} from ${script}, got ${got.type}`);
    return got as Extract<ChildMessage, { type: K }>;
  };
  const ready = await next();
  if (ready.type !== 'ready') throw new Error(`expected ready from ${script}, got ${ready.type}`);
  return {
    pid: must(child.pid),
    info: ready.info,
    go: async (o) => (await ask({ type: 'go', ...o }, 'result')).result,
    open: async (o) => (await ask({ type: 'open', ...o }, 'opened')).result,
    call: async <T>(name: string) => (await ask({ type: 'call', name }, 'called')).value as T,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ type: 'stop' });
      await exited;
    },
  };
}
