/**
 * The consent flow in a real browser: headless Chromium (Debian's /usr/bin/chromium, driven
 * by playwright-core) signs in, sees the scopes, clicks Allow and lands on a local receiver
 * that exchanges the code for tokens like an app built on the official SDK; then Cancel.
 * Without Chromium the test is skipped with one line saying so, except under CI, where
 * .ci/run installs it and its absence is a failure. APPREG_CHROMIUM names another binary.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.js';
import { must } from '../../src/must.js';

interface Received {
  query: Record<string, string>;
  tokens?: Record<string, string>;
  status?: number;
}

testNeeding(t, 'authorize an app in headless Chromium', CHROMIUM, async (t, executablePath) => {
  // loaded only when Chromium is there, so that the skip costs no second of loading
  const { chromium } = await import('playwright-core');
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const { createApp, me, secondUser } = await import('../fixtures/redirects-flow.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const user = await secondUser(d);

  // the app's receiver: gets the redirect, exchanges the code (multipart, as the SDK does), shows a page
  const received: Received[] = [];
  let app: Awaited<ReturnType<typeof createApp>>;
  const receiver = http.createServer(
    (req, res) =>
      void (async () => {
        const url = new URL(must(req.url), 'http://127.0.0.1');
        if (url.pathname !== '/callback') {
          res.statusCode = 404; // e.g. the browser asking for /favicon.ico
          return res.end();
        }
        const r: Received = { query: Object.fromEntries(url.searchParams) };
        received.push(r);
        if (r.query.code) {
          const form = new FormData();
          form.append('client-id', app.id);
          form.append('client-secret', app.clientSecret);
          form.append('code', r.query.code);
          const x = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: form });
          r.status = x.status;
          r.tokens = (await x.json()) as Record<string, string>;
        }
        res.setHeader('content-type', 'text/html');
        res.end(
          r.query.code
            ? `<h1 id="done">Installed (${r.status})</h1>`
            : `<h1 id="done">Not installed: ${r.query.error}</h1>`,
        );
      })().catch((e: unknown) =>
        setImmediate(() => {
          throw e;
        }),
      ),
  );
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => receiver.close(() => r())));
  const port = (receiver.address() as AddressInfo).port;
  app = await createApp(d, {
    displayName: 'Browser App',
    botTitle: 'Reports things',
    redirectUrls: [`http://127.0.0.1:${port}/callback`],
  });

  const browser: Browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, headless: true });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });

  const q = new URLSearchParams({
    clientId: app.id,
    scopes: 'messages:read,bot:messages:read,bot:messages:write',
    redirectUrl: `http://127.0.0.1:${port}/callback`,
    state: 'browser-state',
    defaultWorkspaceId: d.workspaceId,
  });

  t.test('sign in, see the scopes, Allow, land on the receiver with a code that exchanges for tokens', async (t) => {
    await page.goto(`${d.url}/access-request?${q}`);
    t.match(await page.textContent('h1'), /Sign in/);
    await page.fill('#email', user.email);
    await page.fill('#password', user.password);
    await Promise.all([page.waitForURL(/\/access-request\?/), page.click('#sign-in')]);
    const text = await page.textContent('body');
    t.match(text, /Browser App wants access/);
    t.match(text, /Read messages in channels/);
    t.match(text, /Send messages/);
    t.match(text, /Reports things/);
    t.equal(await page.inputValue('#workspace'), d.workspaceId);
    // the inline stylesheet is allowed by its CSP hash (a blocked stylesheet would leave the button unstyled)
    const bg = await page.$eval('#allow', (el) => getComputedStyle(el).backgroundColor);
    t.equal(bg, 'rgb(37, 99, 235)');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    t.ok(overflow <= 0, 'no horizontal scrolling on a phone-sized screen');
    await Promise.all([page.waitForURL(new RegExp(`^http://127\\.0\\.0\\.1:${port}/callback`)), page.click('#allow')]);
    t.match(await page.textContent('#done'), /Installed \(200\)/);
    const r = must(received.at(-1));
    t.equal(r.query.state, 'browser-state');
    t.match(r.query.code, /^acd_/);
    t.equal(r.status, 200);
    t.match(must(r.tokens).accessToken, /^aut_/);
    t.match(must(r.tokens).botToken, /^abt_/);
    t.equal(must(r.tokens).userId, user.id);
    t.equal((await me(d, must(must(r.tokens).accessToken), app.appKey)).status, 200, 'the access token works');
    t.equal((await me(d, must(must(r.tokens).botToken), app.appKey)).status, 200, 'the bot token works');
  });

  t.test('Cancel sends the user back with error=access_denied and no code', async (t) => {
    await page.goto(`${d.url}/access-request?${q}`);
    t.match(await page.textContent('body'), /wants access/, 'already signed in: straight to consent');
    await Promise.all([page.waitForURL(new RegExp(`^http://127\\.0\\.0\\.1:${port}/callback`)), page.click('#cancel')]);
    t.match(await page.textContent('#done'), /Not installed: access_denied/);
    const r = must(received.at(-1));
    t.same(r.query, { error: 'access_denied', state: 'browser-state' });
  });

  t.test('a refused redirect URL stays on an error page in the browser', async (t) => {
    const bad = new URLSearchParams(q);
    bad.set('redirectUrl', `http://127.0.0.1:${port}/callback/../evil`);
    const resp = await page.goto(`${d.url}/access-request?${bad}`);
    t.equal(must(resp).status(), 400);
    t.ok(page.url().startsWith(d.url), 'still on the daemon');
    t.match(await page.textContent('body'), /redirectUrl/);
  });

  t.test('the page cannot be framed', async (t) => {
    const framer = await context.newPage();
    await framer.setContent(`<iframe id="f" src="${d.url}/access-request?${q}"></iframe>`);
    await framer.waitForTimeout(500);
    const frame = framer.frames().find((f) => f.url().includes('/access-request'));
    const framedText = frame ? await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '') : '';
    t.notMatch(framedText, /Browser App/, 'neither the sign-in nor the consent page renders inside a frame');
    await framer.close();
  });

  t.same(
    consoleErrors.filter((e) => !/frame|Refused to display/i.test(e)),
    [],
    'no console errors (no CSP violations)',
  );
});
