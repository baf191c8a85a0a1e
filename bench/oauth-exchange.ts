/**
 * Token-exchange throughput: appreg's POST /oauth2/access against a reference authorization
 * server, oidc-provider (the OpenID-certified Node implementation), exchanging its own codes.
 * Both run in their own process; a fresh code per request; 50 connections; in one run,
 * rounds taking turns, each once both servers are idle.
 *
 *  - appreg holds 10,000 apps and 100,000+ issued tokens, seeded over HTTP (management API,
 *    the grant call, the token endpoint: what every build of appreg answers alike, so that
 *    `npm run bench:compare` seeds each build with its own code) by the daemon with fsync off,
 *    then restarted with fsync ON: every exchange is durable (journal fdatasync, group commit)
 *    before its response. The token endpoint's rate limit stays on (it is keyed per caller and client).
 *  - oidc-provider 9 with a confidential client (client_secret_post), EdDSA id_token signing
 *    (its cheapest signature) and an unbounded in-memory adapter (its bundled one is an LRU of
 *    1,000 entries, which would evict the pre-minted codes); it is not durable.
 *
 * Run: npm run build && node dist/bench/oauth-exchange.js   (several minutes)
 * Env: BENCH_APPS (10,000), BENCH_USERS (10), BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_CODES (50,000 per server per
 * round)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import {
  BENCH_REDIRECT,
  benchManifest,
  inBatches,
  isMain,
  load,
  median,
  processCpuMs,
  ROOT,
  startDaemonProcess,
  writeResult,
  type DaemonProc,
  multipart,
} from './lib.js';
import {
  launchOf,
  takeTurns,
  type Build,
  type Launch,
  type Figures,
  type HotPath,
  type RunOptions,
  type Side,
} from './sides.js';
import { openFigureSpecs, openFigures, openLoop } from './open-loop.js';
import { must } from '../src/must.js';

const CONC = 50;
const REDIRECT = BENCH_REDIRECT;
/** Codes must outlive the seeding of every side and all their rounds (the daemon caps it at 600: postponeCodes). */
export const CODE_TTL_SECONDS = '7200';

interface Sizes {
  apps: number;
  users: number;
  codesPerRound: number;
}
const SIZES: Record<'quick' | 'compare', Sizes> = {
  quick: { apps: 200, users: 2, codesPerRound: 6000 },
  compare: { apps: 1000, users: 3, codesPerRound: 20_000 },
};
export const fullSizes = (): Sizes => ({
  apps: Number(process.env.BENCH_APPS ?? 10_000),
  users: Number(process.env.BENCH_USERS ?? 10),
  codesPerRound: Number(process.env.BENCH_CODES ?? 50_000),
});

interface Client {
  id: string;
  secret: string;
}
interface Code {
  client: number;
  code: string;
}
interface Seeded {
  clients: Client[];
  codes: Code[][];
  held: { apps: number; users: number; tokensIssued: number; codesPending: number };
  seedSeconds: number;
}

