/**
 * The official CLI's login against a real daemon: a client written here sends what
 * pumble-cli sends (src/services/PumbleApiClient.ts and Login.ts of the official
 * repository): POST /lead, /lead/activate, /lead/login, then /workspaces/{ws}/exchange,
 * /refresh, and the two info calls without an Authtoken.
 */
import fs from 'node:fs';
import t from 'tap';
import { startTestDaemon, tempDir, type TestDaemon } from '../helpers/daemon.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { createTestClock } from '../helpers/test-clock.js';
import { logLines } from '../helpers/log-lines.js';
import { sha256 } from '../../src/crypto.js';
import { must } from '../../src/must.js';

interface Item {
  workspace: { id: string; name: string };
  workspaceUser: { id: string };
  exchangeToken: string;
}
interface Pair {
  token: string;
  refreshToken: string;
}

/** What the official CLI does, call by call, with its bodies; every answer is kept for the test to check. */
class CliLikeClient {
  constructor(
    private readonly d: TestDaemon,
    private readonly now: () => number = Date.now,
  ) {}
  accessToken?: string;
  refreshToken?: string;
  workspaceId?: string;
  workspaceUserId?: string;

  async post(path: string, json: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(this.d.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(json),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }
  lead = (email: string) => this.post('/lead', { email });
  activate = (email: string, code: string, leadId?: string) =>
    this.post('/lead/activate', leadId === undefined ? { email, code } : { email, code, leadId });
  leadLogin = (leadId: string) => this.post('/lead/login', { leadId });
  exchange = (ws: string, exchangeToken: string) => this.post(`/workspaces/${ws}/exchange`, { exchangeToken });
  refresh = (ws: string, refreshToken: string) => this.post(`/workspaces/${ws}/refresh`, { refreshToken });

  /** The whole login as `pumble-cli login` runs it; `codeOf` plays the person typing the code. */
  async login(
    email: string,
    codeOf: (email: string) => Promise<string> | string,
    pick: (items: Item[]) => Item = (i) => must(i[0]),
  ) {
    const lead = await this.lead(email);
    if (lead.status !== 200) throw new Error(`lead ${lead.status}`);
    const act = await this.activate(email, await codeOf(email), lead.body.id);
    if (act.status !== 200) throw new Error(`activate ${act.status} ${JSON.stringify(act.body)}`);
    const login = await this.leadLogin(lead.body.id);
    const chosen = pick(login.body.items);
    const tokens = await this.exchange(chosen.workspace.id, chosen.exchangeToken);
    if (tokens.status !== 200) throw new Error(`exchange ${tokens.status}`);
    this.store(tokens.body, chosen.workspace.id, chosen.workspaceUser.id);
    return { leadId: lead.body.id as string, items: login.body.items as Item[], tokens: tokens.body as Pair };
  }
  store(p: Pair, ws = this.workspaceId, wu = this.workspaceUserId) {
    Object.assign(this, { accessToken: p.token, refreshToken: p.refreshToken, workspaceId: ws, workspaceUserId: wu });
  }
  /** The CLI decodes the middle part of both tokens and reads `exp` (seconds); a token it cannot read is expired. */
  expired(token: string): boolean {
    try {
      return this.now() > JSON.parse(Buffer.from(must(token.split('.')[1]), 'base64').toString()).exp * 1000;
    } catch {
      return true;
    }
  }
  /** Its checkLogin(): refresh an expired access token while the refresh token is not expired. */
  async checkLogin(): Promise<'fresh' | 'refreshed'> {
    if (!this.expired(must(this.accessToken))) return 'fresh';
    if (this.expired(must(this.refreshToken))) throw new Error('the CLI would log in again');
    const r = await this.refresh(must(this.workspaceId), must(this.refreshToken));
    if (r.status !== 200) throw new Error(`refresh ${r.status}`);
    this.store(r.body);
    return 'refreshed';
  }
  mgmt = (path: string, token = must(this.accessToken)) =>
    fetch(`${this.d.url}/workspaces/${this.workspaceId}/workspaceUsers/${this.workspaceUserId}${path}`, {
      headers: { authtoken: token },
    });
  info = () => fetch(`${this.d.url}/workspaces/${this.workspaceId}/info`);
  userInfo = () => fetch(`${this.d.url}/workspaces/${this.workspaceId}/workspaceUsers/${this.workspaceUserId}`);
}

/** The code as the daemon's log shows it (the newest one for this email). */
function codeFromLog(d: TestDaemon, email: string): string {
  const all = [...d.logs().matchAll(/login code (\d{6}) for (\S+) /g)].filter((m) => m[2] === email);
  if (!all.length) throw new Error(`no login code for ${email} in the log`);
  return must(must(all[all.length - 1])[1]);
}

t.test(
  'the whole login as the official CLI runs it; the token is an Authtoken; refresh rotates; a spent refresh token revokes the family',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock, config: { managementTokenTtlSeconds: 600 } });
    t.teardown(() => d.stop());
    const cli = new CliLikeClient(d, clock.now);
    const email = 'owner@appreg.test';

    const { leadId, items, tokens } = await cli.login(email, (e) => codeFromLog(d, e));
    t.match(leadId, /^ald_[A-Za-z0-9_-]{43}$/, 'the lead id is a 256-bit secret');
    t.same(
      items.map((i) => ({ ...i, exchangeToken: typeof i.exchangeToken })),
      [
        {
          workspace: { id: d.workspaceId, name: 'Local workspace' },
          workspaceUser: { id: d.workspaceUserId },
          exchangeToken: 'string',
        },
      ],
    );
    t.same(Object.keys(tokens).sort(), ['refreshToken', 'token']);
    t.notOk(cli.expired(tokens.token), 'the access token carries a readable, future exp');
    t.notOk(cli.expired(tokens.refreshToken), 'so does the refresh token (the CLI decodes it too)');

    t.equal((await cli.mgmt('/apps/mine')).status, 200, 'the token works as Authtoken on a management call');
    const who = await fetch(`${d.url}/auth/whoami`, { headers: { authtoken: tokens.token } });
    t.match(await who.json(), { workspaceUserId: d.workspaceUserId, email });
    t.equal((await cli.mgmt('/apps/mine', tokens.refreshToken)).status, 401, 'a refresh token is not an Authtoken');
    t.equal((await cli.leadLogin(leadId)).status, 400, 'a lead logs in once');
    t.match(
      (await cli.exchange(d.workspaceId, must(items[0]).exchangeToken)).body,
      { code: 'invalid_grant' },
      'an exchange token is used once',
    );

    // the access token expires: the CLI's checkLogin refreshes with the refresh token
    clock.set(clock.now() + 601_000);
    t.equal((await cli.mgmt('/apps/mine')).status, 401, 'the first access token has expired');
    t.equal(await cli.checkLogin(), 'refreshed');
    const second: Pair = { token: must(cli.accessToken), refreshToken: must(cli.refreshToken) };
    t.not(second.refreshToken, tokens.refreshToken, 'the refresh token rotates');
    t.equal((await cli.mgmt('/apps/mine')).status, 200, 'the refreshed token works');
    const third = await cli.refresh(d.workspaceId, second.refreshToken);
    t.equal(third.status, 200, 'the new refresh token refreshes once more');
    t.equal((await cli.mgmt('/apps/mine', third.body.token)).status, 200);
    t.equal(
      (await cli.mgmt('/apps/mine', second.token)).status,
      200,
      'an earlier access token of the family lives until its exp',
    );

    const other = new CliLikeClient(d, clock.now);
    await other.login(email, (e) => codeFromLog(d, e));

    // the first refresh token again: everything descended from this login stops working
    const reuse = await cli.refresh(d.workspaceId, tokens.refreshToken);
    t.equal(reuse.status, 400);
    t.match(reuse.body, { code: 'invalid_grant' });
    t.equal((await cli.mgmt('/apps/mine', third.body.token)).status, 401, 'the newest access token is revoked');
    t.equal((await cli.mgmt('/apps/mine', second.token)).status, 401, 'and the one before');
    t.match(
      (await cli.refresh(d.workspaceId, third.body.refreshToken)).body,
      { code: 'invalid_grant' },
      'the newest refresh token is revoked',
    );
    t.equal((await other.mgmt('/apps/mine')).status, 200, 'another login of the same user is untouched');
    t.equal(
      await other.refresh(d.workspaceId, must(other.refreshToken)).then((r) => r.status),
      200,
      'and so is its refresh token',
    );
    t.match(d.logs(), /spent refresh token was presented again/);

    const logs = d.logs();
    for (const secret of [
      leadId,
      must(items[0]).exchangeToken,
      tokens.token,
      tokens.refreshToken,
      second.refreshToken,
      third.body.token,
    ])
      t.notOk(logs.includes(secret), 'no lead id or token in the log');
  },
);

