import t, { type Test } from 'tap';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import {
  createApp,
  exchange,
  me,
  secondUser,
  Jar,
  csrfOf,
  ALL_SCOPES,
  type CreatedApp,
} from '../fixtures/redirects-flow.js';
import { REGISTERED, REDIRECT_CASES } from '../fixtures/redirects.js';
import { USED_TOKENS } from '../../src/services/oauth/web-sessions.js';
import { must } from '../../src/must.js';

function consentUrl(d: TestDaemon, q: Record<string, string>) {
  return `${d.url}/access-request?${new URLSearchParams(q)}`;
}

function assertPageHeaders(t: Test, res: Response) {
  const csp = res.headers.get('content-security-policy') ?? '';
  t.match(csp, /frame-ancestors 'none'/, 'CSP forbids framing');
  t.match(csp, /default-src 'none'/, 'CSP default-src none');
  t.notMatch(csp, /unsafe-inline/);
  t.equal(res.headers.get('x-frame-options'), 'DENY');
  t.equal(res.headers.get('referrer-policy'), 'no-referrer');
  t.equal(res.headers.get('cache-control'), 'no-store');
}

/** Log in through the form; returns the jar and the consent page. */
async function login(d: TestDaemon, url: string, email: string, password: string) {
  const jar = new Jar();
  let res = await fetch(url, { redirect: 'manual' });
  jar.take(res);
  const loginHtml = await res.text();
  t.match(loginHtml, /Sign in/);
  res = await fetch(`${d.url}/access-request/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: csrfOf(loginHtml), email, password }),
  });
  const anon = jar.cookies.get('appreg_session');
  jar.take(res);
  return { jar, res, anonSession: anon };
}

t.test('the consent screen (docs/protocol.md §3, endpoint 7; docs/security.md §1 and §3)', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const user = await secondUser(d);
  const app: CreatedApp = await createApp(d, {
    redirectUrls: REGISTERED,
    displayName: 'Consent <Test> App',
    botTitle: 'Posts <b>reports</b>',
  });
  const base = { clientId: app.id, scopes: ALL_SCOPES, redirectUrl: 'https://app.example.com/cb' };

  t.test('every corpus case that must be refused gets an error page, never a redirect (M7)', async (t) => {
    for (const c of REDIRECT_CASES) {
      const res = await fetch(consentUrl(d, { ...base, redirectUrl: c.requested }), { redirect: 'manual' });
      const html = await res.text();
      t.equal(res.headers.get('location'), null, `no Location for ${c.klass}`);
      if (c.accept) t.equal(res.status, 200, `accepted: ${c.requested}`);
      else {
        t.equal(res.status, 400, `refused: ${JSON.stringify(c.requested.slice(0, 60))}`);
        t.match(html, /redirectUrl/);
        assertPageHeaders(t, res);
      }
    }
  });

  t.test('clientId is validated first, then redirectUrl, then scopes', async (t) => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ ...base, clientId: 'app_nope', redirectUrl: 'https://evil.com/' }, /No app has this clientId/],
      [{ scopes: ALL_SCOPES, redirectUrl: 'https://evil.com/' }, /clientId parameter is required/],
      [{ ...base, redirectUrl: 'https://evil.com/cb', scopes: 'bogus' }, /redirectUrl is not acceptable/],
      [{ ...base, scopes: 'channels:write' }, /user scope &#34;channels:write&#34; is not in the app/],
      [{ ...base, scopes: 'bot:messages:read,messages:read' }, /comes after the bot scopes/],
      [{ ...base, scopes: 'messages:read,bot:files:write' }, /bot scope &#34;files:write&#34;/],
      [{ clientId: app.id, redirectUrl: base.redirectUrl }, /scopes parameter is required/],
      [{ ...base, isReinstall: 'yes' }, /isReinstall must be true or false/],
    ];
    for (const [q, msg] of cases) {
      const res = await fetch(consentUrl(d, q), { redirect: 'manual' });
      t.equal(res.status, 400);
      t.equal(res.headers.get('location'), null);
      t.match(await res.text(), msg);
    }
  });

  t.test('a parameter given twice is refused as one not given, on the page and by the management calls', async (t) => {
    const cases: Array<[string, string, string]> = [
      ['clientId', 'invalid_request', 'The clientId parameter is required.'],
      ['redirectUrl', 'invalid_redirect_url', 'The redirectUrl parameter is required.'],
      ['scopes', 'invalid_scope', 'The scopes parameter is required.'],
      ['isReinstall', 'invalid_request', 'isReinstall must be true or false.'],
      ['state', 'invalid_request', 'state must be 1 to 512 printable ASCII characters.'],
    ];
    for (const [key, code, message] of cases) {
      const q = new URLSearchParams({ ...base, isReinstall: 'false', state: 's' });
      q.append(key, q.get(key) ?? '');
      const page = await fetch(`${d.url}/access-request?${q}`, { redirect: 'manual' });
      t.equal(page.status, 400, `${key} twice: the page`);
      t.match(await page.text(), message.replace(/\.$/, ''));
      for (const call of ['oauth2/consent-url', 'oauth2/grant']) {
        const res = await d.api(`${d.mgmt}/${call}?${q}`);
        t.equal(res.status, 400, `${key} twice: ${call}`);
        t.equal(await res.text(), JSON.stringify({ code, message }), `${key} twice: ${call}'s body`);
      }
    }
  });

  t.test(
    'no session: a login form; session cookie HttpOnly, SameSite=Lax, path-scoped; rotated on login',
    async (t) => {
      const res = await fetch(consentUrl(d, base), { redirect: 'manual' });
      assertPageHeaders(t, res);
      const html = await res.text();
      t.match(html, /<form method="post" action="\/access-request\/login">/);
      t.match(html, /name="viewport" content="width=device-width/);
      t.notMatch(html, /<(script|link|img)\b/i, 'no scripts, external stylesheets or images');
      t.notMatch(html, /https?:\/\/(?!app\.example)/, 'no external asset URLs');
      const cookie = must(res.headers.getSetCookie().find((c) => c.startsWith('appreg_session=')));
      t.ok(cookie);
      t.match(cookie, /HttpOnly/i);
      t.match(cookie, /SameSite=Lax/i);
      t.match(cookie, /Path=\/(;|$)/, 'one session for every page of the daemon');
      t.notMatch(cookie, /Secure/, 'not Secure over plain http');
      const { res: after, anonSession, jar } = await login(d, consentUrl(d, base), user.email, user.password);
      t.equal(after.status, 303);
      t.equal(after.headers.get('location'), `/access-request?${new URLSearchParams(base)}`);
      t.not(jar.cookies.get('appreg_session'), anonSession, 'a new session value after login');
    },
  );

  t.test('wrong password: the form again with an error, 401', async (t) => {
    const { res } = await login(d, consentUrl(d, base), user.email, 'wrong password');
    t.equal(res.status, 401);
    t.match(await res.text(), /Email or password is wrong/);
  });

  t.test(
    "the consent page shows the app, every requested scope and only the user's workspaces; Allow → 303 with code and state",
    async (t) => {
      const q = { ...base, state: 'st-123', defaultWorkspaceId: d.workspaceId };
      const { jar } = await login(d, consentUrl(d, q), user.email, user.password);
      const res = await fetch(consentUrl(d, q), { headers: { cookie: jar.header() }, redirect: 'manual' });
      t.equal(res.status, 200);
      assertPageHeaders(t, res);
      t.match(res.headers.get('content-security-policy'), /form-action 'self' https:\/\/app\.example\.com/);
      const html = await res.text();
      t.match(html, /Consent &#60;Test&#62; App/, 'display name, escaped');
      t.match(html, /Posts &#60;b&#62;reports&#60;\/b&#62;/, 'bot title, escaped');
      t.match(html, /class="avatar/);
      for (const s of ['messages:read', 'messages:write']) t.match(html, `<code>${s}</code>`);
      t.match(html, /Read messages in channels/);
      t.match(html, /Send messages/);
      t.match(html, new RegExp(`<option value="${d.workspaceId}" selected>Local workspace</option>`));
      t.equal((html.match(/<option /g) ?? []).length, 1, "only the user's own workspace");
      const res2 = await fetch(`${d.url}/access-request/decision`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: d.workspaceId, decision: 'allow' }),
      });
      t.equal(res2.status, 303);
      assertPageHeaders(t, res2);
      const loc = new URL(must(res2.headers.get('location')));
      t.equal(loc.origin + loc.pathname, 'https://app.example.com/cb');
      t.equal(loc.searchParams.get('state'), 'st-123');
      const code = must(loc.searchParams.get('code'));
      t.match(code, /^acd_/);
      const x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code });
      t.equal(x.res.status, 200);
      t.equal(x.body.userId, user.id);
      t.equal((await me(d, must(x.body.accessToken), app.appKey)).status, 200);
    },
  );

  t.test('Cancel → 303 with error=access_denied and state', async (t) => {
    const q = { ...base, state: 'st-9' };
    const { jar } = await login(d, consentUrl(d, q), user.email, user.password);
    const html = await (await fetch(consentUrl(d, q), { headers: { cookie: jar.header() } })).text();
    const res = await fetch(`${d.url}/access-request/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: d.workspaceId, decision: 'cancel' }),
    });
    t.equal(res.status, 303);
    t.equal(res.headers.get('location'), 'https://app.example.com/cb?error=access_denied&state=st-9');
  });

  t.test(
    'CSRF: the Allow form needs its single-use token bound to this session; hidden fields cannot change app, scopes or redirect',
    async (t) => {
      const { jar } = await login(d, consentUrl(d, base), user.email, user.password);
      const html = await (await fetch(consentUrl(d, base), { headers: { cookie: jar.header() } })).text();
      const csrf = csrfOf(html);
      const post = (body: Record<string, string>, cookie = jar.header()) =>
        fetch(`${d.url}/access-request/decision`, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(body),
        });
      let res = await post({ workspaceId: d.workspaceId, decision: 'allow' });
      t.equal(res.status, 403, 'no token');
      t.equal(res.headers.get('location'), null);
      res = await post({ csrf: csrf + 'x', workspaceId: d.workspaceId, decision: 'allow' });
      t.equal(res.status, 403, 'wrong token');
      const other = await login(d, consentUrl(d, base), user.email, user.password);
      res = await post({ csrf, workspaceId: d.workspaceId, decision: 'allow' }, other.jar.header());
      t.equal(res.status, 403, "another session's token");
      res = await post({ csrf, workspaceId: d.workspaceId, decision: 'allow' }, '');
      t.equal(res.status, 403, 'no session cookie (cross-site POST without cookies)');
      // the failed attempts above did not consume it; extra hidden fields are ignored
      res = await post({
        csrf,
        workspaceId: d.workspaceId,
        decision: 'allow',
        redirectUrl: 'https://evil.com/',
        clientId: 'app_other',
        scopes: 'bot:files:write',
      });
      t.equal(res.status, 303);
      t.match(res.headers.get('location'), /^https:\/\/app\.example\.com\/cb\?code=acd_/);
      res = await post({ csrf, workspaceId: d.workspaceId, decision: 'allow' });
      t.equal(res.status, 403, 'single use');
    },
  );

  t.test('the login form is CSRF-protected too', async (t) => {
    const res = await fetch(`${d.url}/access-request/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: user.email, password: user.password, csrf: 'acf_forged' }),
    });
    t.equal(res.status, 403);
    t.equal(res.headers.getSetCookie().length, 0);
  });

  t.test('a workspace the user is not a member of is refused', async (t) => {
    const { jar } = await login(d, consentUrl(d, base), user.email, user.password);
    const html = await (await fetch(consentUrl(d, base), { headers: { cookie: jar.header() } })).text();
    const res = await fetch(`${d.url}/access-request/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: 'ws_someone_else', decision: 'allow' }),
    });
    t.equal(res.status, 400);
    t.equal(res.headers.get('location'), null);
  });

  t.test('a relative redirectUrl (as the official SDK sends it) resolves against the registered origin', async (t) => {
    const q = { ...base, redirectUrl: '/cb/done' };
    const { jar } = await login(d, consentUrl(d, q), user.email, user.password);
    const html = await (await fetch(consentUrl(d, q), { headers: { cookie: jar.header() } })).text();
    const res = await fetch(`${d.url}/access-request/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: d.workspaceId, decision: 'allow' }),
    });
    t.match(res.headers.get('location'), /^https:\/\/app\.example\.com\/cb\/done\?code=acd_/);
  });

  t.test('reinstall that adds bot scopes shows them as new and asks again', async (t) => {
    const app3 = await createApp(d, {
      scopes: { userScopes: ['messages:read'], botScopes: ['messages:read', 'messages:write', 'files:write'] },
    });
    const g = await d.api(
      `${d.mgmt}/oauth2/grant?${new URLSearchParams({ clientId: app3.id, scopes: 'messages:read,bot:messages:read', redirectUrl: 'http://localhost:9/redirect' })}`,
    );
    const { code } = (await g.json()) as { code: string };
    t.equal((await exchange(d, { 'client-id': app3.id, 'client-secret': app3.clientSecret, code })).res.status, 200);
    const q = {
      clientId: app3.id,
      scopes: 'messages:read,bot:messages:read,bot:files:write',
      redirectUrl: 'http://localhost:9/redirect',
    };
    // the owner (bootstrap account) has no password we know; use the second user in the same workspace
    const { jar } = await login(d, consentUrl(d, q), user.email, user.password);
    const plain = await (await fetch(consentUrl(d, q), { headers: { cookie: jar.header() } })).text();
    t.match(plain, /<code>files:write<\/code>/, 'every requested scope is shown');
    t.match(plain, /new bot permissions need a reinstall/i);
    const re = await (
      await fetch(consentUrl(d, { ...q, isReinstall: 'true' }), { headers: { cookie: jar.header() } })
    ).text();
    t.match(re, /asks to be reinstalled/);
    t.match(re, /Upload files<span class="new">new<\/span>/);
    t.notMatch(re, /need a reinstall/);
  });

  t.test('a socket-mode app can be authorized by its owner only', async (t) => {
    const sock = await createApp(d, { socketMode: true });
    const q = { clientId: sock.id, scopes: ALL_SCOPES, redirectUrl: 'http://localhost:9/redirect' };
    const { jar } = await login(d, consentUrl(d, q), user.email, user.password);
    const res = await fetch(consentUrl(d, q), { headers: { cookie: jar.header() } });
    t.equal(res.status, 403);
    t.match(await res.text(), /socket mode/);
    const own = await d.api(`${d.mgmt}/oauth2/grant?${new URLSearchParams(q)}`);
    t.equal(own.status, 200, 'the owner can');
    const theirs = await d.api(`${user.mgmt}/oauth2/grant?${new URLSearchParams(q)}`, {
      headers: { authtoken: user.token },
    });
    t.equal(theirs.status, 403);
  });

  t.test('the session cookie is Secure when the consent screen is served over https', async (t) => {
    const d2 = await startTestDaemon({ config: { appUrl: 'https://consent.example.com' } });
    t.teardown(() => d2.stop());
    const app2 = await createApp(d2);
    const res = await fetch(
      consentUrl(d2, { clientId: app2.id, scopes: ALL_SCOPES, redirectUrl: 'http://localhost:9/redirect' }),
    );
    const cookie = must(res.headers.getSetCookie().find((c) => c.startsWith('appreg_session=')));
    t.match(cookie, /;\s*Secure/i);
    t.match(cookie, /HttpOnly/i);
    t.match(cookie, /SameSite=Lax/i);
  });

  t.test('the sign-in form is rate limited (429 page with Retry-After)', async (t) => {
    const d2 = await startTestDaemon({ config: { rateLimitLogin: 2 } });
    t.teardown(() => d2.stop());
    const app2 = await createApp(d2);
    const url = consentUrl(d2, { clientId: app2.id, scopes: ALL_SCOPES, redirectUrl: 'http://localhost:9/redirect' });
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await login(d2, url, 'nobody@example.com', 'wrong password');
      statuses.push(r.res.status);
      last = r.res;
    }
    t.same(statuses, [401, 401, 429, 429]);
    t.ok(Number(must(last).headers.get('retry-after')) >= 1);
    t.match(must(last).headers.get('content-type'), /text\/html/, 'a page, like every answer of the consent screen');
    t.match(await must(last).text(), /Too many attempts/);
  });
});

t.test(
  'visitors, sessions and forms cost the daemon no memory and no record; a used form is marked used in the store',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const user = await secondUser(d);
    const app = await createApp(d);
    const url = consentUrl(d, { clientId: app.id, scopes: ALL_SCOPES, redirectUrl: 'http://localhost:9/redirect' });
    const { jar } = await login(d, url, user.email, user.password);
    const kept = () => d.parts.store.count(USED_TOKENS);
    t.equal(await kept(), 0);
    for (let i = 0; i < 300; i++) {
      const res = await fetch(url); // no cookie: a new visitor every time
      t.equal(res.status, 200);
      await res.arrayBuffer();
    }
    t.equal(await kept(), 0, 'nothing was stored for 300 visitors');
    const html = await (await fetch(url, { headers: { cookie: jar.header() } })).text();
    t.match(html, /Allow/, 'the signed-in user is still signed in');
    t.equal(await kept(), 0, 'nor for the consent form shown');
    const res = await fetch(`${d.url}/access-request/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfOf(html), workspaceId: d.workspaceId, decision: 'allow' }),
    });
    t.equal(res.status, 303);
    t.equal(await kept(), 1, 'the used form token is the only record, until it expires');
  },
);
