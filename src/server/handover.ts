/**
 * A restart without a gap (`appreg serve --takeover`): the new daemon loads its code while the old
 * one still serves, then asks it to let go; the old daemon stops as on SIGTERM but keeps its app
 * websockets open, the new one takes the lock, the store and the port, and once it listens the old
 * one closes those websockets (1001) and exits. A socket-mode app's one reconnect (the official SDK
 * asks for a new URL once, 2 s after the close) therefore always finds a daemon that is up.
 *
 * The two processes speak through the data directory and one signal, SIGUSR2:
 *   new → old  SIGUSR2 after writing takeover.json ({pid}): "let go"
 *   old → new  SIGUSR2 once it let go of the lock, the port and the store: "go"
 *   new → old  SIGUSR2 once it listens (or gave up starting): "close your websockets and exit"
 * An old daemon whose daemon.json does not say it hands over (an earlier version) gets SIGTERM
 * instead, and the new one starts once it has exited: a gap, but only the old one's stop.
 */
import fs from 'node:fs';
import path from 'node:path';
import { alive, writeFile0600 } from './data-dir.js';
import { recordOr } from '../unknown-values.js';

/** The signal of every step. */
const HANDOVER_SIGNAL = 'SIGUSR2';
/** What daemon.json says of a daemon that hands over on HANDOVER_SIGNAL. */
export const HANDOVER_PROTOCOL = 1;

/**
 * The waits of a hand-over, bounds on the other process rather than times either one keeps: how
 * long the new daemon waits for the old one to let go (its stop: requests and attempts in flight),
 * how long the old one keeps its websockets for a new one that does not say it listens, and how
 * often a waiting side looks whether the other process still exists.
 */
const LIMITS = { letGoMs: 30_000, readyMs: 60_000, pollMs: 50 };

/** The occurrences of one signal, in order: `next()` resolves on the next one not yet taken. */
export function signalQueue(listen: (fn: () => void) => unknown) {
  let arrived = 0;
  let taken = 0;
  const waiting: Array<() => void> = [];
  listen(() => {
    const w = waiting.shift();
    if (w) w();
    else arrived++;
  });
  return {
    next(): Promise<void> {
      if (arrived > taken) {
        taken++;
        return Promise.resolve();
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}
export type SignalQueue = ReturnType<typeof signalQueue>;

/** Resolves 'signal' when `q` delivers, 'gone' when `pid` no longer exists, 'timeout' after `ms`. */
async function signalOrGone(
  q: SignalQueue,
  pid: number,
  ms: number,
  pollMs: number,
): Promise<'signal' | 'gone' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  let poll: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      q.next().then(() => 'signal' as const),
      new Promise<'gone'>((resolve) => {
        poll = setInterval(() => !alive(pid) && resolve('gone'), pollMs);
      }),
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
  }
}

const takeoverFile = (dataDir: string) => path.join(dataDir, 'takeover.json');

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    return recordOr(JSON.parse(fs.readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
}

const pidOf = (v: Record<string, unknown> | undefined) =>
  typeof v?.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0 ? v.pid : undefined;

/** What the new daemon must still tell the old one: that it listens, or that it gave up. */
export interface Takeover {
  /** The old daemon's pid. */
  from: number;
  /** Whether the old daemon hands over (else it was stopped with SIGTERM and is gone). */
  handedOver: boolean;
  /** Tell the old daemon to close its websockets and exit (after a start, or a failed one). */
  done(): void;
}

/**
 * The new daemon's side, before it starts: find the daemon that holds `dataDir` (daemon.json),
 * ask it to let go and wait until it did. Undefined when no daemon runs there (nothing to take
 * over). Throws with a one-line reason when the old daemon does not let go in time.
 */
export async function takeOver(dataDir: string, go: SignalQueue): Promise<Takeover | undefined> {
  const running = readJson(path.join(dataDir, 'daemon.json'));
  const from = pidOf(running);
  if (from === undefined || from === process.pid || !alive(from)) return undefined;
  if (running?.handover !== HANDOVER_PROTOCOL) {
    // an earlier version: an ordinary stop, then this start
    process.kill(from, 'SIGTERM');
    const how = await signalOrGone(go, from, LIMITS.letGoMs, LIMITS.pollMs);
    if (how !== 'gone') throw new Error(`the daemon running there (pid ${from}) did not stop in time`);
    return { from, handedOver: false, done() {} };
  }
  const file = takeoverFile(dataDir);
  writeFile0600(file, JSON.stringify({ pid: process.pid }) + '\n');
  process.kill(from, HANDOVER_SIGNAL);
  const how = await signalOrGone(go, from, LIMITS.letGoMs, LIMITS.pollMs);
  if (how === 'timeout') {
    fs.rmSync(file, { force: true });
    throw new Error(`the daemon running there (pid ${from}) did not let go of the data directory in time`);
  }
  return {
    from,
    handedOver: how === 'signal',
    done() {
      fs.rmSync(file, { force: true });
      if (alive(from)) process.kill(from, HANDOVER_SIGNAL);
    },
  };
}

/**
 * The old daemon's side, on HANDOVER_SIGNAL: who asks (the pid in takeover.json, a live process
 * other than this one), or undefined for a stray signal.
 */
export function whoTakesOver(dataDir: string): number | undefined {
  const pid = pidOf(readJson(takeoverFile(dataDir)));
  return pid !== undefined && pid !== process.pid && alive(pid) ? pid : undefined;
}

/**
 * The old daemon's side once it let go (lock, port, store): tell the new one to start, then wait
 * until it says it listens (or has gone, or `readyMs` passed). What ended the wait is returned.
 */
export async function handOver(to: number, ready: SignalQueue): Promise<'signal' | 'gone' | 'timeout'> {
  if (!alive(to)) return 'gone';
  process.kill(to, HANDOVER_SIGNAL);
  return signalOrGone(ready, to, LIMITS.readyMs, LIMITS.pollMs);
}
