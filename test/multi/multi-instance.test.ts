/**
 * Three daemons on one PostgreSQL database, every request free to go to any of them (a round-robin
 * balancer in front): what one daemon did is what the others see at once, anything that must happen
 * once happens once, and a daemon killed with SIGKILL loses nothing acknowledged.
 */
import t from 'tap';
import { startDaemons, type Client } from '../helpers/daemons.js';
import { pgDatabaseOrSkip, sqlAt } from '../helpers/pg.js';
import { startReceiver } from '../helpers/receiver.js';
import { connectTestClient } from '../helpers/sdk-socket-client.js';
import {
  createApp,
  grant,
  exchange,
  me,
  Jar,
  csrfOf,
  ALL_SCOPES,
  type CreatedApp,
} from '../fixtures/redirects-flow.js';
import type { TestDaemon } from '../helpers/daemon.js';
import { manifest } from '../helpers/daemon.js';
import { signIn } from '../helpers/console.js';
import { CONDITION_MS } from '../helpers/until.js';
import { must } from '../../src/must.js';

// The fixtures take a TestDaemon; they use only what a Client has.
const as = (c: Client) => c as unknown as TestDaemon;

const ENV = {
  APPREG_DELIVERY_RETRY_SCHEDULE: '0.3,0.3,0.3',
  APPREG_DELIVERY_LEASE_MS: '2000',
  APPREG_RATE_LIMIT_LOGIN: '6',
};

async function json<T = any>(res: Response): Promise<T> {
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = CONDITION_MS): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const trigger = (c: Client, body: Record<string, unknown>) =>
  c.api(`${c.mgmt}/deliveries`, { method: 'POST', json: body });

/**
 * The test cluster trusts local connections, so a password in the URL is ignored by the server: it is there to be kept
 * out of every log.
 */
const PASSWORD = 'pw-must-not-be-logged';
const withPassword = (url: string) => {
  const u = new URL(url);
  u.password = PASSWORD;
  return u.toString();
};

