/**
 * The server side of bench/socket.ts, run as a child process (forked, IPC) so the load loop
 * and the 1,000 client sockets do not share an event loop.
 *   mode "daemon": a real appreg daemon (startDaemon with the default extensions) holding
 *                  APPS socket-mode apps; a round trip = the socket transport's send() of one
 *                  delivery to an app (round robin over the apps, and over each app's
 *                  connections inside the transport) until the app's ack resolves it.
 *   mode "engine": the same daemon, but a round trip is a trigger through the delivery engine
 *                  (payload built, socket transport, reply classified, delivery log line).
 *   mode "echo":   a bare `ws` server; a round trip = one `{payload, correlation_id}` text frame to
 *                  a connection (round robin) until the reply with that correlation id arrives
 *                  (JSON-parsed to find it, as the daemon must). The floor of what Node + ws can do.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { load, type LoadResult } from './lib.js';

export const PAYLOAD = {
  messageType: 'SLASH_COMMAND', slashCommand: '/bench', text: 'hello from the benchmark', userId: 'wu_bench_user_000000000000',
  channelId: 'ch_bench_channel_00000000000', workspaceId: 'ws_bench_workspace_0000000000', triggerId: 'trg_0000000000000000000000',
};

export interface GoMessage { type: 'go'; concurrency: number; seconds: number; warmupSeconds: number }
export type ChildMessage =
  | { type: 'ready'; url: string; apps?: Array<{ id: string; appKey: string }>; engine?: boolean }
  | { type: 'result'; result: LoadResult & { rss: number; cpuUsPerRoundTrip: number; cpuCoreShare: number } }
  | { type: 'error'; message: string };

const send = (m: ChildMessage) => process.send!(m);

async function daemonMode(appsWanted: number, viaEngine = false): Promise<{ roundTrip: (i: number) => Promise<boolean>; close(): Promise<void> }> {
  const { loadConfig } = await import('../src/config.js');
  const { createLogger } = await import('../src/logger.js');
  const { startDaemon } = await import('../src/server/start.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-socket-'));
  const config = { ...loadConfig({ dataDir: dir, port: 0 }, {}), logLevel: 'warn' as const, rateLimitManagementWrites: 0, socketPingIntervalMs: 20_000, maxConnectionsPerAddress: 0 };
  const handle = await startDaemon(config, { logger: createLogger({ level: 'warn' }) });
  const b = handle.bootstrapped!;
  const principal = { workspaceId: b.workspaceId, workspaceUserId: b.workspaceUserId, jti: 'bench' };
  const apps: Array<{ id: string; appKey: string }> = [];
  for (let i = 0; i < appsWanted; i++) {
    const { app } = await handle.parts.apps.create(principal, {
      name: `bench-socket-${i}`, displayName: `Bench ${i}`, bot: true, socketMode: true,
      scopes: { botScopes: ['messages:read'], userScopes: [] }, shortcuts: [],
      slashCommands: [{ command: '/bench', url: 'https://bench.example.com/slash' }],
      eventSubscriptions: { url: 'https://bench.example.com/events', events: [] }, redirectUrls: ['https://bench.example.com/redirect'],
    });
    apps.push({ id: app.id, appKey: String(app.appKey) });
  }
  const sm = handle.parts.socket;
  const records = await Promise.all(apps.map(async (a) => (await handle.parts.apps.byId(a.id))!));
  const engine = handle.parts.deliveries;
  send({ type: 'ready', url: handle.url, apps });
  return {
    async roundTrip(i) {
      if (viaEngine) {
        // the whole delivery path: trigger → payload → socket transport → reply → classify → delivery log
        const rec = await engine.trigger(principal, { appId: records[i % records.length]!.id, kind: 'slash-command', command: '/bench', text: 'bench' });
        return rec.outcome === 'acked';
      }
      const r = await sm.transport.send({ deliveryId: `dlv_${i}`, attemptId: `att_${i}`, app: records[i % records.length]!, payload: PAYLOAD, interactive: true, budgetMs: 3000, retryNum: 0, signingSecret: '' });
      return r.outcome === 'acked';
    },
    async close() {
      await handle.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function echoMode(): Promise<{ roundTrip: (i: number) => Promise<boolean>; close(): Promise<void> }> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  const conns: WebSocket[] = [];
  const pending = new Map<string, () => void>();
  wss.on('connection', (ws) => {
    conns.push(ws);
    ws.on('message', (data) => {
      let m: { correlation_id?: string };
      try {
        m = JSON.parse(data.toString());
      } catch {
        return;
      }
      const done = m.correlation_id ? pending.get(m.correlation_id) : undefined;
      if (done) {
        pending.delete(m.correlation_id!);
        done();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  send({ type: 'ready', url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/` });
  return {
    roundTrip(i) {
      const ws = conns[i % conns.length]!;
      const cid = `cor_${i}`;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          pending.delete(cid);
          resolve(false);
        }, 3000);
        pending.set(cid, () => {
          clearTimeout(timer);
          resolve(true);
        });
        ws.send(JSON.stringify({ payload: PAYLOAD, correlation_id: cid }));
      });
    },
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((r) => wss.close(() => server.close(() => r())));
    },
  };
}

/** BENCH_PROF_WINDOW=<dir>: a CPU profile of the measured window only (not start-up, connects or warm-up). */
async function startProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

async function main() {
  const mode = process.argv[2];
  const target = mode === 'daemon' || mode === 'engine' ? await daemonMode(Number(process.argv[3] ?? 100), mode === 'engine') : await echoMode();
  let n = 0;
  process.on('message', async (m: GoMessage | { type: 'stop' }) => {
    try {
      if (m.type === 'go') {
        if (m.warmupSeconds > 0) {
          await load((i) => target.roundTrip(n + i), { concurrency: m.concurrency, seconds: m.warmupSeconds });
          n += 1e9;
        }
        const prof = process.env.BENCH_PROF_WINDOW ? await startProfile() : undefined;
        const cpu0 = process.cpuUsage();
        const result = await load((i) => target.roundTrip(n + i), { concurrency: m.concurrency, seconds: m.seconds });
        const cpu = process.cpuUsage(cpu0);
        if (prof) await prof.stop(`${process.env.BENCH_PROF_WINDOW}/${mode}-c${m.concurrency}-${result.requests}.cpuprofile`);
        n += 1e9;
        // CPU of the server process per round trip (user + system, µs) and its share of one core.
        const cpuUs = cpu.user + cpu.system;
        send({ type: 'result', result: { ...result, cpuUsPerRoundTrip: Math.round((cpuUs / Math.max(1, result.requests)) * 10) / 10, cpuCoreShare: Math.round((cpuUs / 1e6 / result.seconds) * 100) / 100, rss: Math.round(process.memoryUsage().rss / 1048576) } });
      } else if (m.type === 'stop') {
        await target.close();
        process.exit(0);
      }
    } catch (e) {
      send({ type: 'error', message: (e as Error).stack ?? String(e) });
    }
  });
}

main().catch((e) => {
  send({ type: 'error', message: (e as Error).stack ?? String(e) });
  process.exit(1);
});
