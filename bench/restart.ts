/**
 * A daemon's restart under a socket-mode app, as an operator does it: SIGTERM, wait for the exit,
 * `appreg serve` again on the same port (plain), and `appreg serve --takeover` beside the running
 * one (takeover). The store holds 10,000 apps, then ~430,000 records (10,000 apps, 110,000
 * tokens, 100,000 authorizations, 10,000 installations, 200,000 codes: the token benchmark's
 * set). Each round sends 100 app creates and 20 triggers to the app just before the stop, so the
 * stop has work in flight, and checks after the restart that every create answered 201 is there.
 *
 * Per round: stop (SIGTERM to exit), start (spawn to the listening line), stop + start, the app
 * socket's close after SIGTERM, and the gap: from that close until a daemon listens again, which
 * must stay under 2 s (the official SDK asks for a new URL once, 2 s after the close). For a
 * takeover the gap is 0 by design (the old daemon closes the socket after the new one listens).
 *
 * Run: npm run bench:restart [-- <ref>]   (with a ref, that commit is built in a temporary
 * worktree, bench/ref-build.ts, and measured too, before the working tree on the same data)
 * Env: BENCH_ROUNDS (3), BENCH_APPS (10,000), BENCH_SIZES (apps,records)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { Pool } from 'undici';
import { loadConfig } from '../src/config.js';
import { startDaemon } from '../src/server/start.js';
import { OAUTH_TABLES } from '../src/model/oauth.js';
import type { Change } from '../src/store/types.js';
import { exitOnSignals, inBatches, isMain, median, ROOT, seedBenchApps, writeResult } from './lib.js';
import { buildRef } from './ref-build.js';
import { must } from '../src/must.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const APPS = Number(process.env.BENCH_APPS ?? 10_000);
const USERS = 10;
const CODES_PER_APP = 20;
const CREATES = 100;
const TRIGGERS = 20;
const SDK_RETRY_MS = 2000;

type Size = 'apps' | 'records';
const SIZES = (process.env.BENCH_SIZES ?? 'apps,records').split(',') as Size[];

const hex = (n: number) => crypto.randomBytes(n).toString('hex');

/**
 * A data directory with `APPS` apps (and with `records`, the rest of ~430,000 records: each
 * app's tokens, authorizations, installation and codes, copied from real ones the daemon made).
 */
async function seed(size: Size): Promise<{ dir: string; records: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `appreg-bench-restart-${size}-`));
  const config = { ...loadConfig({ dataDir: dir, port: 0 }, {}), logLevel: 'warn' as const, fsync: false };
  const d = await startDaemon(config);
  try {
    const s = await seedBenchApps(d, { apps: APPS, users: size === 'records' ? USERS : 1, width: 50 });
    let records = APPS + s.users.length;
    if (size === 'records') {
      // one app's real grants and exchanges, for every user: the shapes the copies take
      const first = must(s.clients[0]);
      for (const u of s.users) {
        const code = await s.grant(first, u);
        await d.parts.oauth.exchange.exchange({ clientId: first.id, clientSecret: first.secret, code });
      }
      const shapes = {
        tokens: (await d.parts.store.all(OAUTH_TABLES.tokens)) as unknown as Array<Record<string, unknown>>,
        authorizations: (await d.parts.store.all(OAUTH_TABLES.authorizations)) as unknown as Array<
          Record<string, unknown>
        >,
        installations: (await d.parts.store.all(OAUTH_TABLES.installations)) as unknown as Array<
          Record<string, unknown>
        >,
      };
      const codeOf = (await d.parts.store.all(OAUTH_TABLES.codes)) as unknown as Array<Record<string, unknown>>;
      const copy = (r: Record<string, unknown>, appId: string, prefix: string) => ({
        ...r,
        id: `${prefix}${hex(16)}`,
        appId,
      });
      let batch: Change[] = [];
      const put = async (table: string, value: Record<string, unknown>) => {
        batch.push({ table, id: value.id as string, value } as unknown as Change);
        records++;
        if (batch.length >= 2000) await flush();
      };
      const flush = async () => {
        const b = batch;
        batch = [];
        if (b.length) await d.parts.store.commit(b);
      };
      for (const c of s.clients.slice(1)) {
        for (const tk of shapes.tokens) await put(OAUTH_TABLES.tokens, copy(tk, c.id, 't'));
        for (const az of shapes.authorizations) await put(OAUTH_TABLES.authorizations, copy(az, c.id, 'auz_'));
        for (const ins of shapes.installations) await put(OAUTH_TABLES.installations, copy(ins, c.id, 'ins_'));
        for (let k = 0; k < CODES_PER_APP; k++)
          await put(OAUTH_TABLES.codes, copy(must(codeOf[k % codeOf.length]), c.id, ''));
      }
      await flush();
      records += shapes.tokens.length + shapes.authorizations.length + shapes.installations.length + codeOf.length;
    }
    return { dir, records };
  } finally {
    await d.close();
  }
}

interface Served {
  child: ChildProcess;
  url: string;
  listenedAt: number;
  exited: Promise<number>;
}

