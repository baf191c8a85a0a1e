/**
 * The envelopes of a workspace event, encoded around what the apps it goes to share
 * (src/delivery/event-bodies.ts envelopeTexts), are byte for byte what JSON.stringify makes of each app's
 * envelope (payloads.ts eventPayload): the text an app is sent, signed and logged.
 */
import t from 'tap';
import { envelopeTexts } from '../../src/delivery/event-bodies.js';
import { eventPayload } from '../../src/delivery/payloads.js';

const BODIES = [
  '{}',
  JSON.stringify({ mId: 'msg_1', tx: 'a "quoted" line\nand ünïcode \\ back\tslash', rid: 'req_1' }),
  JSON.stringify({ tx: '"workspaceUserIds":[] inside', emoji: '😀', lone: '\ud800', nul: '\u0000' }),
  'not JSON at all: "workspaceUserIds":["x"]',
];
const USERS = [[], ['wu_1'], ['wu_1', 'wu_"2"', 'wü\n3', '"workspaceUserIds":']];
const KINDS: Array<[string, string]> = [
  ['NEW_MESSAGE', 'ws_1'],
  ['APP_UNINSTALLED', 'ws_1'], // an app event: another messageType
  ['REACTION_ADDED', 'ws_"workspaceUserIds":[]'],
];

t.test('each text is JSON.stringify of the envelope it stands for', async (t) => {
  let n = 0;
  const differ: string[] = [];
  for (const [eventType, workspaceId] of KINDS)
    for (const body of BODIES) {
      const textOf = envelopeTexts(eventType, workspaceId, body);
      for (const users of USERS) {
        const want = JSON.stringify(eventPayload(eventType, workspaceId, users, body));
        if (textOf(users) !== want) differ.push(`${eventType} ${workspaceId} ${body} ${JSON.stringify(users)}`);
        n++;
      }
    }
  t.same(differ, [], 'no text differs');
  t.equal(n, KINDS.length * BODIES.length * USERS.length, 'every case compared');
  t.same(
    JSON.parse(envelopeTexts('NEW_MESSAGE', 'ws_1', '{"a":1}')(['wu_9'])),
    {
      messageType: 'PUMBLE_EVENT',
      eventType: 'NEW_MESSAGE',
      workspaceId: 'ws_1',
      workspaceUserIds: ['wu_9'],
      body: '{"a":1}',
    },
    'and reads back as the envelope',
  );
});