/** A JSON call to the daemon; throws unless it answers `want`. */
async function call<T>(
  pool: Pool,
  method: 'GET' | 'POST',
  p: string,
  headers: Record<string, string>,
  want: number,
  body?: unknown,
): Promise<T> {
  const r = await pool.request({
    method,
    path: p,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.body.text();
  if (r.statusCode !== want)
    throw new Error(`${method} ${p.replace(/\?.*/, '')} answered ${r.statusCode}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** One exchange of `code` by `client`, as the official SDK sends it; whether a token came back. */
export async function exchange(pool: Pool, client: Client, code: string): Promise<boolean> {
  const { body, type } = multipart(
    { 'client-id': client.id, 'client-secret': client.secret, code },
    `----bench${crypto.randomBytes(8).toString('hex')}`,
  );
  const r = await pool.request({ method: 'POST', path: '/oauth2/access', headers: { 'content-type': type }, body });
  const j = (await r.body.json()) as { accessToken?: string };
  return r.statusCode === 200 && !!j.accessToken;
}

/**
 * Seed the data directory `dir` through the daemon of the build at `root`, over HTTP, fsync off:
 * `users` users (each logged in), `apps` bot apps, one exchange per user and app, and the codes
 * of `sets` rounds. The daemon is stopped again; the measured one starts with fsync on.
 */
export async function seedOverHttp(root: string, dir: string, sizes: Sizes, sets: number): Promise<Seeded> {
  const t0 = performance.now();
  const d = await startDaemonProcess(dir, [], root, {
    env: {
      ...process.env,
      APPREG_FSYNC: 'false',
      APPREG_CODE_TTL_SECONDS: CODE_TTL_SECONDS,
      APPREG_RATE_LIMIT_MANAGEMENT_WRITES: '0',
    },
  });
  const pool = new Pool(d.url, { connections: CONC, pipelining: 1 });
  try {
    const owner = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8')) as {
      workspaceId: string;
      workspaceUserId: string;
      authToken: string;
    };
    const ownerBase = `/workspaces/${owner.workspaceId}/workspaceUsers/${owner.workspaceUserId}`;
    const users: Array<{ base: string; authtoken: string }> = [];
    for (let u = 0; u < sizes.users; u++) {
      const email = `bench${u}@example.com`;
      const password = 'bench-password-0123456789';
      const made = await call<{ id: string }>(
        pool,
        'POST',
        `/workspaces/${owner.workspaceId}/workspaceUsers`,
        { authtoken: owner.authToken },
        201,
        { email, name: `Bench ${u}`, password },
      );
      const login = await call<{ authToken: string }>(pool, 'POST', '/auth/login', {}, 200, { email, password });
      users.push({ base: `/workspaces/${owner.workspaceId}/workspaceUsers/${made.id}`, authtoken: login.authToken });
    }
    const clients = await inBatches(sizes.apps, CONC, async (i) => {
      const app = await call<{ id: string; clientSecret: string }>(
        pool,
        'POST',
        `${ownerBase}/apps`,
        { authtoken: owner.authToken },
        201,
        benchManifest(i),
      );
      return { id: app.id, secret: app.clientSecret };
    });
    const grant = async (client: number, user: number): Promise<Code> => {
      const u = must(users[user]);
      const q = new URLSearchParams({
        clientId: must(clients[client]).id,
        scopes: 'messages:read,bot:messages:read,bot:messages:write',
        redirectUrl: REDIRECT,
      });
      return {
        client,
        code: (
          await call<{ code: string }>(pool, 'GET', `${u.base}/oauth2/grant?${q}`, { authtoken: u.authtoken }, 200)
        ).code,
      };
    };
    console.error(
      `  seeded ${clients.length} apps and ${users.length} users in ${Math.round(performance.now() - t0)} ms`,
    );
    await inBatches(sizes.apps * sizes.users, CONC, async (k) => {
      const c = await grant(k % sizes.apps, Math.floor(k / sizes.apps));
      if (!(await exchange(pool, must(clients[c.client]), c.code))) throw new Error('a seeding exchange failed');
    });
    console.error(`  seeded ${sizes.apps * sizes.users} exchanges in ${Math.round(performance.now() - t0)} ms`);
    const codes: Code[][] = [];
    for (let r = 0; r < sets; r++)
      codes.push(
        await inBatches(sizes.codesPerRound, CONC, (i) => grant((i * 7919 + r * 104729) % sizes.apps, i % sizes.users)),
      );
    return {
      clients,
      codes,
      held: {
        apps: clients.length,
        users: users.length,
        tokensIssued: sizes.apps * sizes.users,
        codesPending: sets * sizes.codesPerRound,
      },
      seedSeconds: Math.round((performance.now() - t0) / 100) / 10,
    };
  } finally {
    await pool.close();
    await d.stop();
  }
}

/**
 * The codes of the data directory `dir` (its data file, one record a line: the seeding daemon
 * compacted it at close) expire a day later, and are swept in that minute: a code lives 10 minutes
 * at most (the daemon caps its TTL), and seeding on a busy machine takes longer than that (then
 * most exchanges failed as expired, and wrote nothing).
 */
export function postponeCodes(dir: string): void {
  const DAY = 86_400_000;
  const file = path.join(dir, 'appreg.json');
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  let table = '';
  for (let i = 0; i < lines.length; i++) {
    const line = must(lines[i]);
    const start = /^,?"([^"]+)":\{$/.exec(line);
    if (start) table = must(start[1]);
    if (table !== 'oauthCodes' || !line.includes('"expiresAt":')) continue;
    const at = Number(/"expiresAt":(\d+)/.exec(line)?.[1]) + DAY;
    lines[i] = line
      .replace(/"expiresAt":\d+/, `"expiresAt":${at}`)
      .replace(/"sweepMinute":"\d+"/, `"sweepMinute":"${Math.floor(at / 60_000)}"`);
  }
  fs.writeFileSync(file, lines.join('\n'));
}

/** appreg's side: the daemon of the build at `root` serving the seeded data, fsync on. */
class AppregSide implements Side {
  private pool: Pool;
  constructor(
    readonly daemon: DaemonProc,
    readonly seed: Seeded,
    readonly dir: string,
    readonly seconds: number,
  ) {
    this.pool = new Pool(daemon.url, { connections: CONC, pipelining: 1 });
  }

  static async open(
    root: string,
    sizes: Sizes,
    rounds: number,
    seconds: number,
    launch: Launch = {},
    /** Code sets to seed: one per round and one to warm by default. */
    sets = rounds + 1,
  ): Promise<AppregSide> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-oauth-'));
    try {
      const seed = await seedOverHttp(root, dir, sizes, sets);
      postponeCodes(dir);
      const env: NodeJS.ProcessEnv = { ...process.env, APPREG_CODE_TTL_SECONDS: CODE_TTL_SECONDS };
      delete env.APPREG_FSYNC; // the measured daemon runs with the default: fsync on
      return new AppregSide(await startDaemonProcess(dir, [], root, { env, ...launch }), seed, dir, seconds);
    } catch (e) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw e;
    }
  }

  /** Exchanges of `codes` open loop at `rate` per second, for `seconds` or until the codes would run out. */
  openExchanges(codes: Code[], rate: number, seconds: number) {
    return openLoop(
      async (i) => {
        const c = codes[i];
        return !!c && exchange(this.pool, must(this.seed.clients[c.client]), c.code);
      },
      { rate, seconds: Math.min(seconds, codes.length / rate) },
    );
  }

  exchanges(codes: Code[], seconds: number) {
    return load(
      async (i) => {
        const c = codes[i];
        return !!c && exchange(this.pool, must(this.seed.clients[c.client]), c.code);
      },
      { concurrency: CONC, seconds, total: codes.length },
    );
  }

  pids = () => [must(this.daemon.child.pid)];
  // warm-up (JIT, connections) from the spare code set
  warm = async () => {
    await this.exchanges(must(this.seed.codes.at(-1)), this.seconds);
  };
  async round(r: number): Promise<Figures> {
    const cpu0 = processCpuMs(must(this.daemon.child.pid));
    const a = await this.exchanges(must(this.seed.codes[r]), this.seconds);
    const cpuUs = Math.round(((processCpuMs(must(this.daemon.child.pid)) - cpu0) * 1000) / Math.max(1, a.requests));
    return { rps: a.rps, p99: a.p99, cpuUs, rssPeakMb: this.daemon.rssMb().hwm, errors: a.errors };
  }

  async close() {
    await this.pool.close();
    await this.daemon.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// ---- the reference server, in its own process ---------------------------------------------

async function oidcChild(codesFile: string, n: number): Promise<void> {
  const REF_MODULE: string = 'oidc-provider'; // untyped package: imported through a variable
  const { default: Provider } = await import(REF_MODULE);
  const store = new Map<string, { payload: Record<string, unknown>; exp?: number }>();
  const grants = new Map<string, Set<string>>();
  class MapAdapter {
    constructor(private name: string) {}
    key(id: string) {
      return `${this.name}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      store.set(this.key(id), { payload, exp: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
      const g = payload.grantId as string | undefined;
      if (g) {
        let s = grants.get(g);
        if (!s) grants.set(g, (s = new Set()));
        s.add(this.key(id));
      }
    }
    async find(id: string) {
      const e = store.get(this.key(id));
      if (!e || (e.exp && e.exp < Date.now())) return undefined;
      return e.payload;
    }
    async findByUid(uid: string) {
      for (const e of store.values()) if (e.payload.uid === uid) return e.payload;
      return undefined;
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const e = store.get(this.key(id));
      if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const k of grants.get(grantId) ?? []) store.delete(k);
      grants.delete(grantId);
    }
  }
  const jwk = crypto.generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  const provider = new Provider('http://127.0.0.1', {
    adapter: MapAdapter as never,
    clients: [
      {
        client_id: 'bench',
        client_secret: 'bench-secret-0123456789abcdef0123456789abcdef',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        id_token_signed_response_alg: 'EdDSA',
      },
    ],
    jwks: { keys: [{ ...jwk, kid: 'k1', alg: 'EdDSA', use: 'sig' }] as never },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => false },
    ttl: { AuthorizationCode: 3600 },
  } as never);
  const client = await provider.Client.find('bench');
  const codes: string[] = [];
  for (let i = 0; i < n; i++) {
    const grant = new provider.Grant({ accountId: `user-${i % 10}`, clientId: 'bench' });
    grant.addOIDCScope('openid');
    const grantId = await grant.save();
    const code = new provider.AuthorizationCode({
      accountId: `user-${i % 10}`,
      client,
      grantId,
      redirectUri: REDIRECT,
      scope: 'openid',
      authTime: Math.floor(Date.now() / 1000),
    } as never);
    codes.push(await code.save());
  }
  fs.writeFileSync(codesFile, codes.join('\n'));
  const server = provider.listen(0, '127.0.0.1');
  server.on('listening', () => {
    const port = (server.address() as { port: number }).port;
    process.stdout.write(`ready http://127.0.0.1:${port}\n`);
  });
}

function startOidc(codesFile: string, n: number): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--oidc-child', codesFile, String(n)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    process.once('exit', () => child.kill('SIGKILL'));
    let out = '';
    child.on('exit', (c) => reject(new Error(`oidc-provider child exited ${c}`)));
    must(child.stdout).on('data', (c) => {
      out += c;
      const m = /ready (\S+)/.exec(out);
      if (m)
        resolve({
          url: must(m[1]),
          pid: must(child.pid),
          stop: () =>
            new Promise((r) => {
              child.removeAllListeners('exit');
              child.once('exit', () => r());
              child.kill('SIGTERM');
            }),
        });
    });
  });
}

