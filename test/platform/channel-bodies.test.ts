/**
 * The 400s of channel bodies, on the platform API and the management API, exactly as the channels
 * service words them: the schemas at the edge check the fields' types now and the service takes
 * typed input, and nothing is created.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { installPlatformApp } from '../helpers/platform-client.js';

const refused = (message: string, pointer: string, detail: string) => ({
  code: 'invalid_request',
  message,
  details: [{ pointer, message: detail }],
});
const badName = refused(
  'name must be 1 to 80 letters, digits, spaces, _ or -.',
  '/name',
  'is not a valid channel name',
);

t.test('channel bodies: refused in the words of the channels service', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { bot } = await installPlatformApp(d);

  const platform: Array<[string, string, unknown, unknown]> = [
    ['POST', '/v1/channels', ['not', 'an', 'object'], badName],
    [
      'POST',
      '/v1/channels',
      { name: 'ok', type: 'GROUP' },
      refused('type must be PUBLIC or PRIVATE.', '/type', 'must be PUBLIC or PRIVATE'),
    ],
    [
      'POST',
      '/v1/channels',
      { name: 'ok', description: 'x'.repeat(251) },
      refused(
        'description must be at most 250 characters.',
        '/description',
        'must be a string of at most 250 characters',
      ),
    ],
    ['POST', '/v1/channels', { name: 5 }, refused('name must be string.', '/name', 'must be string')],
    [
      'POST',
      '/v1/channels/direct',
      { participantIds: [1] },
      refused('participantIds.0 must be string.', '/participantIds/0', 'must be string'),
    ],
    [
      'POST',
      '/v1/channels/direct',
      { participantIds: ['wu_nobody'] },
      refused('wu_nobody is not a user of this workspace.', '/participantIds', 'names an unknown user'),
    ],
    [
      'GET',
      '/v1/channels?types=PUBLIC,BOGUS',
      undefined,
      refused('types must be a comma-separated list of PUBLIC, PRIVATE, DIRECT, SELF.', '/types', 'unknown type BOGUS'),
    ],
  ];
  for (const [method, path, data, expected] of platform) {
    const r = await bot.call(method, path, { data });
    t.equal(r.status, 400, `${method} ${path} ${JSON.stringify(data)}`);
    t.same(r.body, expected, `${method} ${path} ${JSON.stringify(data)}: said as before`);
  }

  // a person (the management API): a field of another type is refused as a wrong one
  const management: Array<[unknown, unknown]> = [
    [{ name: 5 }, badName],
    [[], badName],
    [{ name: 'ok', type: 7 }, refused('type must be PUBLIC or PRIVATE.', '/type', 'must be PUBLIC or PRIVATE')],
    [
      { name: 'ok', description: false },
      refused(
        'description must be at most 250 characters.',
        '/description',
        'must be a string of at most 250 characters',
      ),
    ],
  ];
  for (const [json, expected] of management) {
    const r = await d.api(`${d.mgmt}/channels`, { method: 'POST', json });
    t.equal(r.status, 400, JSON.stringify(json));
    t.same(await r.json(), expected, `a person's channel ${JSON.stringify(json)}: said as before`);
  }

  const names = (await bot.listChannels()).body.map((c: any) => c.channel.name);
  t.notOk(names.includes('ok'), 'no channel was created');
});
