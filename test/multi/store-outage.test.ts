/**
 * A store that cannot be used answers 503 store_unavailable, never 500: with Retry-After and the
 * reason /healthz gives, for the platform API, the management API and the token endpoint. The
 * embedded store on a full disk (the journal's file calls made to fail as a full disk fails them:
 * the store's failure-injection seam, so no real disk has to fill) and three daemons on PostgreSQL
 * while the database is stopped (this file's own throwaway cluster, stopped and started again).
 * Recovery needs nothing: /healthz and every call answer as before once the store is back.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { fullDiskIo } from '../helpers/full-disk.js';
import { manifest, startTestDaemon, tempDir, type TestDaemon } from '../helpers/daemon.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { createApp, grant } from '../fixtures/redirects-flow.js';
import { startPgCluster, testWithPg } from '../helpers/pg.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const healthOf = async (d: { url: string }) => {
  const r = await fetch(`${d.url}/healthz`);
  return { status: r.status, body: (await r.json()) as { ok: boolean; reason?: string } };
};

/** What a refused call answered: its status, code, Retry-After and message. */
async function answer(r: Response) {
  const body = (await r.json().catch(() => ({}))) as { code?: string; message?: string };
  return { status: r.status, code: body.code, retryAfter: r.headers.get('retry-after'), message: body.message ?? '' };
}

t.test(
  'embedded store, full disk: writes answer 503 store_unavailable with Retry-After and the healthz reason; healthz stays 503 until a write of that size succeeds',
  async (t) => {
    const full = { on: false, fits: 40 }; // a full disk still takes a few bytes
    const { io, disk } = fullDiskIo((bytes) => full.on && bytes.length > full.fits);
    const clock = createTestClock(); // the store's retry (every second) runs when the test advances it
    const d = await startTestDaemon({ storeIo: io, clock });
    t.teardown(() => d.stop());
    const { app, tokens, bot } = await installPlatformApp(d);
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const otherApp = await createApp(d);
    const code = (await grant(d, otherApp)).body.code;

    full.on = true;
    const calls: Record<string, () => Promise<Response>> = {
      'POST /v1/channels/{c}/messages (platform API)': () =>
        fetch(`${d.url}/v1/channels/${general}/messages`, {
          method: 'POST',
          headers: { token: must(tokens.botToken), 'x-app-token': app.appKey, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'while the disk is full' }),
        }),
      'POST …/apps (management)': () =>
        d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest({ name: 'during-the-outage' }) }),
      'POST /oauth2/access (token endpoint)': () =>
        fetch(`${d.url}/oauth2/access`, {
          method: 'POST',
          body: new URLSearchParams({ 'client-id': otherApp.id, 'client-secret': otherApp.clientSecret, code }),
        }),
    };
    const seen: string[] = [];
    for (const [name, call] of Object.entries(calls)) {
      const a = await answer(await call());
      seen.push(`${name}: ${a.status} ${a.code}`);
      t.equal(a.status, 503, `${name}: 503`);
      t.equal(a.code, 'store_unavailable', `${name}: its own code`);
      t.equal(a.retryAfter, '1', `${name}: Retry-After`);
      t.match(a.message, /the store cannot write: ENOSPC/, `${name}: the reason`);
    }
    t.comment(`full disk: ${seen.join('; ')}`);
    const h = await healthOf(d);
    t.equal(h.status, 503, '/healthz is 503');
    t.match(h.body.reason, /the store cannot write: ENOSPC/);
    t.notMatch(d.logs(), /"level":"error"/, 'no internal error logged');
    t.match(d.logs(), /writes to the journal fail/, 'the outage is logged once, as a warning');

    // The store retries every second with a write as large as the failed one: while only short
    // writes fit, it stays 503 (before, an empty retry line fitted and /healthz went back to 200).
    const journal = must(fs.readdirSync(d.dataDir).find((f) => f.startsWith('appreg.journal')));
    const sizeBefore = fs.statSync(path.join(d.dataDir, journal)).size;
    const tried = disk.writes;
    await clock.advance(2000);
    t.equal(disk.writes - tried, 2, 'two retries in two seconds');
    t.equal((await healthOf(d)).status, 503, 'still 503 after two retries while only short writes fit');
    t.equal(fs.statSync(path.join(d.dataDir, journal)).size, sizeBefore, 'no retry line reached the journal');

    full.on = false;
    await clock.advance(1000);
    t.equal((await healthOf(d)).status, 200, 'full disk over: /healthz 200 again at the next retry, without a request');
    t.equal((await must(calls['POST /v1/channels/{c}/messages (platform API)'])()).status, 200, 'posts work again');
  },
);