t.test('three daemons on one database', async (t) => {
  const bare = await pgDatabaseOrSkip(t);
  if (!bare) return;
  const url = withPassword(bare);
  const g = await startDaemons(t, 3, url, ENV);
  const d = [0, 1, 2].map((i) => g.client(i));
  const rx = await startReceiver();
  t.teardown(() => rx.close());

  t.test('an app created through one daemon is served by the others at once', async (t) => {
    for (let i = 0; i < 3; i++) {
      const app = await createApp(as(must(d[i])));
      for (let j = 0; j < 3; j++) {
        const res = await must(d[j]).api(`${must(d[j]).mgmt}/apps/mine/${app.id}`);
        t.equal(res.status, 200, `created on ${i}, read on ${j}${res.status === 200 ? '' : ': ' + (await res.text())}`);
      }
      const del = await must(d[(i + 1) % 3]).api(`${must(d[i]).mgmt}/apps/${app.id}`, { method: 'DELETE' });
      t.equal(del.status, 204, 'deleted through another');
      t.equal(
        (await must(d[(i + 2) % 3]).api(`${must(d[i]).mgmt}/apps/mine/${app.id}`)).status,
        404,
        'and gone on the third',
      );
    }
  });

  t.test('a code is exchanged exactly once across daemons, and its reuse revokes what it issued', async (t) => {
    const app = await createApp(as(must(d[0])));
    const g0 = await grant(as(must(d[0])), app);
    t.equal(g0.res.status, 200);
    const parts = { 'client-id': app.id, 'client-secret': app.clientSecret, code: g0.body.code };
    const answers = await Promise.all(Array.from({ length: 50 }, (_x, i) => exchange(as(must(d[i % 3])), parts)));
    const ok = answers.filter((a) => a.res.status === 200);
    t.equal(ok.length, 1, 'exactly one of 50 concurrent exchanges on 3 daemons succeeds');
    t.same(
      [...new Set(answers.filter((a) => a.res.status !== 200).map((a) => `${a.res.status} ${a.body.code}`))],
      ['400 invalid_grant'],
    );
    const issued = must(must(ok[0]).body.accessToken);
    for (let j = 0; j < 3; j++)
      t.equal((await me(as(must(d[j])), issued, app.appKey)).status, 401, `the reuses revoked the token (daemon ${j})`);
  });

  t.test('a revoked token is refused by every daemon as soon as the revoking call answered', async (t) => {
    const app = await createApp(as(must(d[0])));
    const tokens = [];
    for (let i = 0; i < 3; i++) {
      const gr = await grant(as(must(d[i])), app);
      const x = await exchange(as(must(d[(i + 1) % 3])), {
        'client-id': app.id,
        'client-secret': app.clientSecret,
        code: gr.body.code,
      });
      t.equal(x.res.status, 200);
      tokens.push(x.body);
    }
    for (let j = 0; j < 3; j++)
      t.equal((await me(as(must(d[j])), must(must(tokens[0]).accessToken), app.appKey)).status, 200);
    // unauthorize on daemon 1, then ask daemons 0, 1, 2 straight away
    const del = await fetch(`${must(d[1]).url}/v1/app/authorization`, {
      method: 'DELETE',
      headers: { token: must(must(tokens[0]).accessToken), 'x-app-token': app.appKey },
    });
    t.equal(del.status, 204);
    for (let j = 0; j < 3; j++)
      t.equal(
        (await me(as(must(d[j])), must(must(tokens[2]).accessToken), app.appKey)).status,
        401,
        `unauthorize: refused on daemon ${j}`,
      );
    // reinstall on daemon 2: the old bot token stops working everywhere
    const oldBot = must(must(tokens[0]).botToken);
    for (let j = 0; j < 3; j++) t.equal((await me(as(must(d[j])), oldBot, app.appKey)).status, 200);
    const gr = await grant(as(must(d[2])), app, { isReinstall: true });
    const x = await exchange(as(must(d[2])), {
      'client-id': app.id,
      'client-secret': app.clientSecret,
      code: gr.body.code,
    });
    t.equal(x.res.status, 200);
    for (let j = 0; j < 3; j++) {
      t.equal(
        (await me(as(must(d[j])), oldBot, app.appKey)).status,
        401,
        `reinstall: the old bot token refused on daemon ${j}`,
      );
      t.equal(
        (await me(as(must(d[j])), must(x.body.botToken), app.appKey)).status,
        200,
        `the new one works on daemon ${j}`,
      );
    }
    // uninstall through daemon 0 with the new bot token: everything of the app refused everywhere
    const un = await fetch(`${must(d[0]).url}/v1/app/installation`, {
      method: 'DELETE',
      headers: { token: must(x.body.botToken), 'x-app-token': app.appKey },
    });
    if (un.status === 204) {
      for (let j = 0; j < 3; j++)
        t.equal(
          (await me(as(must(d[j])), must(x.body.botToken), app.appKey)).status,
          401,
          `uninstall: refused on daemon ${j}`,
        );
    } else t.fail(`uninstall answered ${un.status}`);
  });

  t.test('the consent screen works when every request goes to the next daemon', async (t) => {
    const app: CreatedApp = await createApp(as(must(d[0])), { redirectUrls: ['https://app.example.com/cb'] });
    const q = new URLSearchParams({
      clientId: app.id,
      scopes: ALL_SCOPES,
      redirectUrl: 'https://app.example.com/cb',
      state: 's1',
    });
    const jar = new Jar();
    // a new user to sign in with (the owner has no password)
    const email = `rr${Date.now()}@example.com`;
    const made = await must(d[1]).api(`/workspaces/${must(d[1]).workspaceId}/workspaceUsers`, {
      method: 'POST',
      json: { email, name: 'Round Robin', password: 'correct horse battery' },
    });
    t.equal(made.status, 201);
    let res = await fetch(`${must(d[0]).url}/access-request?${q}`, { redirect: 'manual' });
    jar.take(res);
    const loginHtml = await res.text();
    res = await fetch(`${must(d[1]).url}/access-request/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(loginHtml), email, password: 'correct horse battery' }),
    });
    t.ok(res.status === 303 || res.status === 302, `signed in through daemon 1 (${res.status})`);
    jar.take(res);
    res = await fetch(`${must(d[2]).url}/access-request?${q}`, {
      headers: { cookie: jar.header() },
      redirect: 'manual',
    });
    t.equal(res.status, 200, 'the consent page on daemon 2 knows the session');
    const html = await res.text();
    t.match(html, /Allow/);
    res = await fetch(`${must(d[0]).url}/access-request/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: must(d[0]).workspaceId, decision: 'allow' }),
    });
    t.equal(res.status, 303, 'the CSRF token of daemon 2 is good on daemon 0');
    const code = must(new URL(must(res.headers.get('location'))).searchParams.get('code'));
    const x = await exchange(as(must(d[1])), { 'client-id': app.id, 'client-secret': app.clientSecret, code });
    t.equal(x.res.status, 200, 'and the code from daemon 0 is exchanged on daemon 1');
  });

  t.test('a browser signed out on one daemon is signed out on every daemon at once', async (t) => {
    const { cookie, csrf } = await signIn(as(must(d[0])));
    for (let j = 0; j < 3; j++)
      t.equal((await fetch(`${must(d[j]).url}/`, { headers: { cookie } })).status, 200, `signed in on daemon ${j}`);
    const out = await fetch(`${must(d[1]).url}/console/sign-out`, {
      method: 'POST',
      body: new URLSearchParams({ csrf }),
      headers: { cookie },
      redirect: 'manual',
    });
    t.equal(out.status, 303, 'signed out through daemon 1');
    for (let j = 0; j < 3; j++)
      t.equal(
        (await fetch(`${must(d[j]).url}/`, { headers: { cookie } })).status,
        401,
        `the same cookie is refused on daemon ${j}`,
      );
  });

  t.test(
    'an account signed out everywhere through one daemon: its sessions from every daemon are refused by all',
    async (t) => {
      const here = await signIn(as(must(d[0])));
      const there = await signIn(as(must(d[2])));
      const out = await fetch(`${must(d[1]).url}/console/sign-out-everywhere`, {
        method: 'POST',
        body: new URLSearchParams({ csrf: here.csrf }),
        headers: { cookie: here.cookie },
        redirect: 'manual',
      });
      t.equal(out.status, 303, 'signed out everywhere through daemon 1');
      for (let j = 0; j < 3; j++) {
        t.equal(
          (await fetch(`${must(d[j]).url}/`, { headers: { cookie: here.cookie } })).status,
          401,
          `this browser's cookie is refused on daemon ${j}`,
        );
        t.equal(
          (await fetch(`${must(d[j]).url}/`, { headers: { cookie: there.cookie } })).status,
          401,
          `the other browser's too, on daemon ${j}`,
        );
      }
    },
  );

  t.test('the login limit counts attempts on every daemon together', async (t) => {
    // the window opens at the email's first attempt, so seven attempts in a row share it
    const email = `limit${Date.now()}@example.com`;
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await must(d[i % 3]).api('/auth/login', {
        method: 'POST',
        noAuth: true,
        json: { email, password: 'wrong password!' },
      });
      statuses.push(res.status);
    }
    t.same(statuses.slice(0, 6), [401, 401, 401, 401, 401, 401], 'six attempts (the limit) answered');
    t.equal(statuses[6], 429, `the seventh, on a third daemon, is limited (${statuses.join(' ')})`);
  });

  t.test('a login code made on one daemon signs the official CLI in on the others', async (t) => {
    const post = (i: number, path: string, body: unknown) =>
      fetch(`${must(d[i]).url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await json(r) }));
    const lead = await post(0, '/lead', { email: 'owner@appreg.test' });
    t.equal(lead.status, 200);
    const codeRes = await must(d[1]).api(`${must(d[1]).mgmt}/login-codes?email=owner@appreg.test`);
    t.equal(codeRes.status, 200, 'the code is readable on daemon 1');
    const { code } = await json<{ code: string }>(codeRes);
    const act = await post(2, '/lead/activate', { email: 'owner@appreg.test', code, leadId: lead.body.id });
    t.equal(act.status, 200, 'and accepted on daemon 2');
    const login = await post(0, '/lead/login', { leadId: lead.body.id });
    t.equal(login.status, 200);
    const item = login.body.items[0];
    const pair = await post(1, `/workspaces/${item.workspace.id}/exchange`, { exchangeToken: item.exchangeToken });
    t.equal(pair.status, 200);
    // a refresh token rotates once: two daemons racing with the same one → one new pair
    const both = await Promise.all(
      [1, 2].map((i) => post(i, `/workspaces/${item.workspace.id}/refresh`, { refreshToken: pair.body.refreshToken })),
    );
    t.equal(both.filter((b) => b.status === 200).length, 1, 'one refresh of two concurrent ones succeeds');
  });

  t.test('each attempt of a retrying event happens once, whichever daemon claims it', async (t) => {
    const app = await createApp(as(must(d[0])), {
      eventSubscriptions: { url: `${rx.url}/ev-once`, events: ['NEW_MESSAGE'] },
    });
    rx.secret = app.signingSecret;
    const tries = new Map<string, number>();
    rx.on('/ev-once', (r) => {
      const id = String(r.headers['x-appreg-delivery-id']);
      const n = (tries.get(id) ?? 0) + 1;
      tries.set(id, n);
      return { status: n <= 2 ? 503 : 200 };
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await trigger(must(d[i % 3]), { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
      t.equal(res.status, 201);
      ids.push((await json(res)).id);
    }
    await until('every event delivered', async () => (ids.every((id) => tries.get(id) === 3) ? true : undefined));
    // none is left pending: an attempt is made only of an event claimed (leased) from the pending table
    const pending = `SELECT count(*)::int AS n FROM appreg_records WHERE tbl = 'pendingDeliveries' AND id = ANY($1)`;
    await until('nothing left pending', async () =>
      must((await sqlAt<{ n: number }>(bare, pending, [ids]))[0]).n === 0 ? true : undefined,
    );
    t.notMatch(g.output(), /outcome dropped/, 'no daemon made an attempt of an event another one had ended');
    const attempts = rx.received
      .filter((r) => r.path === '/ev-once')
      .map((r) => `${r.headers['x-appreg-delivery-id']}#${r.headers['x-appreg-retry-num'] ?? 0}`);
    t.equal(attempts.length, 36, 'three attempts per event, no more');
    t.equal(new Set(attempts).size, 36, 'no attempt made twice');
    for (const id of ids) {
      const rec = await json(await must(d[(ids.indexOf(id) + 1) % 3]).api(`${must(d[0]).mgmt}/deliveries/${id}`));
      t.equal(rec.state, 'delivered', 'the delivery log (in the database) shows it on another daemon');
    }
  });

  t.test('a socket-mode app connected to one daemon gets triggers and events sent through the others', async (t) => {
    const res = await must(d[0]).api(`${must(d[0]).mgmt}/apps`, {
      method: 'POST',
      json: manifest({ socketMode: true, name: 'multi-' + Math.random().toString(36).slice(2, 8) }),
    });
    t.equal(res.status, 201);
    const app = await json<{ id: string; appKey: string }>(res);
    const client = connectTestClient(t, must(d[2]), app, {
      handler: (p) => (JSON.stringify(p).includes('NEW_MESSAGE') ? undefined : { status: 200, body: { text: 'pong' } }),
    });
    await client.start();
    const shown = await json<{ connections: number }>(await must(d[0]).api(`${must(d[0]).mgmt}/apps/mine/${app.id}`));
    t.equal(shown.connections, 1, 'apps get through daemon 0 counts the connection daemon 2 holds');
    for (const i of [0, 1]) {
      const tr = await trigger(must(d[i]), { appId: app.id, kind: 'slash-command', command: '/test' });
      const body = await json(tr);
      t.equal(tr.status, 201, JSON.stringify(body));
      t.ok(
        ['acked', 'response'].includes(body.outcome),
        `trigger through daemon ${i} reached the app on daemon 2 within the 3 s budget: ${body.outcome}`,
      );
    }
    const ev = await trigger(must(d[1]), { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
    t.equal(ev.status, 201);
    await until('the event on the socket', async () =>
      client.delivered.some((x) => JSON.stringify(x.payload).includes('NEW_MESSAGE')) ? true : undefined,
    );
    t.pass('the event reached the app');
  });

  t.test('a daemon with another key refuses to start against the database', async (t) => {
    await t.rejects(g.add({ ownKey: true }), /not the key/, 'refused at start');
  });

  t.test("the connection string's password is in no daemon's output", async (t) => {
    t.ok(g.output().length > 0);
    t.notOk(g.output().includes(PASSWORD));
  });
});

t.test(
  'a daemon killed with SIGKILL loses nothing acknowledged; its claimed event is taken over when the lease runs out',
  async (t) => {
    const url = await pgDatabaseOrSkip(t);
    if (!url) return;
    const g = await startDaemons(t, 1, url, {
      ...ENV,
      APPREG_DELIVERY_RETRY_SCHEDULE: '0.5,0.5,0.5',
      APPREG_DELIVERY_EVENT_TIMEOUT_MS: '3000',
    });
    const a = g.client(0);
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const app = await createApp(as(a), { eventSubscriptions: { url: `${rx.url}/ev-kill`, events: ['NEW_MESSAGE'] } });
    let phase: 'hang' | 'ok' = 'hang';
    rx.on('/ev-kill', () => (phase === 'hang' ? { hang: true } : { status: 200 }));
    // the first attempt is cut at 300 ms; the retry 0.5 s later is claimed by the only daemon, and hangs
    const tr = await trigger(a, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE', timeoutMs: 300 });
    const first = await json(tr);
    t.equal(first.state, 'retrying');
    await until('the retry under way', async () =>
      rx.received.filter((r) => r.path === '/ev-kill').length >= 2 ? true : undefined,
    );
    const appB = await createApp(as(a)); // acknowledged just before the kill
    must(g.daemons[0]).child.kill('SIGKILL');
    await must(g.daemons[0]).exited;
    // the lease the killed daemon left on the event, read before any other daemon runs: the takeover must wait for it
    const [held] = await sqlAt<{ owner: string | null; until: number | null }>(
      url,
      `SELECT data->>'leaseOwner' AS owner, (data->>'leaseUntil')::float8 AS until
         FROM appreg_records WHERE tbl = 'pendingDeliveries' AND id = $1`,
      [first.id],
    );
    t.ok(held?.owner, 'the killed daemon held the event on a lease');
    const leaseUntil = must(held?.until ?? undefined);
    phase = 'ok';
    await g.add();
    await g.add();
    const b = g.client(1);
    t.equal(
      (await b.api(`${b.mgmt}/apps/mine/${appB.id}`)).status,
      200,
      'the app acknowledged before the kill is there',
    );
    const rec = await until('the event taken over', async () => {
      const r = await json(await b.api(`${b.mgmt}/deliveries/${first.id}`));
      return r.state === 'delivered' ? r : undefined;
    });
    const calls = rx.received.filter((r) => r.path === '/ev-kill');
    const hung = must(calls.at(-2)); // the killed daemon's last attempt
    const takeover = must(calls.at(-1));
    // the daemons and the receiver read the same system clock: the claim that took the lease over ran at or after
    // its end (a claim takes a lease only once it ran out), and the receiver stamped the attempt after that claim
    t.ok(takeover.at >= leaseUntil, `tried again only once the lease ran out (${takeover.at} ≥ ${leaseUntil})`);
    t.equal(takeover.headers['x-appreg-delivery-id'], first.id, 'the same delivery, taken over');
    t.ok(
      Number(takeover.headers['x-appreg-retry-num']) > Number(hung.headers['x-appreg-retry-num']),
      'the attempt the killed daemon made is counted: the takeover comes as a later retry',
    );
    t.equal(rec.state, 'delivered', 'delivered by another daemon after the lease ran out');
  },
);
