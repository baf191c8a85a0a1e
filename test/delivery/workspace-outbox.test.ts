/**
 * A workspace change and its event are one commit (the events outbox); the worker fans the event
 * out, so the call that made the change reads nothing about apps, and an event waiting in the
 * outbox when the daemon stops is sent once it is back.
 */
import fs from 'node:fs';
import t from 'tap';
import { startTestDaemon, tempDir } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp, platformClient } from '../helpers/platform-client.js';
import type { AnyTables, Change } from '../../src/store/types.js';
import { engineOf } from '../helpers/test-tables.js';
import { EVENTS_OUTBOX, type WorkspaceOutboxEvent } from '../../src/model/events.js';
import { must } from '../../src/must.js';

t.test(
  "a post's NEW_MESSAGE is written in the post's own commit, the post reads no installation or authorization, and an event left in the outbox is sent after a restart",
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    rx.on('/events', { text: 'ok' });
    const dataDir = tempDir();
    t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    let d = await startTestDaemon({ dataDir });
    const listener = await installPlatformApp(d, {
      name: 'listener',
      events: ['NEW_MESSAGE', 'REACTION_ADDED'],
      eventsUrl: `${rx.url}/events`,
    });
    rx.secret = listener.app.signingSecret;
    const poster = await installPlatformApp(d, { name: 'poster' });
    const general = (await poster.bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel
      .id as string;

    // nothing drains the outbox from here on: what the post itself reads and writes is all there is
    await d.parts.delivery.worker.stop();
    // the daemon's store, instrumented: its methods replaced by ones that note each call (records of any table)
    const store = engineOf(d.parts.store);
    const commits: (readonly Change<AnyTables>[])[] = [];
    const reads: string[] = [];
    const { commit, find, get, getMany } = store;
    store.commit = (changes, expect) => (commits.push(changes), commit.call(store, changes, expect));
    store.find = (table, field, value) => (reads.push(table), find.call(store, table, field, value));
    store.get = (table, id) => (reads.push(table), get.call(store, table, id));
    store.getMany = (keys, opts) => (reads.push(...keys.map((k) => k.table)), getMany.call(store, keys, opts));
    const posted = await poster.bot.postMessageToChannel(general, 'in the same commit');
    const reacted = await poster.user.addReaction(posted.body.id, ':tada:');
    Object.assign(store, { commit, find, get, getMany });
    t.equal(posted.status, 200);
    t.equal(reacted.status, 204);

    const withMessage = must(commits.find((cs) => cs.some((c) => c.table === 'wsMessages' && c.id === posted.body.id)));
    const event = withMessage.find((c) => c.table === EVENTS_OUTBOX)?.value as WorkspaceOutboxEvent | undefined;
    t.match(
      event,
      {
        eventType: 'NEW_MESSAGE',
        workspaceId: d.workspaceId,
        audience: { everyone: true },
        body: { mId: posted.body.id, tx: 'in the same commit' },
      },
      'the event rides in the commit of the message',
    );
    t.ok(
      commits.some(
        (cs) =>
          cs.some((c) => c.table === 'wsMessages') &&
          cs.some((c) => c.table === EVENTS_OUTBOX && (c.value as WorkspaceOutboxEvent).eventType === 'REACTION_ADDED'),
      ),
      'and the reaction’s in the commit of the reaction',
    );
    t.ok(reads.length > 0, 'the calls’ reads were seen');
    t.same(
      reads.filter((r) => r === 'oauthInstallations' || r === 'oauthAuthorizations'),
      [],
      'the calls read no installation or authorization: who the events go to is decided later',
    );
    t.equal(await store.count(EVENTS_OUTBOX), 2, 'both wait in the outbox');
    t.equal(rx.received.length, 0, 'nothing was sent');
    await d.stop();

    d = await startTestDaemon({ dataDir });
    t.teardown(() => d.stop());
    const got = await rx.waitFor(2);
    t.same(got.map((r) => r.body.eventType).sort(), ['NEW_MESSAGE', 'REACTION_ADDED'], 'sent once the daemon is back');
    t.equal(JSON.parse(must(got.find((r) => r.body.eventType === 'NEW_MESSAGE')).body.body).mId, posted.body.id);
    t.ok(got.every((r) => r.signatureValid));
    t.same(must(got[0]).body.workspaceUserIds, [d.workspaceUserId]);
    // the platform API keeps working on the restarted daemon: the next post's event comes at once
    const again = platformClient(d.url, must(poster.tokens.botToken), poster.app.appKey);
    const next = await again.postMessageToChannel(general, 'after the restart');
    const [, , third] = await rx.waitFor(3);
    t.equal(JSON.parse(must(third).body.body).mId, next.body.id);
    t.equal(await d.parts.store.count(EVENTS_OUTBOX), 0, 'the outbox is empty');
  },
);
