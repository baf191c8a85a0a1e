/** appreg open's daemon side: one-time sign-in links and the signed-in home page. */
import t from 'tap';
import { startTestDaemon, manifest } from '../helpers/daemon.js';

t.test('a sign-in link signs the browser in once, lands on its path, and expires', async (t) => {
  let now = Date.now();
  const d = await startTestDaemon({ clock: { now: () => now } });
  t.teardown(() => d.stop());
  await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest({ name: 'home-app', displayName: 'Home App' }) });
  const link = async (json: unknown = {}) => d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json });

  const noAuth = await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', noAuth: true, json: {} });
  t.equal(noAuth.status, 401, 'only an authenticated caller gets a link');

  let res = await link({ path: '/' });
  t.equal(res.status, 201);
  t.equal(res.headers.get('cache-control'), 'no-store');
  const { url, expiresAt } = (await res.json()) as { url: string; expiresAt: string };
  t.ok(url.startsWith(`${d.url}/web/sign-in?token=`), url);
  t.equal(Date.parse(expiresAt) - now, 5 * 60_000, 'valid five minutes');

  const signedOut = await fetch(`${d.url}/`);
  t.equal(signedOut.status, 401);
  t.match(await signedOut.text(), /appreg open/);

  res = await fetch(url, { redirect: 'manual' });
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), '/');
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('appreg_session='))!;
  t.match(cookie, /HttpOnly/i);
  const session = cookie.split(';')[0]!;
  const home = await fetch(`${d.url}/`, { headers: { cookie: session } });
  t.equal(home.status, 200);
  t.match(home.headers.get('content-security-policy'), /default-src 'none'/);
  const html = await home.text();
  t.match(html, /Signed in as Owner/);
  t.match(html, /Home App/);

  const again = await fetch(url, { redirect: 'manual' });
  t.equal(again.status, 403, 'a link works once');

  const late = (await (await link({ path: '/console/deliveries' })).json()) as { url: string };
  now += 5 * 60_000 + 1;
  t.equal((await fetch(late.url, { redirect: 'manual' })).status, 403, 'expired after five minutes');
});

t.test('a link only ever lands on this daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  for (const path of ['//evil.example/x', '/\\evil.example', 'https://evil.example/', 'deliveries', '/a b', '/deliveries', '/healthz', '/v1/channels']) {
    const res = await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path } });
    t.equal(res.status, 400, JSON.stringify(path));
  }
  const notPage = (await (await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path: '/deliveries' } })).json()) as { message: string };
  t.match(notPage.message, 'did you mean /console/deliveries?', 'a page that is not the console\'s gets the console\'s page suggested');
  const ok = (await (await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path: '/console/deliveries?app=x' } })).json()) as { url: string };
  const res = await fetch(ok.url, { redirect: 'manual' });
  t.equal(res.headers.get('location'), '/console/deliveries?app=x');
});
