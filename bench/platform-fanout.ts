/**
 * NEW_MESSAGE fan-out: one app posts through the platform API, 100 subscribed apps (HTTP mode,
 * one local receiver) each get the event; time from the post to the last app's receipt, p50/p99
 * over the samples, with the post's own latency. Daemon in its own process, fsync on.
 * Posts are paced under the platform's limit of 80 messages a minute per app and workspace by
 * spreading them over several posting apps. `npm run bench:compare` runs it for two builds in
 * turns (fanoutPath); a build without the platform API is n/a there.
 * Run: npm run build && node dist/bench/platform-fanout.js   (about half a minute)
 * Env: BENCH_LISTENERS (100), BENCH_SAMPLES (200)
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { isMain, percentile, processCpuMs, ROOT, startDaemonProcess, writeResult, type DaemonProc } from './lib.js';
import {
  launchOf,
  NotInBuild,
  type Build,
  type Launch,
  type Figures,
  type HotPath,
  type RunOptions,
  type Side,
} from './sides.js';
import { openFigureSpecs, openFigures, openLoop } from './open-loop.js';
import { must } from '../src/must.js';
import { installBenchApp, type OwnerCredentials } from './platform-app.js';

/** Posts per posting app, under the platform's 80 a minute whatever the pace. */
const POSTS_PER_POSTER = 70;
/** Samples before the timed ones (JIT, the daemon's connection pool to the receiver). */
const WARM = 10;
const r2 = (x: number) => Math.round(x * 100) / 100;

