/**
 * Token-exchange throughput: appreg's POST /oauth2/access against a reference authorization
 * server, oidc-provider (the OpenID-certified Node implementation), exchanging its own codes.
 * Both run in their own process; a fresh code per request; 50 connections; in one run,
 * alternating rounds.
 *
 *  - appreg holds 10,000 apps and 100,000+ issued tokens, seeded through the service layer
 *    by an in-process daemon (fsync off while seeding only), then restarted as `appreg serve`
 *    with fsync ON: every exchange is durable (journal fdatasync, group commit) before its
 *    response. The token endpoint's rate limit stays on (it is keyed per caller and client).
 *  - oidc-provider 9 with a confidential client (client_secret_post), EdDSA id_token signing
 *    (its cheapest signature) and an unbounded in-memory adapter (its bundled one is an LRU of
 *    1,000 entries, which would evict the pre-minted codes); it is not durable.
 *
 * Run: npm run build && node dist/bench/oauth-exchange.js   (a few minutes; BENCH_APPS / BENCH_SECONDS to shrink)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { BENCH_REDIRECT, inBatches, seedBenchApps, load, processCpuMs, startDaemonProcess, writeResult, type LoadResult } from './lib.js';
import { loadConfig } from '../src/config.js';
import { silentLogger } from '../src/logger.js';
import { startDaemon } from '../src/server/start.js';
import { T } from '../src/services/records.js';
import { OT } from '../src/services/oauth/records.js';

const APPS = Number(process.env.BENCH_APPS ?? 10_000);
const USERS = Number(process.env.BENCH_USERS ?? 10); // tokens seeded = APPS * USERS (+ one bot token per app)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONC = 50;
const CODES = Number(process.env.BENCH_CODES ?? 50_000); // per server per round (more than a round uses)
const REDIRECT = BENCH_REDIRECT;

interface Client { id: string; secret: string }

/** Seed apps, users and tokens through the service layer; mint the codes the timed rounds use. */
async function seedAppreg(dir: string): Promise<{ clients: Client[]; codes: Array<{ client: number; code: string }[]>; tokens: number; apps: number; authorizations: number; seedSeconds: number }> {
  const t0 = performance.now();
  const config = { ...loadConfig({ dataDir: dir, port: 0 }, {}), fsync: false, codeTtlSeconds: 600, logLevel: 'warn' as const };
  const d = await startDaemon(config, { logger: silentLogger });
  try {
    const { store } = d.parts;
    const { exchange } = d.parts.oauth;
    const { users, clients, grant } = await seedBenchApps(d, { apps: APPS, users: USERS, width: 200 });
    console.error(`seeded ${clients.length} apps in ${Math.round(performance.now() - t0)} ms`);
    await inBatches(APPS * USERS, 500, async (k) => {
      const c = clients[k % APPS]!;
      await exchange.exchange({ clientId: c.id, clientSecret: c.secret, code: await grant(c, users[Math.floor(k / APPS)]!) });
    });
    const tokens = await store.count(OT.tokens);
    console.error(`seeded ${tokens} tokens in ${Math.round(performance.now() - t0)} ms`);
    const codes = [];
    for (let r = 0; r < ROUNDS + 1; r++) {
      codes.push(await inBatches(CODES, 500, async (i) => {
        const client = (i * 7919 + r * 104729) % APPS;
        return { client, code: await grant(clients[client]!, users[i % USERS]!) };
      }));
    }
    return { clients, codes, tokens, apps: await store.count(T.apps), authorizations: await store.count(OT.authorizations), seedSeconds: Math.round((performance.now() - t0) / 100) / 10 };
  } finally {
    await d.close();
  }
}

