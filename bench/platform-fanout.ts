/**
 * NEW_MESSAGE fan-out: one app posts through the platform API, 100 subscribed apps (HTTP mode,
 * one local receiver) each get the event; time from the post to the last app's receipt, p50/p99
 * over the samples, with the post's own latency. Daemon in its own process, fsync on.
 * Posts are paced under the platform's limit of 80 messages a minute per app and workspace by
 * spreading them over several posting apps.
 * Run: npm run build && node dist/bench/platform-fanout.js   (about half a minute)
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { percentile, startDaemonProcess, writeResult } from './lib.js';

const LISTENERS = Number(process.env.BENCH_LISTENERS ?? 100);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const POSTERS = Math.ceil(SAMPLES / 70);
const SCOPES = ['messages:read', 'messages:write', 'channels:list'];

async function main() {
  process.env.APPREG_RATE_LIMIT_MANAGEMENT_WRITES = '0';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-'));
  // one receiver for every listening app: it notes when each message id has reached each app
  const seen = new Map<string, { count: number; last: number }>();
  const waiters = new Map<string, () => void>();
  const rx = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      const mId = JSON.parse(JSON.parse(raw).body).mId as string;
      const s = seen.get(mId) ?? { count: 0, last: 0 };
      s.count++;
      s.last = performance.now();
      seen.set(mId, s);
      if (s.count === LISTENERS) waiters.get(mId)?.();
    });
  });
  await new Promise<void>((r) => rx.listen(0, '127.0.0.1', () => r()));
  const rxUrl = `http://127.0.0.1:${(rx.address() as AddressInfo).port}`;
  const d = await startDaemonProcess(dir);
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(dir, 'credentials.json'), 'utf8'));
    const base = `${d.url}/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    const mgmt = (p: string, init: RequestInit = {}) => fetch(base + p, { ...init, headers: { authtoken: creds.authToken, 'content-type': 'application/json' } });
    async function install(name: string, events: string[]) {
      const m = { name, displayName: name, bot: true, botTitle: 'bench', scopes: { botScopes: SCOPES, userScopes: SCOPES }, shortcuts: [], slashCommands: [], eventSubscriptions: { url: `${rxUrl}/events/${name}`, events }, redirectUrls: ['http://localhost:9/redirect'] };
      const app = (await (await mgmt('/apps', { method: 'POST', body: JSON.stringify(m) })).json()) as { id: string; clientSecret: string; appKey: string };
      const q = new URLSearchParams({ clientId: app.id, scopes: [...SCOPES, ...SCOPES.map((s) => `bot:${s}`)].join(','), redirectUrl: 'http://localhost:9/redirect' });
      const { code } = (await (await mgmt(`/oauth2/grant?${q}`)).json()) as { code: string };
      const form = new FormData();
      for (const [k, v] of Object.entries({ 'client-id': app.id, 'client-secret': app.clientSecret, code })) form.append(k, v);
      const tok = (await (await fetch(`${d.url}/oauth2/access`, { method: "POST", body: form })).json()) as { botToken: string };
      if (!tok.botToken) throw new Error(`install failed: ${JSON.stringify({ app, code, tok })}`);
      return { headers: { token: tok.botToken, 'x-app-token': app.appKey, 'content-type': 'application/json' } };
    }
    for (let i = 0; i < LISTENERS; i++) await install(`listener-${i}`, ['NEW_MESSAGE']);
    const posters = [];
    for (let i = 0; i < POSTERS; i++) posters.push(await install(`poster-${i}`, []));
    const chans = (await (await fetch(`${d.url}/v1/channels`, { headers: posters[0]!.headers })).json()) as Array<{ channel: { id: string; name: string } }>;
    if (!Array.isArray(chans)) throw new Error(`listing channels failed: ${JSON.stringify(chans)}`);
    const general = chans.find((c) => c.channel.name === 'general')!.channel.id;

    const fanout: number[] = [];
    const postMs: number[] = [];
    for (let i = 0; i < SAMPLES + 10; i++) {
      const t0 = performance.now();
      const r = await fetch(`${d.url}/v1/channels/${general}/messages`, { method: 'POST', headers: posters[i % POSTERS]!.headers, body: JSON.stringify({ text: `sample ${i}` }) });
      const t1 = performance.now();
      if (r.status !== 200) throw new Error(`post answered ${r.status}: ${await r.text()}`);
      const { id } = (await r.json()) as { id: string };
      if ((seen.get(id)?.count ?? 0) < LISTENERS) await new Promise<void>((res) => waiters.set(id, res));
      waiters.delete(id);
      if (i >= 10) {
        // the first ten warm up the JIT and the connection pool
        fanout.push(seen.get(id)!.last - t0);
        postMs.push(t1 - t0);
      }
    }
    fanout.sort((a, b) => a - b);
    postMs.sort((a, b) => a - b);
    const r2 = (x: number) => Math.round(x * 100) / 100;
    const result = {
      benchmark: `NEW_MESSAGE fan-out to ${LISTENERS} subscribed HTTP apps, one post at a time, daemon in its own process, fsync on`,
      machine: `${os.cpus().length} cores, Node ${process.version}`,
      samples: fanout.length,
      postToLastReceiptMs: { p50: r2(percentile(fanout, 50)), p99: r2(percentile(fanout, 99)), max: r2(fanout[fanout.length - 1]!) },
      postLatencyMs: { p50: r2(percentile(postMs, 50)), p99: r2(percentile(postMs, 99)) },
      targets: { fanoutP99Ms: 50 },
      met: { fanoutP99: percentile(fanout, 99) < 50 },
      at: new Date().toISOString(),
    };
    writeResult('platform-fanout', result);
  } finally {
    await d.stop();
    rx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