t.test(
  'one refresh token presented twice at once rotates once; the other is a reuse that revokes the family',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const cli = new CliLikeClient(d, clock.now);
    const { tokens } = await cli.login('owner@appreg.test', (e) => codeFromLog(d, e));
    const both = await Promise.all([
      cli.refresh(d.workspaceId, tokens.refreshToken),
      cli.refresh(d.workspaceId, tokens.refreshToken),
    ]);
    const won = both.filter((r) => r.status === 200);
    t.ok(won.length <= 1, 'never two rotations of one token');
    t.equal(both.filter((r) => r.status === 400).length, 2 - won.length, 'the other is invalid_grant');
    for (const r of won)
      t.equal(
        (await cli.refresh(d.workspaceId, r.body.refreshToken)).status,
        400,
        'the family was revoked by the reuse',
      );
    t.equal((await cli.mgmt('/apps/mine', tokens.token)).status, 401, 'the first access token too');
  },
);

t.test(
  'the info calls answer without an Authtoken (404 for unknown ids) and are rate limited per address',
  async (t) => {
    const d = await startTestDaemon({ config: { rateLimitConsent: 5 } });
    t.teardown(() => d.stop());
    const user = await secondUser(d);
    const cli = new CliLikeClient(d);
    cli.workspaceId = d.workspaceId;
    cli.workspaceUserId = user.id;
    const ws = await cli.info();
    t.equal(ws.status, 200);
    t.same(await ws.json(), { id: d.workspaceId, name: 'Local workspace' });
    const me = await cli.userInfo();
    t.equal(me.status, 200);
    t.same(await me.json(), { id: user.id, name: 'Second User', email: user.email });
    t.equal((await fetch(`${d.url}/workspaces/ws_nope/info`)).status, 404, 'unknown workspace');
    t.equal((await fetch(`${d.url}/workspaces/${d.workspaceId}/workspaceUsers/wu_nope`)).status, 404, 'unknown user');
    const other = (await (await d.api('/workspaces', { method: 'POST', json: { name: 'Other' } })).json()) as {
      id: string;
      workspaceUserId: string;
    };
    const cross = await fetch(`${d.url}/workspaces/${d.workspaceId}/workspaceUsers/${other.workspaceUserId}`);
    t.equal(cross.status, 404, 'a user is found only under their own workspace');
    t.match(await cross.json(), { code: 'not_found' });
    const limited = await cli.info();
    t.equal(limited.status, 429, 'the sixth call this minute from this address');
    t.ok(Number(limited.headers.get('retry-after')) >= 1);
    t.equal((await d.api(`${d.mgmt}/apps/mine`)).status, 200, 'management calls are not affected');
  },
);

