/**
 * A click without `message:` goes to the newest message with that button of the app under test,
 * not to a newer one another app of the workspace posted in the test's channel (a daemon given
 * with --url); a message of anyone is the fallback. The daemon's API is a stand-in here.
 */
import t from 'tap';
import { runAction } from '../../src/apptest/actions.js';
import { TestContext, type SuiteEnv } from '../../src/apptest/context.js';
import type { Api, Message } from '../../src/apptest/api.js';

const button = (label: string) => [
  {
    type: 'actions',
    elements: [{ type: 'button', onAction: `on_${label}`, value: label, text: { type: 'plain_text', text: label } }],
  },
];
const message = (id: string, author: string, label: string, at: number): Message => ({
  id,
  channelId: 'ch_1',
  author,
  text: id,
  timestamp: new Date(at).toISOString(),
  timestampMilli: at,
  blocks: button(label),
});

function contextWith(messages: Message[], sent: Array<Record<string, unknown>>): TestContext {
  const api = {
    clientOf: async () => ({}),
    newest: async () => messages.at(-1),
    messagesAfter: async () => messages,
    trigger: async (body: Record<string, unknown>) => {
      sent.push(body);
      return {
        id: 'dlv_1',
        kind: 'block-interaction',
        appId: 'app_mine',
        appName: 'Mine',
        transport: 'http',
        state: 'delivered',
        outcome: 'acked',
        payload: {},
        attempts: [],
        createdAt: '',
      };
    },
  } as unknown as Api;
  const env = {
    api,
    app: { id: 'app_mine', name: 'mine', displayName: 'Mine', botId: 'bot_mine' },
    users: new Map([['owner', { id: 'wu_owner', name: 'Owner', email: 'o@x' }]]),
    suite: { defaults: {} },
  } as unknown as SuiteEnv;
  return new TestContext(env, { name: 'a test', steps: [{ click: 'Join' }] } as never, 'ch_1', 'c');
}

/** The click sent when the app under test's message has `mine` and another app's newer one has Join. */
async function clicked(mine: string): Promise<Array<Record<string, unknown>>> {
  const sent: Array<Record<string, unknown>> = [];
  const ctx = contextWith(
    [message('msg_mine', 'bot_mine', mine, 1), message('msg_other', 'bot_other', 'Join', 2)],
    sent,
  );
  await runAction(ctx, { click: 'Join' });
  return sent;
}

t.test("the app under test's message, though another app's is newer", async (t) => {
  t.match(await clicked('Join'), [{ appId: 'app_mine', sourceId: 'msg_mine', onAction: 'on_Join' }]);
});

t.test('else the newest message of anyone that has the button', async (t) => {
  t.match(await clicked('Skip'), [{ sourceId: 'msg_other' }]);
});