function multipart(parts: Record<string, string>): { body: string; type: string } {
  const b = `----bench${crypto.randomBytes(8).toString('hex')}`;
  let body = '';
  for (const [k, v] of Object.entries(parts)) body += `--${b}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  return { body: body + `--${b}--\r\n`, type: `multipart/form-data; boundary=${b}` };
}

/** CPU ticks (1/100 s) a process has used so far. */
function cpuTicks(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]);
}

/**
 * Wait until both servers are idle (under 5% CPU for a second), so that neither's background
 * work (appreg's idle compaction of its data file, oidc-provider's GC) lands in the other's round
 * on this 2-core machine.
 */
async function quiet(pids: number[]): Promise<number> {
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 2500)); // appreg compacts after 2 s without commits
  let calm = 0;
  let last = pids.map(cpuTicks);
  while (calm < 4 && performance.now() - t0 < 60_000) {
    await new Promise((r) => setTimeout(r, 250));
    const now = pids.map(cpuTicks);
    calm = now.every((v, i) => v - last[i]! <= 1) ? calm + 1 : 0;
    last = now;
  }
  return Math.round(performance.now() - t0);
}

// ---- the reference server, in its own process ---------------------------------------------

async function oidcChild(codesFile: string, n: number): Promise<void> {
  const REF_MODULE: string = 'oidc-provider'; // untyped package: imported through a variable
  const { default: Provider } = await import(REF_MODULE);
  const store = new Map<string, { payload: Record<string, unknown>; exp?: number }>();
  const grants = new Map<string, Set<string>>();
  class MapAdapter {
    constructor(private name: string) {}
    key(id: string) { return `${this.name}:${id}`; }
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
    async findByUserCode() { return undefined; }
    async consume(id: string) {
      const e = store.get(this.key(id));
      if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) { store.delete(this.key(id)); }
    async revokeByGrantId(grantId: string) {
      for (const k of grants.get(grantId) ?? []) store.delete(k);
      grants.delete(grantId);
    }
  }
  const jwk = crypto.generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  const provider = new Provider('http://127.0.0.1', {
    adapter: MapAdapter as never,
    clients: [{ client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef0123456789abcdef', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post', id_token_signed_response_alg: 'EdDSA' }],
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
    const code = new provider.AuthorizationCode({ accountId: `user-${i % 10}`, client, grantId, redirectUri: REDIRECT, scope: 'openid', authTime: Math.floor(Date.now() / 1000) } as never);
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
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--oidc-child', codesFile, String(n)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.on('exit', (c) => reject(new Error(`oidc-provider child exited ${c}`)));
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /ready (\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, pid: child.pid!, stop: () => new Promise((r) => { child.removeAllListeners('exit'); child.once('exit', () => r()); child.kill('SIGTERM'); }) });
    });
  });
}

// ---- the run ---------------------------------------------------------------------------------

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-oauth-'));
  const codesFile = path.join(dir, 'oidc-codes.txt');
  try {
    const seed = await seedAppreg(dir);
    process.env.APPREG_CODE_TTL_SECONDS = '600';
    delete process.env.APPREG_FSYNC; // the measured daemon runs with the default: fsync on
    const daemon = await startDaemonProcess(dir);
    const rssAfterStart = daemon.rssMb();
    const oidcCodesNeeded = CODES * (ROUNDS + 1);
    const oidc = await startOidc(codesFile, oidcCodesNeeded);
    const oidcCodes = fs.readFileSync(codesFile, 'utf8').split('\n');
    const aPool = new Pool(daemon.url, { connections: CONC, pipelining: 1 });
    const oPool = new Pool(oidc.url, { connections: CONC, pipelining: 1 });

    const appregRound = (codes: Array<{ client: number; code: string }>, seconds: number) =>
      load(async (i) => {
        const c = codes[i];
        if (!c) return false;
        const cl = seed.clients[c.client]!;
        const { body, type } = multipart({ 'client-id': cl.id, 'client-secret': cl.secret, code: c.code });
        const r = await aPool.request({ method: 'POST', path: '/oauth2/access', headers: { 'content-type': type }, body });
        const j = (await r.body.json()) as { accessToken?: string };
        return r.statusCode === 200 && !!j.accessToken;
      }, { concurrency: CONC, seconds, total: codes.length });
    let oNext = 0;
    const oidcRound = (seconds: number, budget: number) => {
      const start = oNext;
      return load(async (i) => {
        const code = oidcCodes[start + i];
        if (!code) return false;
        oNext = Math.max(oNext, start + i + 1);
        const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'bench', client_secret: 'bench-secret-0123456789abcdef0123456789abcdef' }).toString();
        const r = await oPool.request({ method: 'POST', path: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
        const j = (await r.body.json()) as { access_token?: string };
        return r.statusCode === 200 && !!j.access_token;
      }, { concurrency: CONC, seconds, total: budget });
    };

    // warm-up (JIT, connections) for 5 s each, from the spare code set
    const pids = [daemon.child.pid!, oidc.pid];
    await quiet(pids);
    const wa = await appregRound(seed.codes[ROUNDS]!, 8);
    await quiet(pids);
    const wo = await oidcRound(8, CODES);
    console.error(`warm-up: appreg ${wa.rps}/s (${wa.errors} errors), oidc-provider ${wo.rps}/s (${wo.errors} errors)`);

    const rounds: Array<{ appreg: LoadResult; oidcProvider: LoadResult }> = [];
    const daemonCpu: number[] = []; // the daemon's CPU per exchange (µs) in each round
    for (let r = 0; r < ROUNDS; r++) {
      await quiet(pids);
      const cpu0 = processCpuMs(daemon.child.pid!);
      const a = await appregRound(seed.codes[r]!, SECONDS);
      daemonCpu.push(Math.round(((processCpuMs(daemon.child.pid!) - cpu0) * 1000) / Math.max(1, a.requests)));
      await quiet(pids);
      const o = await oidcRound(SECONDS, CODES);
      console.error(`round ${r + 1}: appreg ${a.rps}/s p99 ${a.p99} ms (${a.errors} errors) | oidc-provider ${o.rps}/s p99 ${o.p99} ms (${o.errors} errors)`);
      rounds.push({ appreg: a, oidcProvider: o });
    }
    const mem = daemon.rssMb();
    await aPool.close();
    await oPool.close();
    await daemon.stop();
    await oidc.stop();

    const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    const appregRps = mean(rounds.map((r) => r.appreg.rps));
    const oidcRps = mean(rounds.map((r) => r.oidcProvider.rps));
    const ratio = Math.round((appregRps / oidcRps) * 100) / 100;
    const perRound = rounds.map((r) => Math.round((r.appreg.rps / r.oidcProvider.rps) * 100) / 100);
    writeResult('oauth-exchange', {
      benchmark: 'authorization-code exchange, a fresh code per request, 50 concurrent connections, each server in its own process, load generator in a third',
      machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}`,
      appreg: {
        endpoint: 'POST /oauth2/access (multipart/form-data, as the official SDK sends it)',
        durable: 'fsync on: each exchange is fdatasynced (group commit) before its response',
        held: { apps: seed.apps, tokens: seed.tokens, authorizations: seed.authorizations, users: USERS, codesPending: CODES * (ROUNDS + 1) },
        seedSeconds: seed.seedSeconds,
        memoryMb: { afterStart: rssAfterStart.rss, afterLoad: mem.rss, peak: mem.hwm },
        daemonCpuUsPerExchange: daemonCpu,
      },
      reference: {
        name: 'oidc-provider 9 (panva/node-oidc-provider)',
        endpoint: 'POST /token (client_secret_post, grant_type=authorization_code, openid scope → access_token + EdDSA id_token)',
        durable: 'no: in-memory adapter',
      },
      method: 'warm-up 8 s each, then alternating rounds; before every round the bench waits until both server processes are idle (under 5% CPU for 1 s), so background work (appreg compacting its data file, the reference collecting garbage) does not land in the other\'s round',
      rounds,
      meanRps: { appreg: appregRps, oidcProvider: oidcRps },
      ratio,
      ratioPerRound: perRound,
      target: 1.5,
      met: ratio >= 1.5,
      at: new Date().toISOString(),
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--oidc-child') {
  oidcChild(process.argv[3]!, Number(process.argv[4])).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