t.test(
  'each invalid_grant of the exchange and the refresh logs its own reason and sends one message, never a token',
  async (t) => {
    const clock = createTestClock();
    const d = await startTestDaemon({ clock });
    t.teardown(() => d.stop());
    const email = 'owner@appreg.test';
    const refusedExchange = 'The exchange token is unknown, expired, used or for another workspace; log in again.';
    const refusedRefresh =
      'The refresh token is unknown, expired, used, revoked or for another workspace; log in again.';
    /** Up to the exchange token of a new login. */
    const exchangeToken = async (cli = new CliLikeClient(d, clock.now)) => {
      const lead = await cli.lead(email);
      await cli.activate(email, codeFromLog(d, email), lead.body.id);
      return must((await cli.leadLogin(lead.body.id)).body.items[0] as Item).exchangeToken;
    };
    const loggedIn = async () => {
      const cli = new CliLikeClient(d, clock.now);
      return (await cli.login(email, (e) => codeFromLog(d, e))).tokens;
    };
    /** Move the clock by `ms` while `f` runs. */
    const later = async <T>(ms: number, f: () => Promise<T>): Promise<T> => {
      const t0 = clock.now();
      clock.set(t0 + ms);
      try {
        return await f();
      } finally {
        clock.set(t0);
      }
    };
    /** The exchange or refresh token's record, its user made to be gone. */
    const userGone = async (table: 'loginExchanges' | 'refreshTokens', token: string) => {
      const { store } = d.parts;
      if (table === 'loginExchanges') {
        const rec = must(await store.get(table, sha256(token)));
        await store.commit([{ table, id: rec.id, value: { ...rec, workspaceUserId: 'wu_gone' } }]);
      } else {
        const rec = must(await store.get(table, sha256(token)));
        await store.commit([{ table, id: rec.id, value: { ...rec, workspaceUserId: 'wu_gone' } }]);
      }
    };
    const cli = new CliLikeClient(d, clock.now);
    const ws = d.workspaceId;
    const cases: Array<
      [call: 'exchange' | 'refresh', reason: RegExp, run: () => Promise<{ body: any }>, secret: string]
    > = [];
    const add = (call: 'exchange' | 'refresh', reason: RegExp, secret: string, run: () => Promise<{ body: any }>) =>
      cases.push([call, reason, run, secret]);

    add('exchange', /unknown exchange token/, 'axt_never_issued', () => cli.exchange(ws, 'axt_never_issued'));
    const used = await exchangeToken();
    t.equal((await cli.exchange(ws, used)).status, 200);
    add('exchange', /unknown exchange token/, used, () => cli.exchange(ws, used));
    const late = await exchangeToken();
    add('exchange', /expired/, late, () => later(10 * 60_000 + 1000, () => cli.exchange(ws, late)));
    const elsewhere = await exchangeToken();
    add('exchange', /another workspace/, elsewhere, () => cli.exchange('ws_other', elsewhere));
    const orphan = await exchangeToken();
    await userGone('loginExchanges', orphan);
    add('exchange', /user no longer exists/, orphan, () => cli.exchange(ws, orphan));

    add('refresh', /unknown refresh token/, 'made.up.token', () => cli.refresh(ws, 'made.up.token'));
    const old = await loggedIn();
    add('refresh', /another workspace/, old.refreshToken, () => cli.refresh('ws_other', old.refreshToken));
    add('refresh', /expired/, old.refreshToken, () => later(91 * 86_400_000, () => cli.refresh(ws, old.refreshToken)));
    const spent = await loggedIn();
    const next = await cli.refresh(ws, spent.refreshToken);
    t.equal(next.status, 200);
    add('refresh', /already used.*revoked/, spent.refreshToken, () => cli.refresh(ws, spent.refreshToken));
    add('refresh', /unknown refresh token.*revoked/, next.body.refreshToken, () =>
      cli.refresh(ws, next.body.refreshToken),
    );
    const gone = await loggedIn();
    await userGone('refreshTokens', gone.refreshToken);
    add('refresh', /user no longer exists/, gone.refreshToken, () => cli.refresh(ws, gone.refreshToken));

    for (const [call, reason, run, secret] of cases) {
      const before = d.logs().length;
      const x = await run();
      const what = `${call}, ${reason.source}`;
      t.same(
        x.body,
        { code: 'invalid_grant', message: call === 'exchange' ? refusedExchange : refusedRefresh },
        `${what}: one message`,
      );
      const refusal = logLines(d, before).find((l) => l.msg === `login ${call} refused: invalid_grant`);
      t.match(refusal, { reason, workspaceId: /^ws_/ }, `${what}: the log says why`);
      t.notOk(d.logs().slice(before).includes(secret), `${what}: the token is not logged`);
    }
  },
);

