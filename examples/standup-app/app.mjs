#!/usr/bin/env node
/**
 * Standup, an example app for appreg in HTTP mode: the daemon calls the URLs of manifest.json,
 * and this server answers them. Node only, no dependency.
 *
 *   appreg apps create --file examples/standup-app/manifest.json --env-out examples/standup-app/.env
 *   node examples/standup-app/app.mjs
 *
 * It listens on the port of its manifest's URLs (PORT overrides it), refuses every call that is
 * not signed with its signing secret (403, as the official SDK does), and exchanges the OAuth
 * code the consent screen sends to its redirect URL. What it does with each call: standup.mjs.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import { loadApp } from './standup.mjs';

const { manifest, config, standup } = loadApp(new URL('.', import.meta.url));
const port = Number(process.env.PORT ?? new URL(manifest.redirectUrls[0]).port);

/**
 * Whether the daemon signed this request: x-pumble-request-signature is the hex HMAC-SHA256 of
 * "<timestamp>:<body>" with the signing secret (docs/protocol.md §5.1). Old timestamps are
 * refused too, so a captured request cannot be sent again later.
 */
function signed(headers, body) {
  const timestamp = headers['x-pumble-request-timestamp'];
  const signature = headers['x-pumble-request-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (Math.abs(Date.now() - Number(timestamp)) > 5 * 60_000) return false;
  const expected = crypto.createHmac('sha256', config.signingSecret).update(`${timestamp}:${body}`).digest('hex');
  return signature.length === expected.length && crypto.timingSafeEqual(Buffer.from(signature), Buffer.from(expected));
}

function send(res, status, body) {
  if (res.headersSent) return;
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json' }).end(text);
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://app');
  try {
    // OAuth: the consent screen's Allow (or `appreg authorize --follow`) lands here with ?code=…
    if (req.method === 'GET' && url.pathname === '/redirect') {
      const code = url.searchParams.get('code');
      if (!code) return send(res, 400, `Not authorized: ${url.searchParams.get('error') ?? 'no code'}`);
      const t = await standup.exchange(code);
      console.log(`authorized by ${t.userId}: installed in workspace ${t.workspaceId}`);
      return send(res, 200, `Standup is installed in workspace ${t.workspaceId}. You can close this page.`);
    }
    if (req.method !== 'POST') return send(res, 404, 'Standup app: nothing here');
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString('utf8');
    if (!signed(req.headers, body)) return send(res, 403, { message: 'Invalid signature' });
    await standup.handle(JSON.parse(body), (answer) => send(res, 200, answer));
  } catch (e) {
    console.error(`${req.method} ${url.pathname}: ${e.message}`);
    send(res, 500, { message: `Standup failed: ${e.message}` });
  }
});

server.listen(port, '127.0.0.1', () => console.log(`Standup (${config.appId}) listening on http://127.0.0.1:${server.address().port}, calling appreg at ${config.apiUrl}`));
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections(); // the daemon keeps connections alive
  });
