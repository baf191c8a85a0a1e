/**
 * examples/standup-socket: the standup app in socket mode against a real daemon, with Node's own
 * WebSocket (here behind --experimental-websocket: Node 20 has it only so) and with the `ws`
 * package that stands in for it on Node 20 by default. Every call comes over the websocket; only
 * the OAuth redirect page is HTTP.
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startExample } from '../helpers/example-app.js';
import { must } from '../../src/must.js';

interface Message {
  id: string;
  text: string;
  threadRootInfo?: { repliesCount: number };
}

const messages = async (d: TestDaemon): Promise<Message[]> =>
  ((await (await d.api(`${d.mgmt}/channels/general/messages?limit=20`)).json()) as { messages: Message[] }).messages;

for (const [variant, nodeArgs] of [
  ["Node's own WebSocket", ['--experimental-websocket']],
  ['the ws package on Node 20', []],
] as const) {
  t.test(`the socket-mode example, with ${variant}`, async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const app = await startExample(t, d, 'standup-socket', { nodeArgs: [...nodeArgs] });
    t.match(app.out(), /connected to .* in socket mode/);
    const dt = (args: string[]) => app.cli(['deliver-test', app.appId, ...args, '--json']);

    const auth = await app.cli(['authorize', app.appId, '--follow', '--json']);
    t.equal(auth.code, 0, auth.stderr);
    t.match(JSON.parse(auth.stdout), { status: 200, codeExchanged: true });

    const say = await app.cli([
      'say',
      'general',
      '/standup-socket',
      'Socket sprint',
      '--wait-ms',
      '30000',
      '--expect-message',
      'Socket sprint',
      '--json',
    ]);
    t.equal(say.code, 0, say.stderr);
    const standup = must((await messages(d)).find((m) => m.text.startsWith('Socket sprint')));
    t.equal(standup.text, 'Socket sprint: joined nobody yet; skipped nobody yet', 'acked over the socket, then posted');

    t.equal(
      (
        await dt([
          '--kind',
          'block-interaction',
          '--source-type',
          'message',
          '--message-id',
          standup.id,
          '--on-action',
          'standup_join',
          '--value',
          'join',
        ])
      ).code,
      0,
    );
    const joined = await until(
      () => messages(d),
      (l) => l.some((m) => m.id === standup.id && m.text.includes('joined Owner')),
    );
    t.equal(
      must(joined.find((m) => m.id === standup.id)).text,
      'Socket sprint: joined Owner; skipped nobody yet',
      'a click updates it',
    );

    const menu = await dt([
      '--kind',
      'dynamic-menu',
      '--on-action',
      'pick_mood',
      '--query',
      'tir',
      '--expect',
      'response',
    ]);
    t.equal(menu.code, 0, menu.stderr);
    t.same(
      JSON.parse(menu.stdout).delivery.response.options,
      [{ text: { type: 'plain_text', text: 'Tired' }, value: 'tired' }],
      'menu options as the body of the reply',
    );
    const modal = await dt(['--kind', 'global-shortcut', '--expect', 'response']);
    t.match(JSON.parse(modal.stdout).delivery.response, { view: { callbackId: 'standup_answer' } });

    const mention = JSON.parse((await app.cli(['say', 'general', 'hi @standup', '--json'])).stdout).message
      .id as string;
    const after = await until(
      () => messages(d),
      (l) => l.some((m) => m.id === mention && m.threadRootInfo?.repliesCount === 1),
    );
    t.equal(
      must(after.find((m) => m.id === mention)).threadRootInfo?.repliesCount,
      1,
      'an event over the socket, answered in the thread',
    );
  });
}
