/**
 * The 400s of the message bodies, exactly as docs/protocol.md §9.2 words them: the schemas at the
 * edge now check the shape (schemas/http/platform.schema.json) and the services take typed input,
 * but each problem is still said in the messages service's words, and nothing is posted or changed.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { installPlatformApp, PLATFORM_SCOPES } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

const refused = (message: string, details: Array<{ pointer: string; message: string }>) => ({
  code: 'invalid_request',
  message,
  details,
});

t.test('message bodies: refused in the words of the messages service', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d);
  const general = must((await bot.listChannels()).body.find((c: any) => c.channel.name === 'general')).channel.id;
  const msgs = `/v1/channels/${general}/messages`;
  const posted = await bot.postMessageToChannel(general, 'kept as it is');
  t.equal(posted.status, 200);
  const m = posted.body.id as string;

  const needs = { pointer: '/text', message: 'a message needs text, blocks, attachments or files' };
  const cases: Array<[string, string, unknown, ReturnType<typeof refused>]> = [
    ['POST', msgs, {}, refused(`The message is not valid: /text ${needs.message}.`, [needs])],
    ['POST', msgs, undefined, refused(`The message is not valid: /text ${needs.message}.`, [needs])],
    ['POST', msgs, ['not', 'an', 'object'], refused(`The message is not valid: /text ${needs.message}.`, [needs])],
    [
      'POST',
      msgs,
      { text: 'x'.repeat(100_001) },
      refused('The message is not valid: /text must be a string of at most 100000 characters.', [
        { pointer: '/text', message: 'must be a string of at most 100000 characters' },
      ]),
    ],
    [
      'POST',
      msgs,
      { text: 'hi', blocks: [1, 'x'], files: [2] },
      refused('The message is not valid: /blocks must be an array of blocks.', [
        { pointer: '/blocks', message: 'must be an array of blocks' },
        { pointer: '/files', message: 'must be a list of at most 20 file ids' },
      ]),
    ],
    [
      'POST',
      msgs,
      { text: 'hi', files: Array.from({ length: 21 }, (_, i) => `file_${i}`) },
      refused('The message is not valid: /files must be a list of at most 20 file ids.', [
        { pointer: '/files', message: 'must be a list of at most 20 file ids' },
      ]),
    ],
    ...[{}, 5, { sendToUsers: [] }].map((ephemeral): [string, string, unknown, ReturnType<typeof refused>] => [
      'POST',
      msgs,
      { text: 'hi', ephemeral },
      refused('The message is not valid: /ephemeral/sendToUsers must list at least one workspace user id.', [
        { pointer: '/ephemeral/sendToUsers', message: 'must list at least one workspace user id' },
      ]),
    ]),
    // what the schema alone said before keeps the schema's words
    ['POST', msgs, { text: 5 }, refused('text must be string.', [{ pointer: '/text', message: 'must be string' }])],
    [
      'PUT',
      `${msgs}/${m}`,
      { text: 'hi', attachments: [[]] },
      refused('The message is not valid: /attachments must be an array of attachments.', [
        { pointer: '/attachments', message: 'must be an array of attachments' },
      ]),
    ],
    ...[{}, { attachments: [1] }, undefined].map((data): [string, string, unknown, ReturnType<typeof refused>] => [
      'PUT',
      `${msgs}/${m}/attachments`,
      data,
      refused('attachments must be an array of attachments.', [
        { pointer: '/attachments', message: 'must be an array of objects' },
      ]),
    ]),
    ...[{}, { deleteForUsers: [] }].map((data): [string, string, unknown, ReturnType<typeof refused>] => [
      'DELETE',
      `${msgs}/${m}/ephemeral`,
      data,
      refused('deleteForUsers must list at least one workspace user id.', [
        { pointer: '/deleteForUsers', message: 'must be a non-empty list of ids' },
      ]),
    ]),
    ...[{}, { code: 'tada' }].map((data): [string, string, unknown, ReturnType<typeof refused>] => [
      'POST',
      `/v1/messages/${m}/reactions`,
      data,
      refused('code must be an emoji code such as :thumbsup: (3 to 200 characters).', [
        { pointer: '/code', message: 'must look like :name:' },
      ]),
    ]),
    ...[{}, undefined].map((data): [string, string, unknown, ReturnType<typeof refused>] => [
      'POST',
      '/v1/messages/scheduled',
      data,
      refused('sendAt must be a time in epoch milliseconds.', [
        { pointer: '/sendAt', message: 'must be epoch milliseconds' },
      ]),
    ]),
    [
      'POST',
      '/v1/messages/scheduled',
      { channelId: general, sendAt: Date.now() + 3_600_000, blocks: [null] },
      refused('The message is not valid: /blocks must be an array of blocks.', [
        { pointer: '/blocks', message: 'must be an array of blocks' },
      ]),
    ],
    [
      'POST',
      '/v1/messages/search',
      { limit: 50 },
      refused('The search is not valid: /limit must be a whole number from 1 to 20.', [
        { pointer: '/limit', message: 'must be a whole number from 1 to 20' },
      ]),
    ],
    [
      'POST',
      '/v1/messages/search',
      { from: [1], text: 'x'.repeat(501), strategy: 'SIDEWAYS', beforeTs: 1.5, skip: -1, limit: 0 },
      refused('The search is not valid: /from must be a list of at most 50 ids.', [
        { pointer: '/from', message: 'must be a list of at most 50 ids' },
        { pointer: '/text', message: 'must be at most 500 characters' },
        { pointer: '/strategy', message: 'must be MOST_RELEVANT, MOST_RECENT, NEWEST or OLDEST' },
        { pointer: '/beforeTs', message: 'must be a whole number from 1' },
        { pointer: '/skip', message: 'must be a whole number from 0' },
        { pointer: '/limit', message: 'must be a whole number from 1 to 20' },
      ]),
    ],
    [
      'POST',
      '/v1/messages/search',
      { text: 5 },
      refused('text must be string.', [{ pointer: '/text', message: 'must be string' }]),
    ],
  ];
  const found = await bot.searchMessages({ text: 'kept', from: null, in: null, limit: null, skip: null });
  t.equal(found.status, 200, 'null is an unset field of a search');
  t.equal(found.body.totalElements, 1);
  for (const [method, path, data, expected] of cases) {
    const r = await bot.call(method, path, { data });
    t.equal(r.status, 400, `${method} ${path} ${JSON.stringify(data)?.slice(0, 80)}`);
    t.same(r.body, expected, `${method} ${path} ${JSON.stringify(data)?.slice(0, 80)}: said as before`);
  }

  const after = await bot.fetchMessage(m, general);
  t.match(after.body, { text: 'kept as it is', attachments: [] }, 'the message is unchanged');
  const listed = await bot.fetchMessages(general, undefined, 100);
  t.equal(listed.body.messages.filter((x: any) => x.text === 'hi').length, 0, 'nothing was posted');
  t.same((await bot.fetchScheduledMessages()).body.scheduledMessages, [], 'nothing was scheduled');

  // a person's reaction (the management API) is refused in the same words, whatever the code is
  for (const json of [{}, { code: 5 }, { code: 'tada' }]) {
    const r = await d.api(`${d.mgmt}/messages/${m}/reactions`, { method: 'POST', json });
    t.equal(r.status, 400);
    t.same(
      await r.json(),
      refused('code must be an emoji code such as :thumbsup: (3 to 200 characters).', [
        { pointer: '/code', message: 'must look like :name:' },
      ]),
      `a person's reaction ${JSON.stringify(json)}`,
    );
  }
});

t.test('a status and a home view: refused in the words of the profiles service', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { user, bot } = await installPlatformApp(d);
  const status = (details: Array<{ pointer: string; message: string }>) =>
    refused(`The status is not valid: ${must(details[0]).pointer} ${must(details[0]).message}.`, details);
  const code = { pointer: '/code', message: 'must be an emoji code of 3 to 102 characters' };
  for (const data of [{}, undefined, { code: ':' }, { code: 5 }])
    t.same((await user.updateCustomStatus(data as Record<string, unknown>)).body, status([code]), JSON.stringify(data));
  const bad = {
    code: ':x:',
    status: 'x'.repeat(101),
    expiration: 'someday',
    expiresAt: -1,
    pausedNotifications: 'yes',
  };
  t.same(
    (await user.updateCustomStatus(bad)).body,
    status([
      { pointer: '/status', message: 'must be at most 100 characters' },
      { pointer: '/expiration', message: 'must be one of never, min30, hour1, hour4, today, thisWeek, custom' },
      { pointer: '/expiresAt', message: 'must be epoch milliseconds (0: never)' },
      { pointer: '/pausedNotifications', message: 'must be true or false' },
    ]),
    'every problem, in order',
  );
  const me = (await user.userInfo(d.workspaceUserId)).body;
  t.notOk(me.customStatus, 'no status was set');

  for (const data of [{}, { blocks: [1] }, { blocks: [null] }])
    t.same(
      (await bot.call('POST', `/v1/app/homeView/workspaceUsers/${d.workspaceUserId}`, { data })).body,
      refused('blocks must be an array of blocks.', [{ pointer: '/blocks', message: 'must be an array of blocks' }]),
      `a home view ${JSON.stringify(data)}`,
    );
});

t.test('an upload: refused in the words of the files service', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const withFiles = [...PLATFORM_SCOPES, 'files:write'];
  const { bot } = await installPlatformApp(d, { userScopes: withFiles, botScopes: withFiles });
  const badName = refused('filename must be a name of 1 to 255 characters.', [
    { pointer: '/filename', message: 'must be a file name' },
  ]);
  for (const data of [['x'], undefined, { filename: ' ', length: 1 }])
    t.same((await bot.call('POST', '/v1/files/upload/token', { data })).body, badName, JSON.stringify(data));
  t.same(
    (await bot.call('POST', '/v1/files/upload/token', { data: { filename: 'a.txt', length: -1 } })).body,
    refused('length must be the size of the file in bytes.', [
      { pointer: '/length', message: 'must be a whole number of bytes' },
    ]),
  );
  const noUpload = refused('original.requestedFileUploadId must name the upload.', [
    { pointer: '/original/requestedFileUploadId', message: 'is required' },
  ]);
  for (const data of [{}, undefined, { original: 5 }, { original: { requestedFileUploadId: 7 } }])
    t.same((await bot.call('POST', '/v1/files/upload/complete', { data })).body, noUpload, JSON.stringify(data));
});
