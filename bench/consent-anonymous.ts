/**
 * Anonymous load on the consent screen: 200,000 GET /access-request from visitors who never
 * sign in (no cookie, so each is a new visitor), against one daemon process. Records the
 * daemon's RSS before and after, and checks that a user who signed in before the flood is
 * still signed in after it. Target: less than 50 MB added.
 *   npm run bench:consent   (BENCH_CONSENT_REQUESTS to change the count)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { load, startDaemonProcess, writeResult } from './lib.js';
import { must } from '../src/must.js';

const REQUESTS = Number(process.env.BENCH_CONSENT_REQUESTS ?? 200_000);
const CONCURRENCY = 50;
const WARMUP = 10_000;

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-bench-consent-'));
  // the per-address page limit is a separate defence; here the memory of the screen itself is measured
  fs.writeFileSync(
    path.join(dataDir, 'config.json'),
    JSON.stringify({ rateLimitConsent: 0, rateLimitLogin: 0, rateLimitManagementWrites: 0 }),
  );
  const daemon = await startDaemonProcess(dataDir);
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8')) as {
      workspaceId: string;
      workspaceUserId: string;
      authToken: string;
    };
    const mgmt = `${daemon.url}/workspaces/${creds.workspaceId}/workspaceUsers/${creds.workspaceUserId}`;
    const api = (url: string, body: unknown) =>
      fetch(url, {
        method: 'POST',
        headers: { authtoken: creds.authToken, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const created = await api(`${mgmt}/apps`, {
      name: 'bench-consent',
      displayName: 'Bench Consent',
      bot: false,
      scopes: { botScopes: [], userScopes: ['messages:read'] },
      shortcuts: [],
      slashCommands: [],
      eventSubscriptions: { url: '', events: [] },
      redirectUrls: ['http://localhost:9/cb'],
    });
    if (created.status !== 201) throw new Error(`creating the app failed: ${created.status} ${await created.text()}`);
    const app = (await created.json()) as { id: string };
    const password = 'bench password 1';
    await api(`${daemon.url}/workspaces/${creds.workspaceId}/workspaceUsers`, {
      email: 'bench@example.com',
      name: 'Bench',
      password,
    });
    const query = new URLSearchParams({
      clientId: app.id,
      scopes: 'messages:read',
      redirectUrl: 'http://localhost:9/cb',
      state: 'bench',
    }).toString();
    const consentPath = `/access-request?${query}`;

    // a user signs in before the flood
    let res = await fetch(daemon.url + consentPath);
    const visitor = must(must(/appreg_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? ''))[1]);
    const csrf = must(must(/name="csrf" value="([^"]+)"/.exec(await res.text()))[1]);
    res = await fetch(`${daemon.url}/access-request/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `appreg_session=${visitor}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, email: 'bench@example.com', password }),
    });
    const session = must(must(/appreg_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? ''))[1]);
    const signedIn = async () =>
      /Allow/.test(
        await (await fetch(daemon.url + consentPath, { headers: { cookie: `appreg_session=${session}` } })).text(),
      );
    if (!(await signedIn())) throw new Error('the bench user could not sign in');

    const pool = new Pool(daemon.url, { connections: CONCURRENCY, pipelining: 1 });
    const visit = async () => {
      const r = await pool.request({ method: 'GET', path: consentPath });
      await r.body.text();
      return r.statusCode === 200;
    };
    // warm up (JIT, heap sizing, sockets) so that "before" is the daemon in use, not the daemon idle
    await load(visit, { concurrency: CONCURRENCY, total: WARMUP });
    await new Promise((r) => setTimeout(r, 2000));
    const before = daemon.rssMb();
    const run = await load(visit, { concurrency: CONCURRENCY, total: REQUESTS });
    await pool.close();
    await new Promise((r) => setTimeout(r, 2000));
    const after = daemon.rssMb();
    const survived = await signedIn();
    writeResult('consent-anonymous', {
      what: `after ${WARMUP} to warm up, ${REQUESTS} anonymous GET /access-request (no cookie: a new visitor each), ${CONCURRENCY} connections, one daemon process`,
      date: new Date().toISOString(),
      node: process.version,
      cores: os.cpus().length,
      load: run,
      rssMb: { afterWarmup: before.rss, after: after.rss, added: after.rss - before.rss, peak: after.hwm },
      targetAddedMb: 50,
      signedInSessionSurvived: survived,
    });
  } finally {
    await daemon.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