/** The floor's side: oidc-provider exchanging `perRound` of its own codes per round (at most). */
async function oidcSide(perRound: number, rounds: number, seconds: number): Promise<Side> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-oidc-'));
  const codesFile = path.join(dir, 'oidc-codes.txt');
  const oidc = await startOidc(codesFile, perRound * (rounds + 1));
  const codes = fs.readFileSync(codesFile, 'utf8').split('\n');
  fs.rmSync(dir, { recursive: true, force: true });
  const pool = new Pool(oidc.url, { connections: CONC, pipelining: 1 });
  let next = 0;
  const exchanges = () => {
    const start = next;
    next += perRound;
    return load(
      async (i) => {
        const code = codes[start + i];
        if (!code) return false;
        const body = new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT,
          client_id: 'bench',
          client_secret: 'bench-secret-0123456789abcdef0123456789abcdef',
        }).toString();
        const r = await pool.request({
          method: 'POST',
          path: '/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body,
        });
        const j = (await r.body.json()) as { access_token?: string };
        return r.statusCode === 200 && !!j.access_token;
      },
      { concurrency: CONC, seconds, total: perRound },
    );
  };
  return {
    pids: () => [oidc.pid],
    warm: async () => {
      await exchanges();
    },
    async round(): Promise<Figures> {
      const o = await exchanges();
      return { rps: o.rps, p99: o.p99, errors: o.errors };
    },
    async close() {
      await pool.close();
      await oidc.stop();
    },
  };
}