/** `appreg serve` of the build at `root` on `dir` and `port`, resolved at its listening line (--json). */
function serve(root: string, dir: string, port: number, extra: string[] = []): Promise<Served> {
  exitOnSignals();
  const child = spawn(
    process.execPath,
    ['--', path.join(root, 'bin/appreg.js'), 'serve', '--port', String(port), '--data-dir', dir, '--json', ...extra],
    { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, APPREG_LOG_LEVEL: 'warn' } },
  );
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  const exited = new Promise<number>((r) =>
    child.once('exit', () => {
      process.removeListener('exit', orphaned);
      r(performance.now());
    }),
  );
  return new Promise((resolve, reject) => {
    let out = '';
    void exited.then(() => reject(new Error(`serve exited: ${out}`)));
    must(child.stdout).on('data', (c) => {
      out += c;
      const m = /"url": "(http:\/\/[^"]+)"/.exec(out);
      if (m) resolve({ child, url: must(m[1]), listenedAt: performance.now(), exited });
    });
  });
}

/** The owner's management calls, and the socket app's connection, on whichever daemon listens at `url`. */
class Operator {
  readonly creds: { authToken: string; workspaceId: string; workspaceUserId: string };
  app!: { id: string; appKey: string };
  ws: WebSocket | undefined;
  closedAt = 0;

  constructor(
    readonly dir: string,
    readonly url: string,
  ) {
    this.creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
  }

  get base() {
    return `/workspaces/${this.creds.workspaceId}/workspaceUsers/${this.creds.workspaceUserId}`;
  }