t.test('codes expire after 10 minutes', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const cli = new CliLikeClient(d, clock.now);
  const lead = await cli.lead('owner@appreg.test');
  const code = codeFromLog(d, 'owner@appreg.test');
  clock.set(clock.now() + 10 * 60_000 + 1000);
  const late = await cli.activate('owner@appreg.test', code, lead.body.id);
  t.equal(late.status, 400);
  t.match(late.body, { code: 'invalid_lead', message: /expired/ });
  t.match((await cli.leadLogin(lead.body.id)).body, { code: 'invalid_lead' });
  t.equal(
    (await d.api(`${d.mgmt}/login-codes?email=owner@appreg.test`)).status,
    404,
    'no pending code is shown any more',
  );

  const again = await cli.lead('owner@appreg.test');
  clock.set(clock.now() + 9 * 60_000);
  t.equal(
    (await cli.activate('owner@appreg.test', codeFromLog(d, 'owner@appreg.test'), again.body.id)).status,
    200,
    'within 10 minutes it works',
  );
});

t.test('five wrong codes void the lead; the answers count down', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const cli = new CliLikeClient(d);
  const lead = await cli.lead('owner@appreg.test');
  const right = codeFromLog(d, 'owner@appreg.test');
  const wrong = right === '000000' ? '000001' : '000000';
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push(await cli.activate('owner@appreg.test', wrong, lead.body.id));
  t.same(
    answers.map((a) => a.status),
    [400, 400, 400, 400, 400],
  );
  t.same(
    answers.slice(0, 4).map((a) => a.body.message),
    [
      'The code is wrong; 4 tries left.',
      'The code is wrong; 3 tries left.',
      'The code is wrong; 2 tries left.',
      'The code is wrong; 1 try left.',
    ],
  );
  t.same(
    answers.slice(0, 4).map((a) => a.body.code),
    Array(4).fill('invalid_login_code'),
  );
  t.match(must(answers[4]).body, { code: 'invalid_lead', message: /5 times.*void/ });
  t.match(
    (await cli.activate('owner@appreg.test', right, lead.body.id)).body,
    { code: 'invalid_lead' },
    'the right code no longer helps',
  );
  t.match((await cli.leadLogin(lead.body.id)).body, { code: 'invalid_lead' });
});