/**
 * Issue 36: exchanges open loop at half the maximum rate, p99 < 10 ms. Each round first measures the side's maximum
 * (the closed loop of the exchange path, on one code set), then offers half of it on schedule (on another).
 */
function exchangeOpenSide(a: AppregSide): Side {
  return {
    pids: a.pids,
    warm: a.warm,
    async round(r: number): Promise<Figures> {
      const closed = await a.exchanges(must(a.seed.codes[2 * r]), a.seconds);
      const rate = Math.max(1, Math.floor(closed.rps / 2));
      const pid = must(a.daemon.child.pid);
      const cpu0 = processCpuMs(pid);
      const open = await a.openExchanges(must(a.seed.codes[2 * r + 1]), rate, a.seconds);
      const cpuUs = Math.round(((processCpuMs(pid) - cpu0) * 1000) / Math.max(1, open.answered));
      return { maxRps: closed.rps, ...openFigures(open), cpuUs };
    },
    close: () => a.close(),
  };
}

export const exchangeOpenPath: HotPath = {
  id: 'exchange-open',
  title: 'token exchange, open loop at half the maximum measured in the same round, fsync on',
  figures: openFigureSpecs({ below: 10 }, 'daemon CPU µs per exchange (open loop)', [
    { key: 'maxRps', label: 'maximum exchanges/s (closed loop, 50 connections)', better: 'higher' },
    { key: 'offeredRps', label: 'offered/s (half the maximum)', better: 'higher' },
  ]),
  async setup(o: RunOptions) {
    const sizes = o.scale === 'full' ? fullSizes() : SIZES[o.scale];
    return {
      open: async (build: Build) =>
        exchangeOpenSide(
          await AppregSide.open(build.root, sizes, o.rounds, o.seconds, launchOf(o, build), 2 * o.rounds + 1),
        ),
      async close() {},
    };
  },
};

