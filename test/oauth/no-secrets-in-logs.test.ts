import t from 'tap';
import { until } from '../helpers/until.js';
import { startTestDaemon } from '../helpers/daemon.js';
import { createApp, exchange, me, secondUser, Jar, csrfOf } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('no token, code or secret appears in the daemon log during a whole flow', async (t) => {
  const d = await startTestDaemon(); // logs at debug level
  t.teardown(() => d.stop());
  const user = await secondUser(d);
  const app = await createApp(d);
  const secrets: string[] = [app.clientSecret, app.appKey, app.signingSecret, user.password, user.token, d.token];

  const q = new URLSearchParams({
    clientId: app.id,
    scopes: 'messages:read,bot:messages:read',
    redirectUrl: 'http://localhost:9/redirect',
    state: 'state-value-1',
  });
  const jar = new Jar();
  let res = await fetch(`${d.url}/access-request?${q}`);
  jar.take(res);
  const loginCsrf = csrfOf(await res.text());
  secrets.push(loginCsrf, must(jar.cookies.get('appreg_session')));
  res = await fetch(`${d.url}/access-request/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: loginCsrf, email: user.email, password: user.password }),
  });
  jar.take(res);
  secrets.push(must(jar.cookies.get('appreg_session')));
  const html = await (await fetch(`${d.url}/access-request?${q}`, { headers: { cookie: jar.header() } })).text();
  const csrf = csrfOf(html);
  secrets.push(csrf);
  res = await fetch(`${d.url}/access-request/decision`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf, workspaceId: d.workspaceId, decision: 'allow' }),
  });
  const code = must(new URL(must(res.headers.get('location'))).searchParams.get('code'));
  secrets.push(code);

  // failures that carry secrets in the request
  await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret + 'x', code });
  const x = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code });
  t.equal(x.res.status, 200);
  secrets.push(must(x.body.accessToken), must(x.body.botToken));
  await me(d, must(x.body.accessToken), app.appKey);
  await me(d, must(x.body.accessToken), 'apk_wrong_key_that_is_long_enough');
  await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code }); // reuse → revocation, logged as a warning
  const g = (await (await d.api(`${d.mgmt}/oauth2/grant?${q}`)).json()) as { code: string };
  secrets.push(g.code);
  const y = await exchange(d, { 'client-id': app.id, 'client-secret': app.clientSecret, code: g.code });
  secrets.push(must(y.body.accessToken), must(y.body.botToken));
  await fetch(`${d.url}/v1/app/authorization`, {
    method: 'DELETE',
    headers: { token: must(y.body.accessToken), 'x-app-token': app.appKey },
  });
  await fetch(`${d.url}/v1/app/installation`, {
    method: 'DELETE',
    headers: { token: must(y.body.botToken), 'x-app-token': app.appKey },
  });
  await until(() => /app uninstalled/.test(d.logs())); // logged as the uninstall's events are handled

  const logs = d.logs();
  t.match(logs, /"path":"\/oauth2\/access"/, 'requests were logged');
  t.match(logs, /authorization code reused/, 'the reuse was logged');
  t.match(logs, /app uninstalled/);
  for (const s of secrets) {
    t.ok(s && s.length >= 16, 'a real secret');
    t.notOk(logs.includes(s), `not in the log: ${s.slice(0, 4)}…`);
  }
  t.notMatch(logs, /\b(acs|apk|ass|aut|abt|acd|asn|acf)_[A-Za-z0-9_-]{16,}/, 'nothing shaped like one of our secrets');
});
