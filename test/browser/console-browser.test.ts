/**
 * The web console in headless Chromium: a manifest with an error shown
 * inline at its pointer, then fixed and created from the keyboard; a delivery appearing live in
 * the inspector while the page is open, a Replay click adding an attempt, Copy as curl putting
 * the command on the clipboard, and an edited replay marked as such. Every page is
 * saved as a screenshot at 1280 and 390 px wide, light and dark, under dist/screenshots/
 * (git-ignored). Skipped without Chromium, except under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';
import { must } from '../../src/must.js';

testNeeding(t, 'the console in headless Chromium', CHROMIUM, async (t, executablePath) => {
  const { startTestDaemon, manifest } = await import('../helpers/daemon.js');
  const { startReceiver } = await import('../helpers/receiver.js');
  const { signInLink } = await import('../helpers/console.js');
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());

  const { browser, context, page, consoleErrors } = await openBrowser(t, executablePath);
  await page.goto(await signInLink(d));
  t.match(await page.textContent('h1'), /Apps/, 'the sign-in link lands on the console');

  const shoot = screenshotter(t);

  const good = manifest({
    name: 'browser-app',
    displayName: 'Browser App',
    slashCommands: [
      { command: '/standup', url: `${rx.url}/slash`, usageHint: '[start]', description: 'Start a standup' },
    ],
    eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
  });
  let appId = '';

  await t.test('a manifest with an error is shown at its pointer, then fixed and created', async (t) => {
    await shoot(page, 'apps-empty');
    await page.getByRole('link', { name: 'Create app' }).click();
    await page.waitForURL(/\/console\/apps\/new$/);
    await shoot(page, 'app-new');
    const bad = { ...good, slashCommands: [{ command: 'standup', url: `${rx.url}/slash` }] };
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(bad, null, 2));
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Create app' }).click()]);
    const note = page.locator('ol.json li.msg').first();
    t.match(await note.textContent(), /Error at \/slashCommands\/0\/command/);
    const line = await note.evaluate((el) => el.previousElementSibling?.textContent ?? '');
    t.match(line, /"command": "standup"/, 'the error is written under the line of its pointer');
    // the page is shown before its script has run (it moves the focus): wait for it, then say where the focus is
    await page
      .waitForFunction(() => document.activeElement?.id === 'problems', null, { timeout: 5000 })
      .catch(() => undefined);
    t.equal(await page.evaluate(() => document.activeElement?.id), 'problems', 'the problems get the focus');
    await shoot(page, 'app-new-error');

    // fixed, and sent from the keyboard: Tab from the text area to the button, Enter
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(good, null, 2));
    await page.getByLabel('Manifest (JSON)').focus();
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Create app') break;
    }
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Enter')]);
    t.match(await page.textContent('[role=status]'), /App created/);
    appId = must(await page.locator('dt:text-is("Id") + dd code').textContent());
    t.match(appId, /^app_/);
    await shoot(page, 'app');
    await page.getByRole('button', { name: 'Show secrets' }).click();
    t.match(await page.locator('dl[aria-label=Secrets]').textContent(), /Signing secret/);
    await shoot(page, 'app-secrets');
    await page.getByRole('link', { name: 'Rotate secrets' }).click();
    await shoot(page, 'app-rotate-confirm');
    await page.getByRole('button', { name: 'Rotate secrets' }).click();
    t.match(await page.textContent('[role=status]'), /Secrets rotated/);
    await page.getByRole('link', { name: 'Edit manifest' }).click();
    await shoot(page, 'app-edit');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.getByRole('link', { name: 'Delete app' }).click();
    await shoot(page, 'app-delete-confirm');
    await page.getByRole('link', { name: 'Keep it as it is' }).click();
    await page.getByRole('link', { name: 'Apps' }).click();
    await shoot(page, 'apps');
  });

  await t.test('a delivery appears live in the inspector; Replay adds an attempt', async (t) => {
    const created = (await (await d.api(`${d.mgmt}/apps/mine/${appId}`)).json()) as { signingSecret: string };
    rx.secret = created.signingSecret;
    rx.on('/slash', { json: { message: 'Standup started' } });
    await page.getByRole('link', { name: 'Deliveries' }).click();
    await page.waitForURL(/\/console\/deliveries$/);
    await page.waitForSelector('#live[data-state=open]');
    const res = await d.api(`${d.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId, kind: 'slash-command', command: '/standup', text: 'live' },
    });
    const { id } = (await res.json()) as { id: string };
    const row = page.locator(`#d-${id}`);
    await row.waitFor({ timeout: 5000 });
    t.match(await row.textContent(), /slash-command.*delivered/, 'the row appeared without a reload');
    t.match(await page.textContent('#live'), /1 new/);
    await shoot(page, 'deliveries');

    await row.getByRole('link').click();
    await page.waitForURL(new RegExp(`/console/deliveries/${id}$`));
    t.match(await page.textContent('#delivery'), /Attempts \(1\)/);
    t.match(await page.textContent('#delivery'), /Standup started/);
    await page.waitForSelector('#delivery[data-state=open]');
    // the headers sent (the signature's is the longest line) are read whole in their box, at any width
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      const sent = page.getByLabel('Headers sent').first();
      t.match(await sent.textContent(), /x-pumble-request-signature: [0-9a-f]{64}/);
      const fits = await sent.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
      t.ok(
        fits.scroll <= fits.client,
        `the headers sent are not cut off at ${width} px (${fits.scroll} ≤ ${fits.client})`,
      );
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await shoot(page, 'delivery');
    await page.getByRole('button', { name: 'Replay' }).click();
    await page.waitForURL(/done=replayed/);
    t.match(await page.textContent('#delivery'), /Attempts \(2\)/);
    t.equal(
      await page.locator('#delivery .badge', { hasText: 'replay' }).count(),
      1,
      'the new attempt is marked as a replay',
    );
    t.equal(rx.received.length, 2, 'the app got the replay');

    // the page also follows changes made elsewhere (the CLI's replay)
    await page.waitForSelector('#delivery[data-state=open]');
    await d.api(`${d.mgmt}/deliveries/${id}/replay`, { method: 'POST' });
    await page.waitForFunction(
      () => /Attempts \(3\)/.test(document.getElementById('delivery')?.textContent ?? ''),
      undefined,
      { timeout: 5000 },
    );
    t.pass('a replay from the API shows up on the open page');
    await shoot(page, 'delivery-replayed');

    // Copy as curl: the command, and Copy puts it on the clipboard
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: d.url });
    await Promise.all([page.waitForEvent('load'), page.getByRole('button', { name: 'Copy as curl' }).first().click()]);
    const command = await page.locator('#curl').textContent();
    t.match(command, /^curl -X POST 'http:\/\/127\.0\.0\.1:\d+\/slash'/, 'the command, to the app’s URL');
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.waitForFunction(() => document.getElementById('copy-status')?.textContent === 'Copied.');
    t.equal(await page.evaluate(() => navigator.clipboard.readText()), command, 'on the clipboard');
    await shoot(page, 'delivery-curl');

    // Edit and replay: a new delivery, marked
    await page.getByText('Edit and replay, or copy as curl').click();
    const editor = page.getByLabel('Body (JSON)');
    const body = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    await editor.fill(JSON.stringify({ ...body, text: 'edited in the browser' }, null, 2));
    await Promise.all([
      page.waitForURL(/done=edited$/),
      page.getByRole('button', { name: 'Send edited replay' }).click(),
    ]);
    t.match(
      await page.textContent('h1'),
      /slash-command \/standup to browser-app\s*edited replay/,
      'the new delivery, marked as an edited replay',
    );
    t.equal(must(rx.received.at(-1)).body.text, 'edited in the browser', 'the app got the edited body');
    t.ok(must(rx.received.at(-1)).signatureValid, 'signed afresh');
    await shoot(page, 'delivery-edited');

    await page.getByRole('link', { name: 'Deliveries' }).click();
    await page.getByText('Send a test trigger').click();
    await shoot(page, 'deliveries-trigger-form');
    await page.locator('#t-kind').selectOption('global-shortcut');
    await Promise.all([page.waitForURL(/done=sent/), page.getByRole('button', { name: 'Send trigger' }).click()]);
    t.match(await page.textContent('h1'), /global-shortcut \S+ to browser-app/, 'the kind, the shortcut and the app');
    t.match(
      await page.textContent('[role=status]'),
      /Trigger sent, and it failed: connection_error/,
      'the result of the trigger (the shortcut URL is closed)',
    );
    await shoot(page, 'delivery-trigger-result');
  });

  await t.test('/console leads to the app list; an unknown page is a page with a link home', async (t) => {
    await page.goto(`${d.url}/console`);
    t.equal(new URL(page.url()).pathname, '/');
    t.match(await page.textContent('h1'), /Apps/);
    const res = await page.goto(`${d.url}/console/no-such-page`);
    t.equal(must(res).status(), 404);
    t.match(await page.textContent('h1'), /Not found/);
    await shoot(page, 'not-found');
    await page.getByRole('link', { name: 'Back to the console' }).click();
    await page.waitForURL(`${d.url}/`);
    t.match(await page.textContent('h1'), /Apps/);
  });

  await t.test('a browser that is not signed in gets the signed-out page', async (t) => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await other.newPage();
    const res = await p.goto(`${d.url}/console/deliveries`);
    t.equal(must(res).status(), 401);
    t.match(await p.textContent('h1'), /Not signed in/);
    await shoot(p, 'signed-out');
    await other.close();
  });

  // a 400 page (the manifest with problems) and the 404 page are logged as failed loads: not errors of the page
  t.same(
    consoleErrors.filter((e) => !/Failed to load resource: the server responded with a status of (400|404)/.test(e)),
    [],
    'no console errors (no CSP violations)',
  );
});
