/** appreg open's daemon side: one-time sign-in links and the signed-in home page. */
import t from 'tap';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

t.test('a sign-in link signs the browser in once, lands on its path, and expires', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
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
  t.equal(Date.parse(expiresAt) - clock.now(), 5 * 60_000, 'valid five minutes');

  const signedOut = await fetch(`${d.url}/`);
  t.equal(signedOut.status, 401);
  t.match(await signedOut.text(), /appreg open/);

  res = await fetch(url, { redirect: 'manual' });
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), '/');
  const cookie = must(res.headers.getSetCookie().find((c) => c.startsWith('appreg_session=')));
  t.match(cookie, /HttpOnly/i);
  const session = must(cookie.split(';')[0]);
  const home = await fetch(`${d.url}/`, { headers: { cookie: session } });
  t.equal(home.status, 200);
  t.match(home.headers.get('content-security-policy'), /default-src 'none'/);
  const html = await home.text();
  t.match(html, /Signed in as Owner/);
  t.match(html, /Home App/);

  const again = await fetch(url, { redirect: 'manual' });
  t.equal(again.status, 403, 'a link works once');

  const late = (await (await link({ path: '/console/deliveries' })).json()) as { url: string };
  clock.set(clock.now() + 5 * 60_000 + 1);
  t.equal((await fetch(late.url, { redirect: 'manual' })).status, 403, 'expired after five minutes');
});

t.test('a link only ever lands on this daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  for (const path of [
    '//evil.example/x',
    '/\\evil.example',
    'https://evil.example/',
    'deliveries',
    '/a b',
    '/deliveries',
    '/healthz',
    '/v1/channels',
  ]) {
    const res = await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path } });
    t.equal(res.status, 400, JSON.stringify(path));
  }
  const notPage = (await (
    await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path: '/deliveries' } })
  ).json()) as { message: string };
  t.match(
    notPage.message,
    'did you mean /console/deliveries?',
    "a page that is not the console's gets the console's page suggested",
  );
  const ok = (await (
    await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path: '/console/deliveries?app=x' } })
  ).json()) as { url: string };
  const res = await fetch(ok.url, { redirect: 'manual' });
  t.equal(res.headers.get('location'), '/console/deliveries?app=x');
});

t.test(
  'a link for another account, opened in a browser already signed in: who is who, and a switch only on confirmation',
  async (t) => {
    const { secondUser } = await import('../fixtures/redirects-flow.js');
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const linkFor = async (token: string, mgmt: string) =>
      (
        (await (
          await d.api(`${mgmt}/web/sign-in-links`, {
            method: 'POST',
            json: { path: '/console/deliveries' },
            headers: { authtoken: token },
          })
        ).json()) as { url: string }
      ).url;
    const cookieOf = (res: Response) =>
      res.headers
        .getSetCookie()
        .find((c) => c.startsWith('appreg_session='))
        ?.split(';')[0];
    const owner = must(cookieOf(await fetch(await linkFor(d.token, d.mgmt), { redirect: 'manual' })));
    const bob = await secondUser(d);
    const bobsLink = await linkFor(bob.token, bob.mgmt);

    const asked = await fetch(bobsLink, { headers: { cookie: owner }, redirect: 'manual' });
    t.equal(asked.status, 200, 'a page, not a redirect');
    t.equal(cookieOf(asked), undefined, 'no new session');
    const page = await asked.text();
    t.match(page, /signed in as <strong>Owner<\/strong>/, 'who is signed in');
    t.match(
      page,
      new RegExp(`link you opened is for <strong>Second User</strong> \\(${bob.email.replace(/\./g, '\\.')}\\)`),
      'who the link is for',
    );
    t.match(asked.headers.get('content-security-policy'), /form-action 'self'/);
    t.match(
      await (await fetch(`${d.url}/`, { headers: { cookie: owner } })).text(),
      /Signed in as Owner/,
      'still the owner',
    );

    const csrf = must(must(/name="csrf" value="([^"]+)"/.exec(page))[1]);
    const token = must(new URL(bobsLink).searchParams.get('token'));
    const confirm = (fields: Record<string, string>, cookie = owner) =>
      fetch(`${d.url}/web/sign-in`, {
        method: 'POST',
        headers: { cookie },
        body: new URLSearchParams(fields),
        redirect: 'manual',
      });
    t.equal(
      (await confirm({ token, csrf: 'x' + csrf })).status,
      403,
      'a forged confirmation (another token) is refused',
    );
    t.equal((await confirm({ token })).status, 403, 'so is one without the token');
    const switched = await confirm({ token, csrf });
    t.equal(switched.status, 303, 'confirmed: switched');
    t.equal(switched.headers.get('location'), '/console/deliveries', 'to the link’s path');
    const now = must(cookieOf(switched));
    t.match(await (await fetch(`${d.url}/`, { headers: { cookie: now } })).text(), /Signed in as Second User/);
    t.equal((await confirm({ token, csrf })).status, 403, 'the link worked once');

    // a link for the account already signed in signs in at once, as before
    const ownAgain = await fetch(await linkFor(d.token, d.mgmt), { headers: { cookie: owner }, redirect: 'manual' });
    t.equal(ownAgain.status, 303);
    // staying: the link is left unused, and works later (in a browser signed out)
    const later = await linkFor(bob.token, bob.mgmt);
    t.equal((await fetch(later, { headers: { cookie: owner }, redirect: 'manual' })).status, 200, 'the question again');
    t.equal((await fetch(later, { redirect: 'manual' })).status, 303, 'the question did not use the link');
  },
);
