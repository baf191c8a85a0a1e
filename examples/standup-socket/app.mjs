#!/usr/bin/env node
/**
 * Standup in socket mode: the same app as ../standup-app (its standup.mjs does the work), but
 * every call comes over one websocket the app opens to the daemon, so the app needs no address
 * the daemon can reach: only its OAuth redirect page is served over HTTP, for the browser.
 *
 *   appreg apps create --file examples/standup-socket/manifest.json --env-out examples/standup-socket/.env
 *   node examples/standup-socket/app.mjs
 *
 * The WebSocket is Node's own where it has one (Node 22 and later); Node 20 has it only behind
 * --experimental-websocket, so there the `ws` package that appreg itself installs stands in (it
 * speaks the same API). The steps (docs/socket-mode.md): ask the daemon for a URL with the appKey,
 * connect, answer each {payload, correlation_id} with {correlation_id, status, message | body},
 * and reconnect two seconds after the daemon closes the socket (a restart), as the official SDK does.
 */
import http from 'node:http';
import { loadApp } from '../standup-app/standup.mjs';

const WebSocketClass = globalThis.WebSocket ?? (await import('ws')).WebSocket;

const { manifest, config, standup } = loadApp(new URL('.', import.meta.url));
let stopping = false;
let socket;

/** Events get no answer; every other call gets one, matched by its correlation id. */
const EVENTS = new Set(['PUMBLE_EVENT', 'APP_EVENT']);

async function connect() {
  const res = await fetch(`${config.apiUrl}/apps/${config.appId}/websocket-connection?appKey=${encodeURIComponent(config.appKey)}`);
  if (!res.ok) throw new Error(`websocket-connection answered ${res.status}: ${await res.text()}`);
  const { url } = await res.json();
  const ws = (socket = new WebSocketClass(url));
  ws.onopen = () => console.log(`Standup (${config.appId}) connected to ${config.apiUrl} in socket mode`);
  ws.onmessage = async (m) => {
    if (typeof m.data !== 'string' || m.data === 'pong') return;
    const { payload, correlation_id } = JSON.parse(m.data);
    const reply = (answer) => {
      if (EVENTS.has(payload.messageType)) return;
      // a modal or menu options go back as the body; an acknowledgement with its message
      const out = answer.view || answer.options ? { correlation_id, status: 200, body: answer } : { correlation_id, status: 200, message: answer.message };
      ws.send(JSON.stringify(out));
    };
    try {
      await standup.handle(payload, reply);
    } catch (e) {
      console.error(`${payload.messageType}: ${e.message}`);
    }
  };
  ws.onclose = () => {
    if (stopping) return;
    console.log('disconnected; connecting again in 2 s');
    setTimeout(() => connect().catch((e) => console.error(e.message)), 2000);
  };
  return ws;
}

// The OAuth redirect page: the consent screen's Allow (or `appreg authorize --follow`) lands here.
const port = Number(process.env.PORT ?? new URL(manifest.redirectUrls[0]).port);
const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://app');
  const code = url.searchParams.get('code');
  if (url.pathname !== '/redirect' || !code) return res.writeHead(404).end('Standup: nothing here');
  try {
    const t = await standup.exchange(code);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(`Standup is installed in workspace ${t.workspaceId}. You can close this page.`);
  } catch (e) {
    res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`Not authorized: ${e.message}`);
  }
});

server.listen(port, '127.0.0.1', async () => {
  console.log(`Standup's OAuth redirect page listening on http://127.0.0.1:${server.address().port}`);
  await connect().catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    stopping = true;
    socket?.close();
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