/** A receiver for every listening app: it notes when each message id has reached each app. */
async function startReceiver(listeners: number) {
  const seen = new Map<string, { count: number; last: number }>();
  const waiters = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      const mId = JSON.parse(JSON.parse(raw).body).mId as string;
      const s = seen.get(mId) ?? { count: 0, last: 0 };
      s.count++;
      s.last = performance.now();
      seen.set(mId, s);
      if (s.count === listeners) waiters.get(mId)?.();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** When the last of the listeners got message `id` (performance.now()). */
    async lastReceipt(id: string): Promise<number> {
      if ((seen.get(id)?.count ?? 0) < listeners) await new Promise<void>((res) => waiters.set(id, res));
      waiters.delete(id);
      return must(seen.get(id)).last;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The daemon of a build with `listeners` subscribed apps and the posting apps; posts one sample at a time. */
class FanoutSide implements Side {
  private posted = 0;
  private constructor(
    readonly d: DaemonProc,
    readonly dir: string,
    readonly rx: Awaited<ReturnType<typeof startReceiver>>,
    readonly posters: Array<Record<string, string>>,
    readonly general: string,
    readonly samples: number,
  ) {}

  static async open(
    root: string,
    o: { listeners: number; samplesPerRound: number; rounds: number; launch?: Launch },
  ): Promise<FanoutSide> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-fanout-'));
    const rx = await startReceiver(o.listeners);
    const d = await startDaemonProcess(dir, [], root, {
      env: { ...process.env, APPREG_RATE_LIMIT_MANAGEMENT_WRITES: '0' },
      ...o.launch,
    });
    try {
      const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8')) as OwnerCredentials;
      const install = (name: string, events: string[]) =>
        installBenchApp(d.url, creds, name, { url: `${rx.url}/events/${name}`, events }).then((a) => a.headers);
      const posters = [await install('poster-0', [])];
      const listed = await fetch(`${d.url}/v1/channels`, { headers: posters[0] });
      if (listed.status === 404) throw new NotInBuild('no platform API (GET /v1/channels answered 404)');
      const chans = (await listed.json()) as Array<{ channel: { id: string; name: string } }>;
      if (!Array.isArray(chans)) throw new Error(`listing channels failed: ${JSON.stringify(chans)}`);
      const general = must(chans.find((c) => c.channel.name === 'general')).channel.id;
      for (let i = 0; i < o.listeners; i++) await install(`listener-${i}`, ['NEW_MESSAGE']);
      const total = WARM + o.rounds * o.samplesPerRound;
      for (let i = 1; i < Math.ceil(total / POSTS_PER_POSTER); i++) posters.push(await install(`poster-${i}`, []));
      return new FanoutSide(d, dir, rx, posters, general, o.samplesPerRound);
    } catch (e) {
      await d.stop();
      await rx.close();
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  /** Post message i; resolves when the post has answered (t1) and when the last app got it (receipt). */
  private async post(i: number): Promise<{ answered: number; receipt: number }> {
    const r = await fetch(`${this.d.url}/v1/channels/${this.general}/messages`, {
      method: 'POST',
      headers: this.posters[Math.floor(i / POSTS_PER_POSTER)],
      body: JSON.stringify({ text: `sample ${i}` }),
    });
    const answered = performance.now();
    if (r.status !== 200) throw new Error(`post answered ${r.status}: ${await r.text()}`);
    const { id } = (await r.json()) as { id: string };
    return { answered, receipt: await this.rx.lastReceipt(id) };
  }

  /** n posts one at a time: each one's time to its last receipt, and the post's own latency (ms). */
  async posts(n: number): Promise<{ fanout: number[]; post: number[] }> {
    const fanout: number[] = [];
    const post: number[] = [];
    for (let k = 0; k < n; k++) {
      const t0 = performance.now();
      const { answered, receipt } = await this.post(this.posted++);
      fanout.push(receipt - t0);
      post.push(answered - t0);
    }
    return { fanout: fanout.sort((a, b) => a - b), post: post.sort((a, b) => a - b) };
  }

  /** Posts at `rate` per second on schedule for `seconds`: each one's time from its schedule to its last receipt. */
  openPosts(rate: number, seconds: number) {
    return openLoop(
      async () => {
        await this.post(this.posted++);
        return true;
      },
      { rate, seconds },
    );
  }

  pids = () => [must(this.d.child.pid)];
  warm = async () => {
    await this.posts(WARM);
  };
  async round(): Promise<Figures> {
    const cpu0 = processCpuMs(must(this.d.child.pid));
    const { fanout, post } = await this.posts(this.samples);
    const cpuUs = Math.round(((processCpuMs(must(this.d.child.pid)) - cpu0) * 1000) / this.samples);
    return {
      p50: r2(percentile(fanout, 50)),
      p99: r2(percentile(fanout, 99)),
      postP50: r2(percentile(post, 50)),
      cpuUs,
    };
  }

  async close() {
    await this.d.stop();
    await this.rx.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Issue 36: NEW_MESSAGE fan-out to 100 apps at 50 posts/s, p99 < 50 ms from the post's scheduled time. */
const OPEN_RATE = 50;

/** The open-loop side: each round posts at OPEN_RATE for the round's length. */
function fanoutOpenSide(f: FanoutSide, seconds: number): Side {
  return {
    pids: f.pids,
    warm: f.warm,
    async round(): Promise<Figures> {
      const pid = must(f.d.child.pid);
      const cpu0 = processCpuMs(pid);
      const r = await f.openPosts(OPEN_RATE, seconds);
      return { ...openFigures(r), cpuUs: Math.round(((processCpuMs(pid) - cpu0) * 1000) / Math.max(1, r.answered)) };
    },
    close: () => f.close(),
  };
}

export const fanoutOpenPath: HotPath = {
  id: 'fanout-open',
  title: `NEW_MESSAGE fan-out to 100 apps, open loop at ${OPEN_RATE} posts/s, scheduled post to last receipt`,
  figures: openFigureSpecs({ below: 50 }, 'daemon CPU µs per post and its 100 deliveries'),
  async setup(o: RunOptions) {
    return {
      open: async (build: Build) =>
        fanoutOpenSide(
          await FanoutSide.open(build.root, {
            listeners: 100,
            samplesPerRound: Math.ceil(OPEN_RATE * o.seconds),
            rounds: o.rounds,
            launch: launchOf(o, build),
          }),
          o.seconds,
        ),
      async close() {},
    };
  },
};

export const fanoutPath: HotPath = {
  id: 'fanout',
  title: 'NEW_MESSAGE fan-out to 100 apps, post to last receipt',
  figures: [
    { key: 'p50', label: 'p50 ms', better: 'lower' },
    { key: 'p99', label: 'p99 ms', better: 'lower', target: { below: 50 } },
    { key: 'postP50', label: 'post p50 ms', better: 'lower' },
    { key: 'cpuUs', label: 'daemon CPU µs per post and its 100 deliveries', better: 'lower' },
  ],
  async setup(o: RunOptions) {
    const samplesPerRound = o.scale === 'quick' ? 30 : 100;
    return {
      open: (build: Build) =>
        FanoutSide.open(build.root, {
          listeners: 100,
          samplesPerRound,
          rounds: o.rounds,
          launch: launchOf(o, build),
        }),
      async close() {},
    };
  },
};

async function main() {
  const listeners = Number(process.env.BENCH_LISTENERS ?? 100);
  const samples = Number(process.env.BENCH_SAMPLES ?? 200);
  const side = await FanoutSide.open(ROOT, { listeners, samplesPerRound: samples, rounds: 1 });
  try {
    await side.warm();
    const { fanout, post } = await side.posts(samples);
    writeResult('platform-fanout', {
      benchmark: `NEW_MESSAGE fan-out to ${listeners} subscribed HTTP apps, one post at a time, daemon in its own process, fsync on`,
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      samples: fanout.length,
      postToLastReceiptMs: {
        p50: r2(percentile(fanout, 50)),
        p99: r2(percentile(fanout, 99)),
        max: r2(must(fanout[fanout.length - 1])),
      },
      postLatencyMs: { p50: r2(percentile(post, 50)), p99: r2(percentile(post, 99)) },
      targets: { fanoutP99Ms: 50 },
      met: { fanoutP99: percentile(fanout, 99) < 50 },
      at: new Date().toISOString(),
    });
  } finally {
    await side.close();
  }
}

if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