export const exchangePath: HotPath = {
  id: 'exchange',
  title: 'token exchange, embedded store, fsync on',
  floor: 'oidc-provider (in memory)',
  figures: [
    { key: 'rps', label: 'exchanges/s', better: 'higher', target: { atLeastFloor: 3 } },
    { key: 'p99', label: 'p99 ms', better: 'lower' },
    { key: 'cpuUs', label: 'daemon CPU µs per exchange', better: 'lower' },
    { key: 'rssPeakMb', label: 'daemon RSS peak MB', better: 'lower' },
  ],
  async setup(o: RunOptions) {
    const sizes = o.scale === 'full' ? fullSizes() : SIZES[o.scale];
    return {
      open: async (build: Build) => AppregSide.open(build.root, sizes, o.rounds, o.seconds, launchOf(o, build)),
      floor: () => oidcSide(sizes.codesPerRound, o.rounds, o.seconds),
      async close() {},
    };
  },
};

// ---- the standalone run ------------------------------------------------------------------------

async function main() {
  const sizes = fullSizes();
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
  const appreg = await AppregSide.open(ROOT, sizes, ROUNDS, SECONDS);
  let oidc: Side | undefined;
  try {
    const rssAfterStart = appreg.daemon.rssMb();
    oidc = await oidcSide(sizes.codesPerRound, ROUNDS, SECONDS);
    const turns = await takeTurns(
      [
        ['appreg', appreg],
        ['oidcProvider', oidc],
      ],
      { rounds: ROUNDS, log: (l) => console.error(l) },
    );
    const mem = appreg.daemon.rssMb();
    const a = must(turns.appreg).rounds;
    const ref = must(turns.oidcProvider).rounds;
    const perRound = a.map((r, i) => Math.round((must(r.rps) / must(must(ref[i]).rps)) * 100) / 100);
    const ratio = median(perRound);
    writeResult('oauth-exchange', {
      benchmark:
        'authorization-code exchange, a fresh code per request, 50 concurrent connections, each server in its own process, load generator in a third',
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}`,
      appreg: {
        endpoint: 'POST /oauth2/access (multipart/form-data, as the official SDK sends it)',
        durable: 'fsync on: each exchange is fdatasynced (group commit) before its response',
        held: appreg.seed.held,
        seedSeconds: appreg.seed.seedSeconds,
        memoryMb: { afterStart: rssAfterStart.rss, afterLoad: mem.rss, peak: mem.hwm },
        daemonCpuUsPerExchange: a.map((r) => r.cpuUs),
      },
      reference: {
        name: 'oidc-provider 9 (panva/node-oidc-provider)',
        endpoint:
          'POST /token (client_secret_post, grant_type=authorization_code, openid scope → access_token + EdDSA id_token)',
        durable: 'no: in-memory adapter',
      },
      method:
        "warm-up of one round each, then rounds taking turns; before every round the bench waits until both server processes are idle, so background work (appreg compacting its data file, the reference collecting garbage) does not land in the other's round",
      rounds: { appreg: a, oidcProvider: ref },
      medianRps: { appreg: median(a.map((r) => must(r.rps))), oidcProvider: median(ref.map((r) => must(r.rps))) },
      ratio,
      ratioPerRound: perRound,
      target: 3,
      met: ratio >= 3,
      at: new Date().toISOString(),
    });
  } finally {
    await oidc?.close();
    await appreg.close();
  }
}

if (isMain(import.meta.url) && process.argv[2] === '--oidc-child') {
  oidcChild(must(process.argv[3]), Number(process.argv[4])).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else if (isMain(import.meta.url)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
