/**
 * A dynamic select in the console, with examples/standup-app run as a developer runs it: its mood
 * menu (a `dynamic_select_menu` whose options come from the app's dynamic menu URL) shows the
 * app's options as soon as it is opened, and as the person types the console asks the daemon,
 * which asks the app with the typed text (DYNAMIC_MENU's `query`), and shows what the app
 * answered; a choice made with the mouse or the keyboard reaches the app (BLOCK_INTERACTION) and
 * the app's update is shown. Skipped without Chromium, except under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';

testNeeding(t, 'a dynamic select’s typeahead in headless Chromium', CHROMIUM, async (t, executablePath) => {
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const { signInLink } = await import('../helpers/console.js');
  const { startExample } = await import('../helpers/example-app.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await startExample(t, d, 'standup-app');
  const authorized = await app.cli(['authorize', app.appId, '--follow', '--json']);
  t.equal(authorized.code, 0, authorized.stderr);

  const { page, consoleErrors } = await openBrowser(t, executablePath);
  const shoot = screenshotter(t);
  await page.goto(await signInLink(d, '/console/channels'));
  await page.waitForURL(/\/console\/channels\/[^/]+$/);
  await page.getByRole('textbox', { name: 'Message' }).fill('/standup Sprint 12');
  await Promise.all([page.waitForLoadState('load'), page.getByRole('textbox', { name: 'Message' }).press('Enter')]);
  const standup = page.locator('#timeline li', { hasText: 'Sprint 12: joined' });
  await standup.waitFor({ timeout: 10_000 });
  await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
  // the app shows the mood of those who joined
  await Promise.all([page.waitForLoadState('load'), standup.getByRole('button', { name: 'Join' }).click()]);
  await page.locator('#timeline li', { hasText: 'Sprint 12: joined Owner;' }).waitFor();
  await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
  const options = () => page.getByRole('listbox', { name: 'Your mood' }).getByRole('option').allTextContents();

  await t.test('opened, the mood menu shows the app’s options at once', async (t) => {
    const mood = standup.getByRole('combobox', { name: 'Your mood' });
    await mood.click();
    await page.getByRole('option', { name: 'Tired' }).waitFor();
    t.same(await options(), ['Great', 'Good', 'Meh', 'Tired'], 'every mood, before anything is typed');
    t.equal(await mood.getAttribute('aria-expanded'), 'true');
    await shoot(page, 'dynamic-select-open');
  });

  await t.test('typed, the options are the app’s answer to what was typed; a click chooses', async (t) => {
    const mood = standup.getByRole('combobox', { name: 'Your mood' });
    await mood.pressSequentially('ti');
    await page.waitForFunction(() => document.querySelectorAll('[role=listbox] [role=option]').length === 1);
    t.same(await options(), ['Tired'], 'the app filtered by the query');
    await shoot(page, 'dynamic-select-typed');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('option', { name: 'Tired' }).click()]);
    await page.locator('#timeline li', { hasText: 'Sprint 12: joined Owner (Tired);' }).waitFor();
    t.pass('the app heard of the choice and updated its message');
  });

  await t.test('from the keyboard: type, arrow down, Enter', async (t) => {
    await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
    const mood = page
      .locator('#timeline li', { hasText: 'Sprint 12: joined' })
      .getByRole('combobox', { name: 'Your mood' });
    await mood.focus();
    await mood.pressSequentially('goo');
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('[role=listbox] [role=option]'))
          .map((o) => o.textContent)
          .join() === 'Good',
    );
    await mood.press('ArrowDown');
    t.equal(await page.getByRole('option', { name: 'Good' }).getAttribute('aria-selected'), 'true');
    await Promise.all([page.waitForLoadState('load'), mood.press('Enter')]);
    await page.locator('#timeline li', { hasText: 'Sprint 12: joined Owner (Good);' }).waitFor();
    t.pass('chosen from the keyboard');
  });

  t.same(consoleErrors, [], 'no console errors (no CSP violations)');
});