t.test('an unknown email gets the same answers, and no code is issued', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const cli = new CliLikeClient(d);
  const known = await cli.lead('owner@appreg.test');
  const unknown = await cli.lead('nobody@example.com');
  t.equal(unknown.status, 200);
  t.same(Object.keys(unknown.body), ['id'], 'the same shape: {id}');
  t.match(unknown.body.id, /^ald_[A-Za-z0-9_-]{43}$/);
  t.equal(unknown.body.id.length, known.body.id.length);
  t.notMatch(d.logs(), /login code \d{6} for nobody@example.com/, 'no code in the log');
  t.match(d.logs(), /login requested for nobody@example.com, which is no user's: no code issued/);
  const wrong = codeFromLog(d, 'owner@appreg.test') === '123456' ? '654321' : '123456';
  for (const [lead, email] of [
    [known, 'owner@appreg.test'],
    [unknown, 'nobody@example.com'],
  ] as const) {
    const a = await cli.activate(email, wrong, lead.body.id);
    t.same(
      [a.status, a.body.code, a.body.message],
      [400, 'invalid_login_code', 'The code is wrong; 4 tries left.'],
      `wrong code for ${email}`,
    );
  }
  t.match((await cli.leadLogin(unknown.body.id)).body, { code: 'invalid_lead' });
  t.equal((await d.api(`${d.mgmt}/login-codes?email=nobody@example.com`)).status, 404);
  const bad = await cli.lead('not an email');
  t.match([bad.status, bad.body.code], [400, 'invalid_request']);
});

t.test('starting a login is rate limited per email', async (t) => {
  const d = await startTestDaemon({ config: { rateLimitLogin: 3 } });
  t.teardown(() => d.stop());
  const cli = new CliLikeClient(d);
  const statuses = [];
  for (const e of ['owner@appreg.test', 'OWNER@appreg.test', ' owner@appreg.test', 'owner@appreg.test'])
    statuses.push((await cli.lead(e)).status);
  t.same(statuses, [200, 200, 200, 429], 'the fourth in a minute, whatever the spelling');
  const limited = await cli.lead('owner@appreg.test');
  t.match(limited.body, { code: 'rate_limited' });
  t.ok(Number(limited.headers.get('retry-after')) >= 1, 'with Retry-After');
  t.equal((await cli.lead('someone@example.com')).status, 200, 'another email is not held up');
});

