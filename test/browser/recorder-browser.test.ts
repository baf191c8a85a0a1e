/**
 * Issue 37 end to end: the standup conversation of examples/standup-app recorded in the console with two people (the
 * owner types /standup and clicks Join, then acts as Dev, who clicks Skip and answers in the shortcut's modal),
 * stopped, the test renamed, downloaded, and saved beside the app's manifest with `appreg test --recording ID
 * --record-out FILE`; `appreg test` on the saved file passes, and on a copy of the app whose Skip does nothing it fails
 * at the step that broke. With APPREG_DOC_SCREENSHOTS=1 the recorder's screenshots are written to docs/images/
 * (docs/testing.md shows them). APPREG_KEEP_RECORDED=FILE keeps a copy of the saved suite. Skipped without Chromium,
 * except under CI (see consent-browser.test.ts).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { testNeeding } from '../helpers/system-component.js';
import { CHROMIUM } from '../helpers/chromium.js';
import { openBrowser } from '../helpers/browser-page.js';
import { screenshotter } from '../helpers/screenshots.js';
import { must } from '../../src/must.js';

testNeeding(t, 'record a conversation in the console and run it', CHROMIUM, async (t, executablePath) => {
  const { signInLink } = await import('../helpers/console.js');
  const { copyExamples } = await import('../helpers/example-app.js');
  const { runMain } = await import('../helpers/cli.js');
  const { standupWithTwoPeople } = await import('../helpers/standup-two-people.js');
  const { d } = await standupWithTwoPeople(t);

  const { page, consoleErrors } = await openBrowser(t, executablePath);
  const shoot = screenshotter(t);
  /** A picture for docs/testing.md: the page as it shows, or one part of it. */
  const docShot = async (name: string, part?: string) => {
    if (process.env.APPREG_DOC_SCREENSHOTS !== '1') return;
    const file = path.resolve('docs/images', `${name}.png`);
    if (part) await page.locator(part).screenshot({ path: file });
    else await page.screenshot({ path: file });
  };
  const live = () => page.waitForSelector('#ws-status[data-state=open]', { state: 'attached' });
  await page.goto(await signInLink(d, '/console/channels'));
  await page.waitForURL(/\/console\/channels\/[^/]+$/);

  await Promise.all([page.waitForLoadState('load'), page.locator('#record-start').click()]);
  await page.getByText('Recording', { exact: true }).waitFor();
  t.pass('the bar says it is recording');

  await page.getByRole('textbox', { name: 'Message' }).fill('/standup Sprint 13');
  await Promise.all([page.waitForLoadState('load'), page.getByRole('textbox', { name: 'Message' }).press('Enter')]);
  const standup = page.locator('#timeline li', { hasText: 'Sprint 13: joined' });
  await standup.waitFor();
  await live();
  await Promise.all([page.waitForLoadState('load'), standup.getByRole('button', { name: 'Join' }).click()]);
  await page.locator('#timeline li', { hasText: 'Sprint 13: joined Owner;' }).waitFor();

  await page.getByRole('combobox', { name: 'Act as' }).selectOption({ label: 'Dev' });
  await Promise.all([page.waitForLoadState('load'), page.locator('#act-as-switch').click()]);
  await page.getByText('acting as Dev').waitFor();
  t.pass('the owner acts as Dev');
  await live();
  await Promise.all([
    page.waitForLoadState('load'),
    page.locator('#timeline li', { hasText: 'Sprint 13: joined' }).getByRole('button', { name: 'Skip' }).click(),
  ]);
  await page.locator('#timeline li', { hasText: 'Sprint 13: joined Owner; skipped Dev' }).waitFor();
  // Dev answers in the shortcut's modal: the modal (its title and input) and its submit are recorded
  await page.getByText('Shortcuts', { exact: true }).click();
  await Promise.all([
    page.waitForLoadState('load'),
    page.getByRole('button', { name: 'Start standup (Standup)' }).click(),
  ]);
  const modal = page.getByRole('dialog', { name: 'Start standup' });
  await modal.getByLabel('What are you working on today?').fill('the recorder');
  await Promise.all([page.waitForLoadState('load'), modal.getByRole('button', { name: 'Post' }).click()]);
  await page.getByRole('dialog').waitFor({ state: 'detached' });
  await page.locator('#timeline li', { hasText: "Dev's standup: the recorder" }).waitFor();
  await docShot('recorder-recording');
  await shoot(page, 'recorder-recording');

  await Promise.all([page.waitForURL(/\/console\/recordings\/rec_/), page.locator('#record-stop').click()]);
  const id = decodeURIComponent(must(/\/console\/recordings\/([^/?#]+)/.exec(page.url())?.[1]));
  const yaml = () => page.locator('#suite-yaml').innerText();
  t.match(await yaml(), /say: \/standup Sprint 13/);
  t.match(await yaml(), /click: Skip\n\s+message: \$\{standup\}\n\s+as: dev/, 'the second person is an as: step');
  t.notMatch(await yaml(), /msg_|usr_|rec_/, 'no ids');
  t.match(
    await yaml(),
    /shortcut: start_standup\n\s+as: dev\n\s+- expect: modal\n\s+title: Start standup\n\s+inputs: \[ ?What are you working on today\? ?\]\n\s+- submit:\n\s+What are you working on today\?: the recorder\n\s+as: dev/,
    "Dev's modal and its submit",
  );
  t.match(await yaml(), /expect: message\n\s+text: "?Dev's standup: the recorder/, 'what the app posted in answer');

  await t.test('the editor: rename the test, loosen a text, drop a step', async (t) => {
    await page.locator('#test-name').fill('Join and Skip, recorded');
    // step 2 is the standup posted, step 4 the ack of Join
    await page.locator('input[name=loose][value="2"]').check();
    await page.locator('input[name=drop][value="4"]').check();
    await Promise.all([page.waitForLoadState('load'), page.locator('#suite-apply').click()]);
    t.match(await yaml(), /- name: Join and Skip, recorded/);
    t.match(await yaml(), /expect: message\n\s+text: Sprint 13\n/, 'loosened to its first clause');
    t.equal((await yaml()).match(/expect: ack/g)?.length, 3, 'one ack of four dropped');
    t.equal(await page.locator('#suite-yaml .y-r').first().innerText(), '${standup}', 'references are highlighted');
    await docShot('recorder-editor');
    await docShot('recorder-yaml', '#suite-yaml');
    await shoot(page, 'recorder-suite');
  });

  const download = await Promise.all([page.waitForEvent('download'), page.locator('#suite-download').click()]).then(
    ([dl]) => dl,
  );
  const downloaded = fs.readFileSync(must(await download.path()), 'utf8');
  t.match(downloaded, /^# yaml-language-server: \$schema=/);
  t.match(downloaded, /- name: Join and Skip, recorded/);
  t.equal(download.suggestedFilename(), 'standup-recorded.apptest.yaml');
  t.same(consoleErrors, [], 'no console errors (no CSP violations)');

  /** The recording saved beside the manifest of a copy of the examples, and `appreg test` on it. */
  const saveAndRun = async (root: string) => {
    const file = path.join(root, 'examples/standup-app/standup-recorded.apptest.yaml');
    const saved = await runMain(['--url', d.url, '--token', d.token, 'test', '--recording', id, '--record-out', file]);
    t.equal(saved.code, 0, saved.stderr);
    t.match(saved.stdout, /wrote .*standup-recorded\.apptest\.yaml: 2 tests, the recorded one of 13 steps/);
    return runMain(['test', file], { cwd: root });
  };

  await t.test('the saved suite passes on the app as it is', async (t) => {
    const root = copyExamples();
    const r = await saveAndRun(root);
    t.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    // kept for runs by hand (how often a freshly recorded suite passes: docs/testing.md)
    if (process.env.APPREG_KEEP_RECORDED)
      fs.copyFileSync(
        path.join(root, 'examples/standup-app/standup-recorded.apptest.yaml'),
        process.env.APPREG_KEEP_RECORDED,
      );
    t.match(r.stdout, /✓ Join and Skip, recorded/);
  });

  await t.test('on an app whose Skip does nothing it fails, at the step that broke', async (t) => {
    const root = copyExamples();
    const f = path.join(root, 'examples/standup-app/standup.mjs');
    const from = "else if (p.onAction === 'standup_skip') s.skipped.add(who), s.joined.delete(who);";
    const text = fs.readFileSync(f, 'utf8');
    t.ok(text.includes(from), 'the app still holds the line this test breaks');
    fs.writeFileSync(f, text.replace(from, "else if (p.onAction === 'standup_skip') s.joined.delete(who);"));
    const r = await saveAndRun(root);
    t.equal(r.code, 6, 'exit 6: a test failed');
    t.match(r.stdout, /✗ expect updated "Sprint 13: joined Owner; skipped Dev"/, 'the step that broke');
    t.match(
      r.stdout,
      /it is unchanged: it reads "Sprint 13: joined Owner; skipped nobody yet"/,
      'what happened instead',
    );
  });
});
