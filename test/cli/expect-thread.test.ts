/**
 * --expect-message (deliver-test and say) finds what the app posts in a thread too: a message
 * shortcut's reply in the thread of its message, a slash command answered in a thread. The message
 * a block-interaction test posts itself is never taken for the app's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { installPlatformApp, type platformClient } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

t.test('replies in threads are watched for', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = { bot: undefined as ReturnType<typeof platformClient> | undefined, root: '' };
  // an SDK-like app: a message shortcut answers in the message's thread (ctx.say(…, true)); /ask answers in the thread
  // of an older message
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on(
      'end',
      () =>
        void (async () => {
          const b = JSON.parse(raw);
          res.setHeader('content-type', 'application/json');
          if (b.messageType === 'SHORTCUT')
            await must(app.bot).reply(b.messageId, b.channelId, 'summarised in the thread');
          if (b.messageType === 'SLASH_COMMAND')
            await must(app.bot).reply(app.root, b.channelId, `answer to ${b.text}`);
          res.end('{}');
        })().catch((e: unknown) =>
          setImmediate(() => {
            throw e;
          }),
        ),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const installed = await installPlatformApp(d, {
    name: 'summary',
    manifest: {
      shortcuts: [{ shortcutType: 'ON_MESSAGE', url: `${url}/shortcut`, name: 'summarise', displayName: 'Summarise' }],
      slashCommands: [{ command: '/ask', url: `${url}/slash` }],
      blockInteraction: { url: `${url}/blocks` },
    },
  });
  app.bot = installed.bot;
  const g = ['--url', d.url, '--token', d.token];
  const general = (await installed.user.listChannels()).body.find((c: any) => c.channel.name === 'general').channel
    .id as string;
  const target = (await installed.user.postMessageToChannel(general, 'a long discussion')).body.id as string;
  app.root = (await installed.user.postMessageToChannel(general, 'questions go here')).body.id as string;
  await installed.user.postMessageToChannel(general, 'something later');

  const shortcut = await runMain([
    ...g,
    'deliver-test',
    installed.app.id,
    '--kind',
    'message-shortcut',
    '--message-id',
    target,
    '--expect-message',
    '^summarised in the thread$',
    '--wait-ms',
    '30000',
    '--json',
  ]);
  t.equal(shortcut.code, 0, shortcut.stdout + shortcut.stderr);
  const out = JSON.parse(shortcut.stdout);
  t.match(
    out.messages,
    [{ text: 'summarised in the thread', threadReplyInfo: { rootId: target } }],
    'the thread reply, as the app posted it',
  );
  const human = await runMain([
    ...g,
    'deliver-test',
    installed.app.id,
    '--kind',
    'message-shortcut',
    '--message-id',
    target,
  ]);
  t.match(
    human.stdout,
    /the app posted\n\s+\d\d:\d\d:\d\d Test App: summarised in the thread \(reply in thread msg_\S+\)/,
  );

  const said = await runMain([
    ...g,
    'say',
    'general',
    '/ask where?',
    '--expect-message',
    '^answer to where\\?$',
    '--wait-ms',
    '30000',
    '--json',
  ]);
  t.equal(said.code, 0, said.stdout + said.stderr);
  t.match(JSON.parse(said.stdout).messages, [{ text: 'answer to where?', threadReplyInfo: { rootId: app.root } }]);

  // replies already there before the command are not counted as the app's answer
  const again = await runMain([
    ...g,
    'say',
    'general',
    '/ask twice',
    '--expect-message',
    '^answer to where\\?$',
    '--wait-ms',
    '1',
  ]);
  t.equal(again.code, 6, 'an earlier reply does not satisfy a later command');

  const block = await runMain([
    ...g,
    'deliver-test',
    installed.app.id,
    '--kind',
    'block-interaction',
    '--expect-message',
    'posted by appreg deliver-test',
    '--wait-ms',
    '0',
    '--json',
  ]);
  t.equal(block.code, 6, "the message the test posted to click in is not the app's");
  t.same(JSON.parse(block.stdout).messages, []);
});
