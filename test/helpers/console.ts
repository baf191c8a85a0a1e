/** Sign a browser in to the console the way appreg open does: a one-time link, then its cookie. */
import type { TestDaemon } from './daemon.js';
import { must } from '../../src/must.js';

/** The session cookie (`name=value`) and the console's CSRF token of a freshly signed-in browser. */
export async function signIn(d: TestDaemon): Promise<{ cookie: string; csrf: string; url: string }> {
  const res = await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: {} });
  const { url } = (await res.json()) as { url: string };
  const landed = await fetch(url, { redirect: 'manual' });
  const cookie = must(must(landed.headers.getSetCookie().find((c) => c.startsWith('appreg_session='))).split(';')[0]);
  const home = await (await fetch(`${d.url}/`, { headers: { cookie } })).text();
  return { cookie, csrf: must(must(/<meta name="csrf" content="([^"]+)">/.exec(home))[1]), url };
}

/** A fresh one-time sign-in link (for a real browser to open). */
export async function signInLink(d: TestDaemon, path = '/'): Promise<string> {
  const res = await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: { path } });
  return ((await res.json()) as { url: string }).url;
}
