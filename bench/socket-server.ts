/**
 * The server side of bench/socket.ts, hosted in a child process (bench/host.ts) so the load loop
 * and the 1,000 client sockets do not share an event loop.
 *   mode "daemon": a real appreg daemon of the build at <root> (bench/build.ts) holding
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
import { startInProcess } from './build.js';
import { serveTarget, type Target } from './host.js';
import { isMain } from './lib.js';
import { must } from '../src/must.js';

export const PAYLOAD = {
  messageType: 'SLASH_COMMAND',
  slashCommand: '/bench',
  text: 'hello from the benchmark',
  userId: 'wu_bench_user_000000000000',
  channelId: 'ch_bench_channel_00000000000',
  workspaceId: 'ws_bench_workspace_0000000000',
  triggerId: 'trg_0000000000000000000000',
};

/** What a ready target tells bench/socket.ts: where to connect, and (daemon modes) the apps to connect as. */
export interface SocketTargetInfo {
  url: string;
  apps?: Array<{ id: string; appKey: string }>;
}

async function daemonMode(root: string, appsWanted: number, viaEngine: boolean): Promise<Target> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-socket-'));
  // maxConnections: the default cap (1,000) counts the 1,000 sockets and the ticket requests' connections alike;
  // maxConnectionsPerAddress: they all come from 127.0.0.1 (older builds ignore the setting)
  const d = await startInProcess(root, dir, {
    rateLimitManagementWrites: 0,
    socketPingIntervalMs: 20_000,
    maxConnections: 4000,
    maxConnectionsPerAddress: 0,
  });
  const apps: Array<{ id: string; appKey: string }> = [];
  for (let i = 0; i < appsWanted; i++) {
    const app = await d.createApp({
      name: `bench-socket-${i}`,
      displayName: `Bench ${i}`,
      bot: true,
      socketMode: true,
      scopes: { botScopes: ['messages:read'], userScopes: [] },
      shortcuts: [],
      slashCommands: [{ command: '/bench', url: 'https://bench.example.com/slash' }],
      eventSubscriptions: { url: 'https://bench.example.com/events', events: [] },
      redirectUrls: ['https://bench.example.com/redirect'],
    });
    apps.push({ id: app.id, appKey: app.appKey });
  }
  const records = await Promise.all(apps.map((a) => d.appById(a.id)));
  const info: SocketTargetInfo = { url: d.url, apps };
  return {
    info: { ...info },
    async roundTrip(i) {
      if (viaEngine) {
        // the whole delivery path: trigger → payload → socket transport → reply → classify → delivery log
        const rec = await d.trigger({
          appId: must(records[i % records.length]).id,
          kind: 'slash-command',
          command: '/bench',
          text: 'bench',
        });
        return rec.outcome === 'acked';
      }
      const r = await d.socketTransport().send({
        deliveryId: `dlv_${i}`,
        attemptId: `att_${i}`,
        app: must(records[i % records.length]),
        payload: PAYLOAD,
        interactive: true,
        budgetMs: 3000,
        retryNum: 0,
        signingSecret: '',
      });
      return r.outcome === 'acked';
    },
    async close() {
      await d.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function echoMode(): Promise<Target> {
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
        pending.delete(must(m.correlation_id));
        done();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const info: SocketTargetInfo = { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/` };
  return {
    info: { ...info },
    roundTrip(i) {
      const ws = must(conns[i % conns.length]);
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

// argv: echo | daemon <root> <apps> | engine <root> <apps>
if (isMain(import.meta.url)) {
  const [mode, root, apps] = process.argv.slice(2);
  serveTarget(async () => {
    if (mode === 'echo') return echoMode();
    if (mode === 'daemon' || mode === 'engine') return daemonMode(must(root), Number(apps ?? 100), mode === 'engine');
    throw new Error(`unknown socket target "${mode}"`);
  });
}
