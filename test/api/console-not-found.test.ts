/**
 * Where a browser lands on a console path that is not a page: `/console` and `/console/apps` lead
 * to the app list (at `/`), and any other unknown path under `/console` asked for as HTML is a
 * not-found page with a link home — while an API client (no HTML in its Accept) keeps the JSON
 * error body of docs/protocol.md §errors.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { signIn } from '../helpers/console.js';

/** What Chromium sends for a page it navigates to. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

t.test('console paths that are not pages', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { cookie } = await signIn(d);

  for (const path of ['/console', '/console/', '/console/apps', '/console/apps/'])
    await t.test(`${path} leads to the app list`, async (t) => {
      const res = await fetch(d.url + path, { headers: { cookie, accept: BROWSER_ACCEPT }, redirect: 'manual' });
      t.equal(res.status, 303);
      t.equal(res.headers.get('location'), '/');
      const followed = await fetch(d.url + path, { headers: { cookie, accept: BROWSER_ACCEPT } });
      t.equal(followed.status, 200);
      t.match(await followed.text(), /<h1[^>]*>[^<]*Apps/, 'the app list');
    });

  await t.test('an unknown page asked for by a browser: an HTML page with a link home', async (t) => {
    for (const headers of [{ cookie, accept: BROWSER_ACCEPT }, { accept: BROWSER_ACCEPT }] as Array<
      Record<string, string>
    >) {
      const res = await fetch(`${d.url}/console/nowhere/at-all`, { headers });
      t.equal(res.status, 404);
      t.match(res.headers.get('content-type'), /^text\/html/);
      t.equal(res.headers.get('cache-control'), 'no-store');
      const page = await res.text();
      t.match(page, /<h1>Not found<\/h1>/);
      t.match(page, /\/console\/nowhere\/at-all is not a page/);
      t.match(page, /<a href="\/">/, 'a link home');
    }
    // the CLI's hint for a path missing its /console prefix, given in the page too
    const res = await fetch(`${d.url}/console/deliveries/d_1/nope`, { headers: { accept: BROWSER_ACCEPT } });
    t.equal(res.status, 404);
  });

  await t.test('an API client keeps the JSON error body', async (t) => {
    for (const accept of [undefined, 'application/json', '*/*']) {
      const res = await fetch(`${d.url}/console/nowhere`, { headers: accept ? { accept } : {} });
      t.equal(res.status, 404, String(accept));
      t.match(res.headers.get('content-type'), /^application\/json/);
      t.same(await res.json(), { code: 'not_found', message: 'No route for GET /console/nowhere.' });
    }
    // not a GET: JSON, whatever it accepts
    const post = await fetch(`${d.url}/console/nowhere`, { method: 'POST', headers: { accept: BROWSER_ACCEPT } });
    t.equal(post.status, 404);
    t.match(post.headers.get('content-type'), /^application\/json/);
  });
});
