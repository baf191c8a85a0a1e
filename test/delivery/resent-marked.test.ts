/**
 * An event that may already have reached its app comes again only under the same delivery id, marked
 * with `x-appreg-retry-num` (docs/protocol.md §5.6). Here the embedded store's daemon, which starts an
 * event's first attempt before the write that queues it is durable, has that write fail (a full disk)
 * after the app got the event: the outbox record is still there, and the next drain sends the same
 * delivery again, marked. (A daemon killed at that point, and a lease taken over on PostgreSQL, are
 * test/delivery/outbox-crash.test.ts.)
 */
import t from 'tap';
import { fullDiskIo } from '../helpers/full-disk.js';
import { onPostgres, startTestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

t.test(
  'the write queuing an event fails after its first attempt reached the app: the event comes again under the same delivery id, marked as a retry',
  async (t) => {
    if (onPostgres())
      return void t.plan(0, 'the embedded store’s journal (on PostgreSQL an attempt waits for the write)');
    // the disk refuses, on cue, the writes that queue events (pending deliveries)
    const full = { on: false };
    const { io, disk } = fullDiskIo((bytes) => full.on && bytes.includes('"pendingDeliveries"'));
    const clock = createTestClock(); // the store's retry of a failed write, and the worker's polls, run when advanced
    const d = await startTestDaemon({ storeIo: io, clock });
    t.teardown(() => d.stop());
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const listener = await installPlatformApp(d, {
      name: 'listener',
      events: ['NEW_MESSAGE'],
      eventsUrl: `${rx.url}/events`,
    });
    rx.secret = listener.app.signingSecret;
    const { bot } = await installPlatformApp(d, { name: 'poster' });
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id;

    full.on = true;
    const posted = await bot.postMessageToChannel(general, 'hello');
    t.equal(posted.status, 200, 'the post is acknowledged (its write holds no pending delivery)');
    const first = must((await rx.waitFor(1))[0]);
    await until(() => disk.refused > 0);
    t.ok(disk.refused > 0, 'the write queuing its event failed');
    full.on = false;

    const again = await until(
      async () => {
        await clock.advance(1000); // the store's retry, then the worker's next poll drains the outbox again
        return rx.received.length;
      },
      (n) => n >= 2,
    );
    t.equal(again, 2, 'the event came again');
    const second = must(rx.received[1]);
    t.equal(JSON.parse(second.body.body).mId, JSON.parse(first.body.body).mId, 'the same message');
    t.equal(first.headers['x-appreg-retry-num'], undefined, 'its first sending was a first attempt');
    t.equal(
      second.headers['x-appreg-delivery-id'],
      first.headers['x-appreg-delivery-id'],
      'under the same delivery id',
    );
    t.equal(second.headers['x-appreg-retry-num'], '1', 'marked as a retry');
    const id = String(first.headers['x-appreg-delivery-id']);
    const shown = await until(
      async () => (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as { state: string; attempts: unknown[] },
      (v) => v.state !== 'pending',
    );
    t.match(shown, { state: 'delivered', attempts: [{ retryNum: 1 }] }, 'the log shows the delivery, delivered');
  },
);