void testWithPg(
  t,
  'three daemons on PostgreSQL: while the database is stopped every call answers 503 store_unavailable; all recover by themselves',
  async (t, url) => {
    const cluster = await startPgCluster();
    if (!cluster.outage) return void t.plan(0, 'APPREG_TEST_PG_URL: the database is not this process’s to stop');
    const clock = createTestClock(); // the daemons': their stores probe the database every second of it
    const first = await startTestDaemon({ clock, config: { databaseUrl: url } });
    t.teardown(() => first.stop());
    const keyFile = path.join(first.dataDir, 'secret.key');
    const daemons: TestDaemon[] = [first];
    for (let i = 0; i < 2; i++) {
      // the owner's credentials, as an operator copies them with the key (a later daemon writes none of its own)
      const dataDir = tempDir();
      fs.copyFileSync(path.join(first.dataDir, 'credentials.json'), path.join(dataDir, 'credentials.json'));
      const d = await startTestDaemon({ dataDir, clock, config: { databaseUrl: url, keyFile } });
      t.teardown(() => d.stop());
      daemons.push(d);
    }
    const { app, tokens, bot } = await installPlatformApp(first);
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;
    const otherApp = await createApp(first);
    const code = (await grant(first, otherApp)).body.code;
    const callsOf = (d: TestDaemon): Record<string, () => Promise<Response>> => ({
      'GET /v1/channels': () =>
        fetch(`${d.url}/v1/channels`, { headers: { token: must(tokens.botToken), 'x-app-token': app.appKey } }),
      'POST /v1/channels/{c}/messages': () =>
        fetch(`${d.url}/v1/channels/${general}/messages`, {
          method: 'POST',
          headers: { token: must(tokens.botToken), 'x-app-token': app.appKey, 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'hello' }),
        }),
      'GET …/apps/mine': () => fetch(`${d.url}${first.mgmt}/apps/mine`, { headers: { authtoken: first.token } }),
      'POST /oauth2/access': () =>
        fetch(`${d.url}/oauth2/access`, {
          method: 'POST',
          body: new URLSearchParams({ 'client-id': otherApp.id, 'client-secret': otherApp.clientSecret, code }),
        }),
    });

    cluster.outage.stop();
    let restarted = false;
    t.teardown(() => (restarted ? undefined : must(cluster.outage).start()));
    const statuses = new Map<string, number>();
    for (const [i, d] of daemons.entries()) {
      for (const [name, call] of Object.entries(callsOf(d))) {
        const a = await answer(await call());
        statuses.set(`${a.status} ${a.code}`, (statuses.get(`${a.status} ${a.code}`) ?? 0) + 1);
        t.equal(a.status, 503, `daemon ${i + 1}, ${name}: 503`);
        t.equal(a.code, 'store_unavailable', `daemon ${i + 1}, ${name}: store_unavailable`);
        t.equal(a.retryAfter, '1', `daemon ${i + 1}, ${name}: Retry-After`);
        t.match(a.message, /the store cannot reach PostgreSQL/, `daemon ${i + 1}, ${name}: the reason`);
      }
      const h = await healthOf(d);
      t.equal(h.status, 503, `daemon ${i + 1}: /healthz 503`);
      t.match(h.body.reason, /the store cannot reach PostgreSQL/);
    }
    t.comment(
      `PostgreSQL stopped, ${daemons.length} daemons × 4 calls: ${[...statuses].map(([k, n]) => `${n}× ${k}`).join(', ')}`,
    );
    for (const d of daemons) {
      t.notMatch(d.logs(), /"level":"error","msg":"request failed"/, 'no request logged as an internal error');
      t.notMatch(d.logs(), /"status":500/, 'no 500 in the access log');
    }

    const errors = daemons.flatMap((d) =>
      d
        .logs()
        .split('\n')
        .filter((l) => l.includes('"level":"error"')),
    );
    t.comment(
      `error lines logged by the daemons during the outage: ${errors.length}${errors.length ? `: ${[...new Set(errors.map((l) => JSON.parse(l).msg))].join('; ')}` : ''}`,
    );
    cluster.outage.start();
    restarted = true;
    await clock.advance(1000);
    t.same(
      (await Promise.all(daemons.map(healthOf))).map((h) => h.status),
      [200, 200, 200],
      "PostgreSQL started again: every daemon's /healthz 200 at its next probe, without a request",
    );
    for (const [i, d] of daemons.entries()) {
      const after = await Promise.all(
        Object.values(callsOf(d))
          .slice(0, 3)
          .map(async (call) => (await call()).status),
      );
      t.same(after, [200, 200, 200], `daemon ${i + 1} answers again`);
    }
  },
  { ownCluster: true },
);
