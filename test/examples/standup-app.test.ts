/**
 * examples/standup-app (issue 22 §1), run as a developer runs it, against a real daemon: it refuses
 * calls that are not signed, completes OAuth at its redirect URL, answers /standup with a message
 * whose buttons update it, opens a modal on its global shortcut and posts what was submitted,
 * answers its dynamic menu, and replies in the thread of a message that mentions it.
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import fs from 'node:fs';
import path from 'node:path';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startExample, type ExampleApp } from '../helpers/example-app.js';
import { must } from '../../src/must.js';

interface Message {
  id: string;
  text: string;
  blocks?: Array<{ type: string; elements?: Array<{ type: string; onAction?: string; text?: { text: string } }> }>;
  threadRootInfo?: { repliesCount: number };
}

/** The channel's latest messages as the owner sees them. */
async function messages(d: TestDaemon): Promise<Message[]> {
  const res = await d.api(`${d.mgmt}/channels/general/messages?limit=20`);
  return ((await res.json()) as { messages: Message[] }).messages;
}

t.test('the standup example app against a daemon', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app: ExampleApp = await startExample(t, d, 'standup-app');
  const dt = (args: string[]) => app.cli(['deliver-test', app.appId, ...args, '--json']);

  await t.test('every call must be signed with its signing secret (403 otherwise)', async (t) => {
    const unsigned = await fetch(`${app.url}/slash`, { method: 'POST', body: '{}' });
    t.equal(unsigned.status, 403);
    const forged = await fetch(`${app.url}/slash`, {
      method: 'POST',
      body: '{}',
      headers: { 'x-pumble-request-timestamp': String(Date.now()), 'x-pumble-request-signature': 'ab'.repeat(32) },
    });
    t.equal(forged.status, 403);
    const probe = await dt(['--kind', 'slash-command', '--probe-signature']);
    t.equal(probe.code, 0, probe.stderr);
    t.match(JSON.parse(probe.stdout), { passed: true, probe: { refusedBoth: true } });
  });

  await t.test('before it is authorized, /standup says how to authorize it', async (t) => {
    const r = await app.cli(['say', 'general', '/standup', '--wait-ms', '0', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout).shown, `appreg authorize ${app.appId} --follow`);
  });

  await t.test('OAuth: authorize --follow sends the code to its redirect URL, which exchanges it', async (t) => {
    const r = await app.cli(['authorize', app.appId, '--follow', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout), { status: 200, body: /installed in workspace ws_/ });
    const tokens = path.join(app.dir, 'tokens.json');
    t.equal(fs.statSync(tokens).mode & 0o777, 0o600, 'the tokens are kept in a file only its owner reads');
    t.match(JSON.parse(fs.readFileSync(tokens, 'utf8')), { [d.workspaceId]: { botToken: /^abt_/, botId: String } });
  });

  let standup: Message | undefined;
  await t.test('/standup acks, then posts a message with Join and Skip buttons and a mood menu', async (t) => {
    const r = await app.cli([
      'say',
      'general',
      '/standup',
      'Sprint 12',
      '--wait-ms',
      '30000',
      '--expect-message',
      'Sprint 12',
      '--json',
    ]);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout), { outcome: 'acked', passed: true });
    standup = (await messages(d)).find((m) => m.text.startsWith('Sprint 12'));
    t.ok(standup, 'the message is in #general');
    const elements = must(must(must(must(standup).blocks).find((b) => b.type === 'actions')).elements);
    t.same(
      elements.map((e) => [e.type, e.onAction]),
      [
        ['button', 'standup_join'],
        ['button', 'standup_skip'],
        ['dynamic_select_menu', 'pick_mood'],
      ],
    );
    t.equal(must(standup).text, 'Sprint 12: joined nobody yet; skipped nobody yet');
  });

  await t.test('a click on Join, then on Skip, updates the message', async (t) => {
    const click = (onAction: string, value: string) =>
      dt([
        '--kind',
        'block-interaction',
        '--source-type',
        'message',
        '--message-id',
        must(standup).id,
        '--on-action',
        onAction,
        '--value',
        value,
      ]);
    t.equal((await click('standup_join', 'join')).code, 0);
    const joined = await until(
      () => messages(d),
      (l) => l.some((m) => m.id === must(standup).id && m.text.includes('joined Owner')),
    );
    t.equal(must(joined.find((m) => m.id === must(standup).id)).text, 'Sprint 12: joined Owner; skipped nobody yet');
    t.equal((await click('standup_skip', 'skip')).code, 0);
    const skipped = await until(
      () => messages(d),
      (l) => l.some((m) => m.id === must(standup).id && m.text.includes('skipped Owner')),
    );
    t.equal(must(skipped.find((m) => m.id === must(standup).id)).text, 'Sprint 12: joined nobody yet; skipped Owner');
  });

  await t.test('the dynamic menu answers the moods matching what was typed', async (t) => {
    const r = await dt([
      '--kind',
      'dynamic-menu',
      '--on-action',
      'pick_mood',
      '--query',
      'GOO',
      '--expect',
      'response',
    ]);
    t.equal(r.code, 0, r.stderr);
    t.same(JSON.parse(r.stdout).delivery.response.options, [
      { text: { type: 'plain_text', text: 'Good' }, value: 'good' },
    ]);
  });

  await t.test('the global shortcut opens a modal; its submit posts the answer', async (t) => {
    const open = await dt(['--kind', 'global-shortcut', '--shortcut', 'start_standup', '--expect', 'response']);
    t.equal(open.code, 0, open.stderr);
    const view = JSON.parse(open.stdout).delivery.response.view as Record<string, unknown>;
    t.match(view, {
      type: 'MODAL',
      callbackId: 'standup_answer',
      blocks: [{ type: 'input', blockId: 'answer', element: { onAction: 'text' } }],
    });
    const viewFile = path.join(app.dir, 'submitted.json');
    fs.writeFileSync(
      viewFile,
      JSON.stringify({
        ...view,
        id: 'view_1',
        state: { values: { answer: { text: { type: 'plain_text_input', value: 'fixing the build' } } } },
      }),
    );
    const submit = await dt([
      '--kind',
      'view-action',
      '--view-action',
      'submit',
      '--view-file',
      viewFile,
      '--wait-ms',
      '30000',
      '--expect-message',
      "Owner's standup: fixing the build",
    ]);
    t.equal(submit.code, 0, submit.stderr);
    t.match(JSON.parse(submit.stdout), { passed: true, delivery: { outcome: 'acked' } });
  });

  await t.test('a message mentioning @standup gets a reply in its thread; other messages do not', async (t) => {
    const plain = await app.cli(['say', 'general', 'no mention here', '--json']);
    const mention = await app.cli(['say', 'general', 'good morning @standup', '--json']);
    const [plainId, mentionId] = [plain, mention].map((r) => JSON.parse(r.stdout).message.id as string);
    const after = await until(
      () => messages(d),
      (l) => l.some((m) => m.id === mentionId && m.threadRootInfo?.repliesCount === 1),
    );
    t.equal(must(after.find((m) => m.id === mentionId)).threadRootInfo?.repliesCount, 1, 'one reply in the thread');
    const replies = (await (
      await d.api(`${d.mgmt}/channels/general/messages/${mentionId}/replies`)
    ).json()) as Message[];
    t.match(replies, [{ text: /Type \/standup/ }]);
    t.notOk(must(after.find((m) => m.id === plainId)).threadRootInfo, 'no reply to a message without the mention');
  });
});
