/**
 * The console's workspace in headless Chromium: `/task` typed in the composer and
 * the app's message appearing; a button in it clicked, BLOCK_INTERACTION reaching the app
 * (signature checked) and its update shown live; a modal opened by a command, filled and
 * submitted, and the app receiving the state; the same from the Shortcuts menu. The app is a local receiver that
 * answers and posts back through the platform API with its bot token. Screenshots at 1280 and 390 px under
 * dist/screenshots/. Skipped without Chromium, except under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';
import { must } from '../../src/must.js';

const plain = (text: string) => ({ type: 'plain_text', text });
const FORM = {
  type: 'MODAL',
  callbackId: 'new_task',
  title: plain('New task'),
  submit: plain('Create'),
  close: plain('Cancel'),
  blocks: [
    {
      type: 'rich_text',
      elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'What needs doing?' }] }],
    },
    {
      type: 'input',
      blockId: 'title',
      label: plain('Title'),
      element: { type: 'plain_text_input', onAction: 'title_input', placeholder: plain('A short title') },
    },
    {
      type: 'input',
      blockId: 'prio',
      label: plain('Priority'),
      element: {
        type: 'static_select_menu',
        onAction: 'prio_pick',
        placeholder: plain('Pick one'),
        options: [
          { text: plain('High'), value: 'high' },
          { text: plain('Low'), value: 'low' },
        ],
      },
    },
  ],
};

testNeeding(t, 'the workspace in headless Chromium', CHROMIUM, async (t, executablePath) => {
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const { startReceiver } = await import('../helpers/receiver.js');
  const { signInLink } = await import('../helpers/console.js');
  const { installPlatformApp } = await import('../helpers/platform-client.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app, bot } = await installPlatformApp(d, {
    name: 'tasks',
    manifest: {
      displayName: 'Tasks',
      slashCommands: [
        { command: '/task', url: `${rx.url}/slash`, usageHint: '[title|form]', description: 'Make a task' },
      ],
      shortcuts: [{ shortcutType: 'GLOBAL', url: `${rx.url}/global`, name: 'new_task', displayName: 'New task' }],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
      dynamicMenus: [{ url: `${rx.url}/menu`, onAction: 'assignee' }],
    },
  });
  rx.secret = app.signingSecret;

  // the app: /task <title> posts a card with buttons; /task form opens a modal; "Done" edits the card
  const card = (title: string, done = false) => ({
    blocks: [
      {
        type: 'rich_text',
        elements: [
          {
            type: 'rich_text_section',
            elements: [
              { type: 'text', text: done ? 'Done: ' : 'Task: ', style: { bold: true } },
              { type: 'text', text: title },
            ],
          },
        ],
      },
      { type: 'divider' },
      ...(done
        ? []
        : [
            {
              type: 'actions',
              elements: [
                { type: 'button', onAction: 'done', value: title, style: 'primary', text: plain('Mark done') },
                {
                  type: 'static_select_menu',
                  onAction: 'size',
                  placeholder: plain('Size'),
                  options: [
                    { text: plain('Small'), value: 's' },
                    { text: plain('Large'), value: 'l' },
                  ],
                },
                { type: 'dynamic_select_menu', onAction: 'assignee', placeholder: plain('Assignee') },
              ],
            },
          ]),
    ],
  });
  rx.on('/slash', (r) => {
    if (r.body.text === 'form') return { json: { triggerId: r.body.triggerId, view: FORM, action: 'OPEN' } };
    void bot.postMessageToChannel(r.body.channelId, `Task: ${r.body.text}`, card(r.body.text));
    return { json: { message: 'Creating the task…' } };
  });
  rx.on('/block', (r) => {
    if (r.body.onAction === 'done')
      void bot.editMessage(r.body.sourceId, r.body.channelId, `Done: ${JSON.parse(r.body.payload).value}`);
    return { json: {} };
  });
  rx.on('/view', { json: {} });
  rx.on('/menu', (r) => ({
    json: {
      onAction: 'assignee',
      triggerId: r.body.triggerId,
      options: [
        { text: plain('Ana'), value: 'u1' },
        { text: plain('Bo'), value: 'u2' },
      ],
    },
  }));
  rx.on('/global', (r) => ({ json: { triggerId: r.body.triggerId, view: FORM, action: 'OPEN' } }));

  const { page, consoleErrors } = await openBrowser(t, executablePath);

  const shoot = screenshotter(t);

  await page.goto(await signInLink(d, '/console/channels'));
  await page.waitForURL(/\/console\/channels\/[^/]+$/);
  t.match(await page.textContent('h1'), /#general/);
  const composer = page.getByRole('textbox', { name: 'Message' });
  t.equal(await page.evaluate(() => document.activeElement?.id), 'message', 'the composer has the focus');
  await composer.fill('/ta');
  await composer.press('End'); // (fill sends one input event; the script offers the matching commands)
  await page.getByRole('button', { name: /^\/task/ }).click();
  t.equal(await composer.inputValue(), '/task ', 'the command completes');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'message', 'and the focus is back in the composer');

  await t.test('/task typed in the composer: the answer only to me, and the app’s message', async (t) => {
    await composer.fill('/task write the report');
    await Promise.all([page.waitForLoadState('load'), composer.press('Enter')]);
    const note = page.locator('#timeline li.eph');
    await note.waitFor();
    t.match(await note.textContent(), /Tasks.*Only visible to you.*Creating the task…/);
    await page
      .locator('#timeline li', { hasText: 'write the report' })
      .getByRole('button', { name: 'Mark done' })
      .waitFor({ timeout: 5000 });
    const [slash] = rx.received;
    t.ok(must(slash).signatureValid);
    t.match(must(slash).body, { messageType: 'SLASH_COMMAND', slashCommand: '/task', text: 'write the report' });
    await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
    await composer.fill('and a plain message');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Send' }).click()]);
    await page.locator('#timeline li', { hasText: 'and a plain message' }).waitFor();
    await shoot(page, 'workspace-channel');
  });

  await t.test('a button clicked: BLOCK_INTERACTION reaches the app, and its update is shown', async (t) => {
    await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
    const item = page.locator('#timeline li', { hasText: 'write the report' });
    // a choice in the select goes at once (the script submits it)
    await item.getByLabel('Size').selectOption('l');
    await page.waitForLoadState('load');
    await page.waitForFunction(() => true);
    const chose = await (async () => {
      for (let i = 0; i < 50; i++) {
        const r = rx.received.find((x) => x.body?.onAction === 'size');
        if (r) return r;
        await new Promise((res) => setTimeout(res, 50));
      }
      return undefined;
    })();
    t.ok(chose, 'the choice reached the app');
    t.same(JSON.parse(must(chose).body.payload), { value: 'l' });
    // a dynamic select asks the app for its options, then sends the choice
    await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
    const assignee = page.locator('#timeline li', { hasText: 'write the report' }).getByRole('combobox', {
      name: 'Assignee',
    });
    await assignee.focus();
    await page.getByRole('option', { name: 'Bo' }).waitFor();
    t.match(
      must(rx.received.find((x) => x.body?.messageType === 'DYNAMIC_MENU')).body,
      { onAction: 'assignee', sourceType: 'MESSAGE' },
      'DYNAMIC_MENU reached the app',
    );
    await Promise.all([page.waitForLoadState('load'), page.getByRole('option', { name: 'Bo' }).click()]);
    for (
      let i = 0;
      i < 50 &&
      !rx.received.some((x) => x.body?.onAction === 'assignee' && x.body?.messageType === 'BLOCK_INTERACTION');
      i++
    )
      await new Promise((res) => setTimeout(res, 50));
    const chosen = must(
      rx.received.find((x) => x.body?.onAction === 'assignee' && x.body?.messageType === 'BLOCK_INTERACTION'),
    );
    t.match(chosen.body, { actionType: 'DYNAMIC_SELECT_MENU' });
    t.same(JSON.parse(chosen.body.payload), { value: 'u2' }, 'the option chosen from the app’s menu');
    await page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
    await page
      .locator('#timeline li', { hasText: 'write the report' })
      .getByRole('button', { name: 'Mark done' })
      .click();
    await page.locator('#timeline li', { hasText: 'Done: write the report' }).waitFor({ timeout: 5000 });
    const block = must(rx.received.find((x) => x.body?.onAction === 'done'));
    t.ok(block.signatureValid, 'signed');
    t.match(block.body, {
      messageType: 'BLOCK_INTERACTION',
      sourceType: 'MESSAGE',
      actionType: 'BUTTON',
      onAction: 'done',
    });
    t.same(JSON.parse(block.body.payload), { value: 'write the report' });
    t.equal(
      await page.locator('#timeline').getByRole('button', { name: 'Mark done' }).count(),
      0,
      'the update replaced the card',
    );
    await shoot(page, 'workspace-updated');
  });

  await t.test('a modal opened by a command, filled and submitted: the app receives the state', async (t) => {
    await composer.fill('/task form');
    await Promise.all([page.waitForLoadState('load'), composer.press('Enter')]);
    const dialog = page.getByRole('dialog', { name: 'New task' });
    await dialog.waitFor();
    // the dialog is in the page before the page's script has run (it moves the focus): wait for the
    // script, then say where the focus is
    const inModal = () => !!document.getElementById('modal')?.contains(document.activeElement);
    await page.waitForFunction(inModal, null, { timeout: 5000 }).catch(() => undefined);
    t.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('name')),
      's.title.title_input',
      'the first input has the focus',
    );
    await shoot(page, 'workspace-modal');
    await dialog.getByLabel('Title').fill('Plan the launch');
    await dialog.getByLabel('Priority').selectOption('high');
    await Promise.all([page.waitForLoadState('load'), dialog.getByRole('button', { name: 'Create' }).click()]);
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    const submit = must(rx.received.find((x) => x.body?.messageType === 'VIEW_ACTION'));
    t.ok(submit.signatureValid);
    t.match(submit.body, { viewActionType: 'SUBMIT', view: { callbackId: 'new_task' } });
    t.same(submit.body.view.state, {
      values: {
        title: { title_input: { type: 'plain_text_input', value: 'Plan the launch' } },
        prio: { prio_pick: { type: 'static_select_menu', value: 'high' } },
      },
    });

    // the same form from the Shortcuts menu
    await page.getByText('Shortcuts', { exact: true }).click();
    await shoot(page, 'workspace-shortcuts-menu');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'New task (Tasks)' }).click()]);
    const shortcut = must(rx.received.find((x) => x.body?.messageType === 'SHORTCUT'));
    t.ok(shortcut.signatureValid);
    t.match(shortcut.body, { type: 'GLOBAL', shortcut: 'new_task' });
    const again = page.getByRole('dialog', { name: 'New task' });
    await again.getByLabel('Title').fill('From the shortcut');
    await again.getByLabel('Priority').selectOption('low');
    await Promise.all([page.waitForLoadState('load'), again.getByRole('button', { name: 'Create' }).click()]);
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    const second = must(rx.received.filter((x) => x.body?.messageType === 'VIEW_ACTION')[1]);
    t.same(
      second.body.view.state.values.title,
      { title_input: { type: 'plain_text_input', value: 'From the shortcut' } },
      'the shortcut’s modal state reached the app',
    );

    // Escape closes the modal (no VIEW_ACTION: the view does not ask for notifyOnClose)
    await composer.fill('/task form');
    await Promise.all([page.waitForLoadState('load'), composer.press('Enter')]);
    await page.getByRole('dialog').waitFor();
    // the page's script has run (it moves the focus into the modal and listens there for Escape):
    // a key pressed before it would reach nothing
    await page.waitForFunction(() => !!document.getElementById('modal')?.contains(document.activeElement));
    await Promise.all([page.waitForLoadState('load'), page.keyboard.press('Escape')]);
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    t.equal(rx.received.filter((x) => x.body?.messageType === 'VIEW_ACTION').length, 2);
  });

  t.same(consoleErrors, [], 'no console errors (no CSP violations)');
});
