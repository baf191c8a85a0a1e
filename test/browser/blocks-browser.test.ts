/**
 * The interactive elements of blocks in headless Chromium, used as a person uses them: a
 * checkbox ticked and a date picked in an app's message and in a modal reach the app in the
 * shapes the SDK's apps read (BLOCK_INTERACTION `payload` `{values}` / `{value}`, VIEW_ACTION
 * `state`, an empty date range left out); the next tick sends every box ticked; an attachment's
 * button works; a button with a confirmation asks first; a link button opens its page and tells
 * the app; an app's home view sends its state and keeps it. Waits are on conditions (what arrived at the app, what the
 * page shows), never on time. Skipped without Chromium, except under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';
import { must } from '../../src/must.js';

const plain = (text: string) => ({ type: 'plain_text', text });
const opt = (text: string, value: string) => ({ text: plain(text), value });

testNeeding(t, 'blocks in headless Chromium', CHROMIUM, async (t, executablePath) => {
  const { startTestDaemon } = await import('../helpers/daemon.js');
  const { startReceiver } = await import('../helpers/receiver.js');
  const { signInLink } = await import('../helpers/console.js');
  const { installPlatformApp } = await import('../helpers/platform-client.js');
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app, bot } = await installPlatformApp(d, {
    name: 'elements',
    manifest: {
      displayName: 'Elements',
      slashCommands: [{ command: '/elements', url: `${rx.url}/slash` }],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
    },
  });
  rx.secret = app.signingSecret;

  const FORM = {
    type: 'MODAL',
    callbackId: 'prefs',
    title: plain('Preferences'),
    submit: plain('Save'),
    close: plain('Cancel'),
    blocks: [
      {
        type: 'input',
        blockId: 'langs',
        label: plain('Languages'),
        optional: true,
        element: { type: 'checkboxes', onAction: 'langs_pick', options: [opt('English', 'en'), opt('French', 'fr')] },
      },
      {
        type: 'input',
        blockId: 'start',
        label: plain('Start day'),
        element: { type: 'date_picker', onAction: 'start_pick' },
      },
      {
        type: 'input',
        blockId: 'trip',
        label: plain('Trip'),
        optional: true,
        element: { type: 'date_range_picker', onAction: 'trip_pick' },
      },
      { type: 'actions', elements: [{ type: 'checkboxes', onAction: 'notify', options: [opt('Notify me', 'yes')] }] },
    ],
  };
  rx.on('/slash', (r) => {
    if (r.body.text === 'form') return { json: { view: FORM, action: 'OPEN' } };
    void bot.postMessageToChannel(r.body.channelId, 'Elements', {
      blocks: [
        {
          type: 'rich_text',
          elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'Choose your options' }] }],
        },
        {
          type: 'actions',
          elements: [
            {
              type: 'checkboxes',
              onAction: 'sizes',
              options: [opt('Small', 's'), opt('Medium', 'm'), opt('Large', 'l')],
            },
            { type: 'date_picker', onAction: 'due', placeholder: plain('Due date') },
            {
              type: 'button',
              onAction: 'wipe',
              value: 'all',
              style: 'danger',
              text: plain('Delete all'),
              confirm: {
                title: plain('Delete everything?'),
                text: plain('This cannot be undone.'),
                confirm: plain('Yes, delete'),
                deny: plain('Keep it'),
              },
            },
            { type: 'button', onAction: 'docs', value: 'd', url: `${rx.url}/landing`, text: plain('Read the docs') },
          ],
        },
      ],
      attachments: [
        {
          color: '#2563eb',
          blocks: [
            {
              type: 'rich_text',
              elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'Weekly report' }] }],
            },
            {
              type: 'actions',
              elements: [{ type: 'button', onAction: 'open_report', value: 'r-42', text: plain('Open the report') }],
            },
          ],
        },
      ],
    });
    return { json: {} };
  });
  rx.on('/block', { json: {} });
  rx.on('/view', { json: {} });
  rx.on('/landing', { text: 'the docs' });

  /** The first request the app got (or, waiting for each next one, gets) that `pred` accepts. */
  const arrival = async (pred: (r: (typeof rx.received)[number]) => boolean) => {
    while (!rx.received.some(pred)) await rx.waitFor(rx.received.length + 1);
    return must(rx.received.find(pred));
  };
  const interactions = (onAction: string) =>
    rx.received.filter((r) => r.body?.messageType === 'BLOCK_INTERACTION' && r.body.onAction === onAction);
  /** The `nth` BLOCK_INTERACTION for `onAction`, once it has arrived. */
  const interaction = async (onAction: string, nth = 1) => {
    while (interactions(onAction).length < nth) await rx.waitFor(rx.received.length + 1);
    return must(interactions(onAction)[nth - 1]);
  };

  const { context, page, consoleErrors } = await openBrowser(t, executablePath);
  const shoot = screenshotter(t);

  await page.goto(await signInLink(d, '/console/channels'));
  await page.waitForURL(/\/console\/channels\/[^/]+$/);
  const composer = page.getByRole('textbox', { name: 'Message' });
  await composer.fill('/elements');
  await Promise.all([page.waitForLoadState('load'), composer.press('Enter')]);
  const message = page.locator('#timeline li', { hasText: 'Choose your options' });
  await message.getByLabel('Medium').waitFor();

  await t.test('a checkbox in a message: every box ticked reaches the app, and stays ticked', async (t) => {
    // the script sends the tick at once: the page is loaded again, from the server
    await Promise.all([page.waitForEvent('load'), message.getByLabel('Medium').click()]);
    const first = await interaction('sizes');
    t.ok(first.signatureValid);
    t.match(first.body, { sourceType: 'MESSAGE', actionType: 'CHECKBOXES' });
    t.same(JSON.parse(first.body.payload), { values: ['m'] });
    t.ok(await message.getByLabel('Medium').isChecked(), 'the page drawn again shows the tick');
    await Promise.all([page.waitForEvent('load'), message.getByLabel('Large').click()]);
    const second = await interaction('sizes', 2);
    t.same(
      JSON.parse(second.body.payload),
      { values: ['m', 'l'] },
      'the second tick sends both boxes, as the platform does',
    );
    t.ok(await message.getByLabel('Large').isChecked());
    await shoot(page, 'blocks-message');
  });

  await t.test('a date picked in a message reaches the app as {value}', async (t) => {
    const due = message.locator('form.el', { has: page.getByLabel('Due date') });
    await due.getByLabel('Due date').fill('2026-03-15');
    await Promise.all([page.waitForEvent('load'), due.getByRole('button', { name: 'Choose' }).click()]);
    const picked = await interaction('due');
    t.match(picked.body, { actionType: 'DATE_PICKER' });
    t.same(JSON.parse(picked.body.payload), { value: '2026-03-15' });
    t.equal(await message.getByLabel('Due date').inputValue(), '2026-03-15', 'the page drawn again shows the date');
  });

  await t.test('an attachment’s button works', async (t) => {
    await Promise.all([
      page.waitForEvent('load'),
      message.locator('.attachment').getByRole('button', { name: 'Open the report' }).click(),
    ]);
    const clicked = await interaction('open_report');
    t.match(clicked.body, { sourceType: 'MESSAGE', actionType: 'BUTTON' });
    t.same(JSON.parse(clicked.body.payload), { value: 'r-42' });
  });

  await t.test('a button with a confirmation asks first; Keep it sends nothing', async (t) => {
    await message.getByRole('button', { name: 'Delete all' }).click();
    const dialog = page.getByRole('alertdialog', { name: 'Delete everything?' });
    await dialog.waitFor();
    t.match(await dialog.textContent(), /This cannot be undone\./);
    await dialog.getByRole('button', { name: 'Keep it' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await message.getByRole('button', { name: 'Delete all' }).click();
    await Promise.all([page.waitForEvent('load'), dialog.getByRole('button', { name: 'Yes, delete' }).click()]);
    const wiped = await interaction('wipe');
    t.same(JSON.parse(wiped.body.payload), { value: 'all' });
    t.equal(rx.received.filter((r) => r.body?.onAction === 'wipe').length, 1, 'sent once: Keep it sent nothing');
  });

  await t.test('a link button opens its page and tells the app', async (t) => {
    const [popup] = await Promise.all([
      context.waitForEvent('page'),
      message.getByRole('link', { name: 'Read the docs' }).click(),
    ]);
    const told = await interaction('docs');
    t.ok(told.signatureValid);
    t.same(JSON.parse(told.body.payload), { value: 'd' });
    await arrival((r) => r.path === '/landing');
    t.pass('the page opened');
    await popup.close();
  });

  await t.test('a checkbox and a date picker in a modal: the state the SDK reads, no empty date range', async (t) => {
    await composer.fill('/elements form');
    await Promise.all([page.waitForLoadState('load'), composer.press('Enter')]);
    const dialog = page.getByRole('dialog', { name: 'Preferences' });
    await dialog.waitFor();
    await dialog.getByLabel('French').check();
    await dialog.getByLabel('Start day').fill('2026-04-02');
    // a checkbox of an actions block in the modal goes at once, from the VIEW, and the modal stays as filled
    await Promise.all([page.waitForEvent('load'), dialog.getByLabel('Notify me').click()]);
    const notify = await interaction('notify');
    t.match(notify.body, { sourceType: 'VIEW', actionType: 'CHECKBOXES', view: { callbackId: 'prefs' } });
    t.same(JSON.parse(notify.body.payload), { values: ['yes'] });
    t.same(
      notify.body.view.state.values.start,
      { start_pick: { type: 'date_picker', value: '2026-04-02' } },
      'with the view’s state as filled',
    );
    t.ok(await dialog.getByLabel('Notify me').isChecked(), 'the modal drawn again shows the tick');
    t.equal(await dialog.getByLabel('Start day').inputValue(), '2026-04-02', 'and what was filled');
    t.ok(await dialog.getByLabel('French').isChecked());
    await shoot(page, 'blocks-modal');
    await Promise.all([page.waitForLoadState('load'), dialog.getByRole('button', { name: 'Save' }).click()]);
    const submitted = await arrival((r) => r.body?.messageType === 'VIEW_ACTION');
    t.ok(submitted.signatureValid);
    t.match(submitted.body, { viewActionType: 'SUBMIT', view: { callbackId: 'prefs' } });
    t.same(
      submitted.body.view.state,
      {
        values: {
          langs: { langs_pick: { type: 'checkboxes', values: ['fr'] } },
          start: { start_pick: { type: 'date_picker', value: '2026-04-02' } },
        },
      },
      'the empty date range is left out (not values: [""])',
    );
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  });

  await t.test(
    'an app’s home view: a tick goes with the view’s state; Enter in a field presses no button',
    async (t) => {
      const me = must(
        ((await bot.listWorkspaceUsers()).body as Array<{ id: string; name: string }>).find((u) => u.name === 'Owner'),
      ).id;
      const published = await bot.call('POST', `/v1/app/homeView/workspaceUsers/${me}`, {
        data: {
          blocks: [
            {
              type: 'actions',
              elements: [{ type: 'button', onAction: 'home_btn', value: 'h', text: plain('Refresh') }],
            },
            {
              type: 'input',
              blockId: 'note',
              label: plain('Note'),
              optional: true,
              element: { type: 'plain_text_input', onAction: 'note_in' },
            },
            {
              type: 'actions',
              elements: [{ type: 'checkboxes', onAction: 'digest', options: [opt('Weekly digest', 'weekly')] }],
            },
          ],
        },
      });
      t.equal(published.status, 200);
      await page.goto(`${d.url}/console/home/${app.id}`);
      await page.getByLabel('Note').fill('remember me');
      await page.getByLabel('Note').press('Enter');
      await Promise.all([page.waitForEvent('load'), page.getByLabel('Weekly digest').click()]);
      const ticked = await interaction('digest');
      t.match(ticked.body, { sourceType: 'VIEW', actionType: 'CHECKBOXES', view: { type: 'HOME' } });
      t.same(JSON.parse(ticked.body.payload), { values: ['weekly'] });
      t.same(
        ticked.body.view.state,
        { values: { note: { note_in: { type: 'plain_text_input', value: 'remember me' } } } },
        'with the home view’s state',
      );
      t.equal(interactions('home_btn').length, 0, 'Enter in the field pressed no button');
      t.equal(await page.getByLabel('Note').inputValue(), 'remember me', 'the home view keeps what was typed');
      t.ok(await page.getByLabel('Weekly digest').isChecked(), 'and the tick');
    },
  );

  t.same(consoleErrors, [], 'no console errors (no CSP violations)');
});