t.test(
  'the login code endpoint: the user and the workspace owner see it; an owner-read code logs in to that workspace only',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const cli = new CliLikeClient(d);
    const user = await secondUser(d);
    const codes = (token: string, mgmt: string, email: string) =>
      fetch(`${d.url}${mgmt}/login-codes?email=${encodeURIComponent(email)}`, { headers: { authtoken: token } });

    // the second user is also in a workspace of their own
    const own = (await (
      await fetch(`${d.url}/workspaces`, {
        method: 'POST',
        headers: { authtoken: user.token, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Their own' }),
      })
    ).json()) as { id: string; workspaceUserId: string };

    const byUser = await cli.login(user.email, async (e) => {
      const res = await codes(user.token, user.mgmt, e);
      t.equal(res.status, 200, 'the user reads their own code');
      const body = (await res.json()) as Record<string, unknown>;
      t.same(Object.keys(body).sort(), ['attemptsLeft', 'code', 'email', 'expiresAt']);
      t.match(body, { email: user.email, code: codeFromLog(d, user.email), attemptsLeft: 5 });
      return String(body.code);
    });
    t.same(
      byUser.items.map((i) => i.workspace.id).sort(),
      [d.workspaceId, own.id].sort(),
      'their own code: every workspace of the account',
    );

    const byOwner = await cli.login(user.email, async (e) => {
      const res = await codes(d.token, d.mgmt, e);
      t.equal(res.status, 200, 'the workspace owner reads it');
      return String(((await res.json()) as { code: string }).code);
    });
    t.same(
      byOwner.items.map((i) => i.workspace.id),
      [d.workspaceId],
      "read by the owner: only the owner's workspace",
    );

    await cli.lead('owner@appreg.test');
    t.equal(
      (await codes(user.token, user.mgmt, 'owner@appreg.test')).status,
      403,
      "a member who is not the owner cannot read the owner's code",
    );
    t.equal((await fetch(`${d.url}${d.mgmt}/login-codes?email=owner@appreg.test`)).status, 401, 'Authtoken required');
    t.equal((await codes(d.token, d.mgmt, 'not an email')).status, 400);
    t.equal((await codes(d.token, d.mgmt, user.email)).status, 404, 'no pending code (the last one was used)');
    const ownerOfOther = await fetch(
      `${d.url}/workspaces/${own.id}/workspaceUsers/${own.workspaceUserId}/login-codes?email=owner@appreg.test`,
      { headers: { authtoken: user.token } },
    );
    t.equal(ownerOfOther.status, 403, 'the token is for another workspace user (requireSelf)');
  },
);

t.test('older CLI: activate without a leadId; leads and refresh tokens survive a restart', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const d = await startTestDaemon({ dataDir });
  const cli = new CliLikeClient(d);
  const lead = await cli.lead('owner@appreg.test');
  t.equal(
    (await cli.activate('owner@appreg.test', codeFromLog(d, 'owner@appreg.test'))).status,
    200,
    '{email, code} as earlier CLI versions send it',
  );
  await d.stop();

  const d2 = await startTestDaemon({ dataDir });
  const cli2 = new CliLikeClient(d2);
  const login = await cli2.leadLogin(lead.body.id);
  t.equal(login.status, 200, 'the activated lead survived the restart');
  const item = login.body.items[0] as Item;
  const first = await cli2.exchange(item.workspace.id, item.exchangeToken);
  t.equal(first.status, 200);
  const rotated = await cli2.refresh(item.workspace.id, first.body.refreshToken);
  t.equal(rotated.status, 200);
  t.match(
    (await cli2.refresh(`ws_other`, rotated.body.refreshToken)).body,
    { code: 'invalid_grant' },
    'a refresh token works only for its workspace',
  );
  await d2.stop();

  const d3 = await startTestDaemon({ dataDir });
  t.teardown(() => d3.stop());
  const cli3 = new CliLikeClient(d3);
  cli3.workspaceId = item.workspace.id;
  cli3.workspaceUserId = item.workspaceUser.id;
  t.equal((await cli3.mgmt('/apps/mine', rotated.body.token)).status, 200, 'the access token works after a restart');
  t.match(
    (await cli3.refresh(item.workspace.id, first.body.refreshToken)).body,
    { code: 'invalid_grant' },
    'the spent one is still recognised after a restart',
  );
  t.equal((await cli3.mgmt('/apps/mine', rotated.body.token)).status, 401, 'and revokes the family');
  t.equal((await cli3.refresh(item.workspace.id, rotated.body.refreshToken)).status, 400);
});
