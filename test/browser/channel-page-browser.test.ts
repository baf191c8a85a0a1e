/**
 * A channel's page in headless Chromium, as a person finds it: it opens at the newest message with
 * the composer in view (at 1280 and 390 px wide), each message shows its reactions (emoji and count,
 * who reacted in the title) and the person reacts from the page (and takes their reaction back), and
 * an archived channel is marked in the channel list and on its page, whose composer says it is
 * archived and is disabled. Screenshots under dist/screenshots/. Skipped without Chromium, except
 * under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import type { Locator, Page } from 'playwright-core';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';
import { must } from '../../src/must.js';

/** Whether the whole of `l` is inside the window (not scrolled away, not under the fold). */
async function inView(p: Page, l: Locator): Promise<boolean> {
  const box = must(await l.boundingBox());
  const height = await p.evaluate(() => window.innerHeight);
  return box.y >= 0 && box.y + box.height <= height;
}

testNeeding(t, 'a channel’s page in headless Chromium', CHROMIUM, async (t, executablePath) => {
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const { signInLink } = await import('../helpers/console.js');
  const { installPlatformApp } = await import('../helpers/platform-client.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d, { name: 'chatty', manifest: { displayName: 'Chatty' } });

  // a channel of 40 messages (more than a window holds), the newest the owner's, with reactions
  const channels = (await (await d.api(`${d.mgmt}/channels`)).json()) as Array<{
    channel: { id: string; name?: string };
  }>;
  const general = must(channels.find((c) => c.channel.name === 'general')).channel.id;
  for (let i = 1; i < 40; i++) t.equal((await bot.postMessageToChannel(general, `Message number ${i}`)).status, 200);
  const said = await d.api(`${d.mgmt}/channels/general/messages`, {
    method: 'POST',
    json: { text: 'The newest message' },
  });
  const newest = ((await said.json()) as { message: { id: string } }).message.id;
  const react = (code: string) => d.api(`${d.mgmt}/messages/${newest}/reactions`, { method: 'POST', json: { code } });
  t.equal((await react(':tada:')).status, 204);
  t.ok((await bot.addReaction(newest, ':tada:')).status < 300);
  t.ok((await bot.addReaction(newest, ':eyes:')).status < 300);

  // an archived channel, with a message from before
  const made = await d.api(`${d.mgmt}/channels`, { method: 'POST', json: { name: 'old-plans' } });
  t.equal(made.status, 201);
  await d.api(`${d.mgmt}/channels/old-plans/messages`, { method: 'POST', json: { text: 'Plans of last year' } });
  t.equal((await d.api(`${d.mgmt}/channels/old-plans/archive`, { method: 'POST' })).status, 200);

  const { browser, context, page, consoleErrors } = await openBrowser(t, executablePath);
  const shoot = screenshotter(t);
  await page.goto(await signInLink(d, `/console/channels/${general}`));
  await page.waitForURL(/\/console\/channels\/[^/]+$/);
  const item = page.locator(`#m-${newest}`);
  const composer = page.getByRole('textbox', { name: 'Message' });

  await t.test('it opens at the newest message, the composer in view', async (t) => {
    // with the page's script (which puts the focus in the composer), and without it: the layout alone does it
    const noScript = await browser.newContext({ javaScriptEnabled: false, storageState: await context.storageState() });
    t.teardown(() => noScript.close());
    for (const [ctx, width, how] of [
      [context, 1280, 'with its script'],
      [context, 390, 'with its script'],
      [noScript, 1280, 'without a script'],
    ] as const) {
      const p = await ctx.newPage();
      await p.setViewportSize({ width, height: 900 });
      await p.goto(page.url());
      await p.waitForLoadState('load');
      const at = `at ${width} px, ${how}`;
      t.ok(await inView(p, p.locator(`#m-${newest}`)), `the newest message is in view ${at}`);
      t.ok(await inView(p, p.getByRole('textbox', { name: 'Message' })), `the composer is in view ${at}`);
      t.notOk(await inView(p, p.locator('#timeline li', { hasText: 'Message number 1' }).first()), 'the oldest is not');
      await p.close();
    }
  });

  await t.test('each message shows its reactions; the person reacts and takes it back', async (t) => {
    const tada = item.getByRole('button', { name: /🎉 2/ });
    t.equal(await tada.count(), 1, 'the emoji and its count');
    t.match(await tada.getAttribute('title'), /Owner.*Chatty|Chatty.*Owner/i, 'who reacted, on hover');
    t.equal(await tada.getAttribute('aria-pressed'), 'true', 'one of them is mine');
    t.equal(await item.getByRole('button', { name: /👀 1/ }).getAttribute('aria-pressed'), 'false');
    await shoot(page, 'channel-reactions');

    // a reaction of mine added from the page: REACTION_ADDED's path, shown at once
    await item.locator('details.react summary').click();
    await Promise.all([page.waitForLoadState('load'), item.getByRole('button', { name: 'React with 👍' }).click()]);
    await page.locator(`#m-${newest}`).getByRole('button', { name: /👍 1/ }).waitFor();
    const listed = (await (await d.api(`${d.mgmt}/channels/general/messages?limit=1`)).json()) as {
      messages: Array<{ id: string; reactions: Array<{ user: string; code: string }> }>;
    };
    t.match(
      must(listed.messages.find((m) => m.id === newest)).reactions.map((r) => r.code),
      [':tada:', ':tada:', ':eyes:', ':thumbsup:'],
    );
    // my 🎉 clicked: taken back
    await Promise.all([
      page.waitForLoadState('load'),
      page.locator(`#m-${newest}`).getByRole('button', { name: /🎉 2/ }).click(),
    ]);
    const after = page.locator(`#m-${newest}`).getByRole('button', { name: /🎉 1/ });
    await after.waitFor();
    t.equal(await after.getAttribute('aria-pressed'), 'false', 'the one left is not mine');
    t.ok(await inView(page, composer), 'the composer is still in view after a reaction');
    await shoot(page, 'channel');
  });

  await t.test('an archived channel is marked, and its composer is disabled', async (t) => {
    const link = page.getByRole('navigation', { name: 'Channels' }).getByRole('link', { name: /#old-plans/ });
    t.match(await link.textContent(), /#old-plans\s*archived/i, 'marked in the channel list');
    t.match(
      await page
        .getByRole('navigation', { name: 'Channels' })
        .getByRole('link', { name: /#general/ })
        .textContent(),
      /^#general$/,
      'a channel that is not archived is not marked',
    );
    await Promise.all([page.waitForLoadState('load'), link.click()]);
    t.match(await page.textContent('h1'), /#old-plans\s*Archived/i, 'marked on its page');
    t.ok(await composer.isDisabled(), 'the composer is disabled');
    t.ok(await page.getByRole('button', { name: 'Send' }).isDisabled(), 'and its button');
    t.match(await composer.getAttribute('placeholder'), /archived/i);
    t.match(await page.textContent('#composer-hint'), /archived/i, 'the composer says why');
    await shoot(page, 'channel-archived');
  });

  t.same(consoleErrors, [], 'no console errors (no CSP violations)');
});