  async call(pool: Pool, method: string, p: string, body?: unknown): Promise<{ status: number; json: any }> {
    const r = await pool.request({
      method: method as 'GET',
      path: p,
      headers: { authtoken: this.creds.authToken, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.body.text();
    return { status: r.statusCode, json: text ? JSON.parse(text) : undefined };
  }

  /** Open the app socket as the SDK does (a URL from websocket-connection, then connect); it acks every trigger. */
  async connect(): Promise<void> {
    const pool = new Pool(this.url, { connections: 1 });
    try {
      const r = await this.call(
        pool,
        'GET',
        `/apps/${this.app.id}/websocket-connection?appKey=${encodeURIComponent(this.app.appKey)}`,
      );
      if (r.status !== 200) throw new Error(`websocket-connection answered ${r.status}`);
      const ws = new WebSocket(r.json.url as string);
      ws.on('message', (data) => {
        const f = JSON.parse(String(data)) as { correlation_id: string };
        ws.send(Buffer.from(JSON.stringify({ correlation_id: f.correlation_id, status: 200, message: 'ok' })));
      });
      ws.once('close', () => (this.closedAt = performance.now()));
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      this.ws = ws;
      this.closedAt = 0;
    } finally {
      await pool.close();
    }
  }

  /** CREATES app creates and TRIGGERS triggers sent now; resolves with the ids of the creates answered 201. */
  inFlight(): { started: Promise<void>; acknowledged: Promise<string[]> } {
    const pool = new Pool(this.url, { connections: 20 });
    let first!: () => void;
    const started = new Promise<void>((r) => (first = r));
    const creates = Array.from({ length: CREATES }, (_, i) =>
      this.call(pool, 'POST', `${this.base}/apps`, {
        ...JSON.parse(JSON.stringify(manifestOf(`restart-${hex(4)}-${i}`))),
      })
        .then((r) => (r.status === 201 ? (r.json.id as string) : undefined))
        .catch(() => undefined)
        .finally(first),
    );
    const triggers = Array.from({ length: TRIGGERS }, () =>
      this.call(pool, 'POST', `${this.base}/deliveries`, {
        appId: this.app.id,
        kind: 'slash-command',
        command: '/bench',
      })
        .catch(() => undefined)
        .finally(first),
    );
    const acknowledged = Promise.all([Promise.all(creates), Promise.all(triggers)]).then(async ([ids]) => {
      await pool.close();
      return ids.filter((x): x is string => !!x);
    });
    return { started, acknowledged };
  }

  /** How many of `ids` the daemon at `url` does not have. */
  async lost(ids: string[]): Promise<number> {
    const pool = new Pool(this.url, { connections: 10 });
    const found = await inBatches(
      ids.length,
      10,
      async (i) => (await this.call(pool, 'GET', `${this.base}/apps/mine/${ids[i]}`)).status === 200,
    );
    await pool.close();
    return found.filter((f) => !f).length;
  }
}

function manifestOf(name: string) {
  return {
    name,
    displayName: name,
    bot: false,
    scopes: { botScopes: [], userScopes: ['messages:read'] },
    shortcuts: [],
    slashCommands: [],
    eventSubscriptions: { url: 'https://bench.example.com/events', events: [] },
    redirectUrls: ['https://bench.example.com/cb'],
  };
}

interface Round {
  stopMs: number;
  startMs: number;
  stopAndStartMs: number;
  socketClosedMs: number;
  /** From the socket's close until a daemon listened again (0: one already did). */
  gapMs: number;
  acknowledged: number;
  lost: number;
}

/** One restart of the daemon `old` (plain or takeover); the new daemon and the round's figures. */
async function restart(
  root: string,
  dir: string,
  port: number,
  op: Operator,
  old: Served,
  mode: 'plain' | 'takeover',
): Promise<{ next: Served; round: Round }> {
  const work = op.inFlight();
  await work.started; // the first answer is back: the rest are under way
  const t0 = performance.now();
  let next: Served;
  let spawnedAt: number;
  if (mode === 'plain') {
    old.child.kill('SIGTERM');
    await old.exited;
    spawnedAt = performance.now();
    next = await serve(root, dir, port);
  } else {
    spawnedAt = t0;
    next = await serve(root, dir, port, ['--takeover']);
  }
  const exitAt = await old.exited;
  const ids = await work.acknowledged;
  // the socket closes at the latest when the old daemon exits
  const closedAt = op.closedAt || exitAt;
  const round: Round = {
    stopMs: Math.round(exitAt - t0),
    startMs: Math.round(next.listenedAt - spawnedAt),
    stopAndStartMs: Math.round(next.listenedAt - t0),
    socketClosedMs: Math.round(closedAt - t0),
    gapMs: Math.max(0, Math.round(next.listenedAt - closedAt)),
    acknowledged: ids.length,
    lost: await op.lost(ids),
  };
  await op.connect();
  return { next, round };
}

const summary = (rounds: Round[]) => {
  const k = ['stopMs', 'startMs', 'stopAndStartMs', 'socketClosedMs', 'gapMs'] as const;
  return {
    ...Object.fromEntries(k.map((f) => [f, median(rounds.map((r) => r[f]))])),
    maxGapMs: Math.max(...rounds.map((r) => r.gapMs)),
    acknowledged: rounds.reduce((a, r) => a + r.acknowledged, 0),
    lost: rounds.reduce((a, r) => a + r.lost, 0),
  };
};

/** Whether the build at `root` knows `serve --takeover`. */
function hasTakeover(root: string): boolean {
  const f = path.join(root, 'dist/src/server/handover.js');
  return fs.existsSync(f);
}

async function main() {
  const ref = process.argv[2];
  const builds: Array<{ name: string; root: string }> = [{ name: 'working tree', root: ROOT }];
  let removeRef: (() => void) | undefined;
  if (ref) {
    const b = await buildRef(ROOT, ref, (l) => console.error(l));
    removeRef = b.remove;
    builds.unshift({ name: `${ref} (${b.sha.slice(0, 7)})`, root: b.root });
  }
  const results: Record<string, unknown> = {};
  try {
    for (const size of SIZES) {
      const t = performance.now();
      const { dir, records } = await seed(size);
      console.error(`${size}: seeded ${records} records in ${Math.round(performance.now() - t)} ms`);
      const bySize: Record<string, unknown> = { records };
      try {
        for (const b of builds) {
          let d = await serve(b.root, dir, 0);
          const port = Number(new URL(d.url).port);
          const op = new Operator(dir, d.url);
          const pool = new Pool(d.url, { connections: 1 });
          const made = await op.call(pool, 'POST', `${op.base}/apps`, {
            ...manifestOf(`restart-socket-${hex(4)}`),
            socketMode: true,
            bot: true,
            botTitle: 'bench',
            scopes: { botScopes: ['messages:write'], userScopes: [] },
            slashCommands: [{ command: '/bench', url: 'https://bench.example.com/slash', usageHint: '' }],
          });
          await pool.close();
          if (made.status !== 201) throw new Error(`the socket app: ${JSON.stringify(made.json)}`);
          op.app = made.json;
          await op.connect();
          const modes = hasTakeover(b.root) ? (['plain', 'takeover'] as const) : (['plain'] as const);
          const byMode: Record<string, unknown> = {};
          for (const mode of modes) {
            const rounds: Round[] = [];
            for (let r = 0; r < ROUNDS; r++) {
              const { next, round } = await restart(b.root, dir, port, op, d, mode);
              d = next;
              rounds.push(round);
              console.error(`${size} ${b.name} ${mode} round ${r + 1}: ${JSON.stringify(round)}`);
            }
            byMode[mode] = { median: summary(rounds), rounds };
          }
          op.ws?.close();
          d.child.kill('SIGTERM');
          await d.exited;
          bySize[b.name] = byMode;
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      results[size] = bySize;
    }
  } finally {
    removeRef?.();
  }
  const wt = results.apps as Record<string, any> | undefined;
  const plain = wt?.['working tree']?.plain?.median;
  writeResult(ref ? `restart-${ref}` : 'restart', {
    benchmark:
      'restart of `appreg serve` under a socket-mode app, 100 creates and 20 triggers in flight, fsync on: SIGTERM then serve (plain), serve --takeover (takeover)',
    machine: `${os.cpus().length} cores, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end`,
    rounds: ROUNDS,
    results,
    targets: { stopAndStartMsAt10kApps: 1000, gapMs: SDK_RETRY_MS },
    met: plain ? { stopAndStartAt10kApps: plain.stopAndStartMs < 1000 } : {},
    at: new Date().toISOString(),
  });
}

if (isMain(import.meta.url))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
