/**
 * POST …/deliveries with `asUser` (docs/protocol.md §2.5): the app's owner sends a trigger as
 * another person of the workspace (what `appreg test` does for a step `as` a user). The body names
 * that user, a block interaction's source must be one that user sees, and a user who is not a
 * person of the caller's workspace is refused before anything is sent.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { createApp, secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

t.test('a trigger as another person of the workspace', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const app = await createApp(d, {
    slashCommands: [{ command: '/go', url: `${rx.url}/slash` }],
    shortcuts: [{ shortcutType: 'GLOBAL', url: `${rx.url}/shortcut`, name: 'do_it', displayName: 'Do it' }],
    blockInteraction: { url: `${rx.url}/blocks` },
    eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
  });
  rx.secret = (app as unknown as { signingSecret: string }).signingSecret;
  const dev = await secondUser(d);
  const trigger = (body: Record<string, unknown>) =>
    d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: { appId: app.id, ...body } });

  await t.test('the body and the record name that user', async (t) => {
    const res = await trigger({ kind: 'global-shortcut', asUser: dev.id });
    t.equal(res.status, 201);
    const rec = (await res.json()) as { userId: string; outcome: string };
    t.match(rec, { userId: dev.id, outcome: 'acked' });
    t.match(must(rx.received.at(-1)).body, { messageType: 'SHORTCUT', userId: dev.id, workspaceId: d.workspaceId });
    const mine = await trigger({ kind: 'global-shortcut' });
    t.match(must(rx.received.at(-1)).body, { userId: d.workspaceUserId }, 'without asUser: the caller');
    t.equal(mine.status, 201);
  });

  await t.test('a click on a message as that user: the message must be one they see', async (t) => {
    const posted = await d.api(`${d.mgmt}/channels/general/messages`, { method: 'POST', json: { text: 'click here' } });
    const msg = ((await posted.json()) as { message: { id: string; channelId: string } }).message;
    const res = await trigger({
      kind: 'block-interaction',
      asUser: dev.id,
      sourceId: msg.id,
      onAction: 'ok',
      value: 'yes',
    });
    t.equal(res.status, 201);
    t.match(must(rx.received.at(-1)).body, {
      messageType: 'BLOCK_INTERACTION',
      userId: dev.id,
      sourceId: msg.id,
      channelId: msg.channelId,
      sourceType: 'MESSAGE',
    });
    // an ephemeral message of the owner's is not one dev sees
    const eph = await trigger({ kind: 'block-interaction', sourceType: 'EPHEMERAL_MESSAGE', onAction: 'ok' });
    const ephSource = ((await eph.json()) as { payload: { sourceId: string } }).payload.sourceId;
    const before = rx.received.length;
    const hidden = await trigger({ kind: 'block-interaction', asUser: dev.id, sourceId: ephSource, onAction: 'ok' });
    t.equal(hidden.status, 404, 'a message the user does not see');
    t.equal(rx.received.length, before, 'nothing was sent');
  });

  await t.test('a test message to click in, made for that user, is ephemeral to them', async (t) => {
    const res = await trigger({
      kind: 'block-interaction',
      asUser: dev.id,
      sourceType: 'EPHEMERAL_MESSAGE',
      onAction: 'ok',
    });
    t.equal(res.status, 201);
    const sourceId = ((await res.json()) as { payload: { sourceId: string } }).payload.sourceId;
    const asDev = (await (
      await d.api(`${dev.mgmt}/channels/general/messages?limit=5`, { headers: { authtoken: dev.token } })
    ).json()) as { messages: Array<{ id: string; ephemeral?: boolean }> };
    t.match(
      asDev.messages.find((m) => m.id === sourceId),
      { ephemeral: true },
      'dev sees it',
    );
    const asOwner = (await (await d.api(`${d.mgmt}/channels/general/messages?limit=5`)).json()) as {
      messages: Array<{ id: string }>;
    };
    t.notOk(
      asOwner.messages.some((m) => m.id === sourceId),
      'the owner does not',
    );
  });

  await t.test(
    'refused: a bot user, someone of another workspace, an unknown id, a non-string, an event',
    async (t) => {
      const other = await installPlatformApp(d);
      const before = rx.received.length;
      for (const [asUser, why] of [
        [other.tokens.botId, 'a bot user'],
        ['wu_nobody', 'an unknown id'],
        [42, 'not a string'],
      ] as const) {
        const res = await trigger({ kind: 'global-shortcut', asUser });
        t.equal(res.status, 400, why);
        t.match(await res.json(), { code: 'invalid_request', details: [{ pointer: '/asUser' }] }, why);
      }
      const ws = await d.api('/workspaces', { method: 'POST', json: { name: 'Elsewhere' } });
      const elsewhere = (await ws.json()) as { workspaceUserId: string };
      t.equal(
        (await trigger({ kind: 'global-shortcut', asUser: elsewhere.workspaceUserId })).status,
        400,
        "the caller's own user in another workspace is not a person of this one",
      );
      const ev = await trigger({ kind: 'event', event: 'NEW_MESSAGE', asUser: dev.id });
      t.equal(ev.status, 400);
      t.match(await ev.json(), { message: /event/ });
      t.equal(rx.received.length, before, 'nothing was sent');
    },
  );
});
