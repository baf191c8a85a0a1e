/** The whole path: an app unauthorized or uninstalled through the OAuth endpoints is told so by a signed event. */
import t from 'tap';
import type { Test } from 'tap';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { authorize, type CreatedApp } from '../fixtures/redirects-flow.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

t.test(
  'APP_UNAUTHORIZED and APP_UNINSTALLED reach the app as signed APP_EVENTs after the tokens stop working',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const res = await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE', 'APP_UNAUTHORIZED', 'APP_UNINSTALLED'] },
      }),
    });
    const app = (await res.json()) as CreatedApp;
    rx.secret = app.signingSecret;
    rx.on('/events', { text: 'ok' });

    const a = await authorize(d, app);
    const del = await fetch(`${d.url}/v1/app/authorization`, {
      method: 'DELETE',
      headers: { token: a.accessToken, 'x-app-token': app.appKey },
    });
    t.equal(del.status, 204);
    const [first] = await rx.waitFor(1);
    t.ok(must(first).signatureValid, 'signed');
    t.match(must(first).body, {
      messageType: 'APP_EVENT',
      eventType: 'APP_UNAUTHORIZED',
      workspaceId: d.workspaceId,
      workspaceUserIds: [d.workspaceUserId],
    });
    t.match(JSON.parse(must(first).body.body), { app: app.id, workspaceUser: d.workspaceUserId, accessGranted: false });

    const b = await authorize(d, app);
    const un = await fetch(`${d.url}/v1/app/installation`, {
      method: 'DELETE',
      headers: { token: must(b.botToken), 'x-app-token': app.appKey },
    });
    t.equal(un.status, 204);
    const all = await rx.waitFor(2);
    t.match(must(all[1]).body, { messageType: 'APP_EVENT', eventType: 'APP_UNINSTALLED', workspaceId: d.workspaceId });
    t.match(JSON.parse(must(all[1]).body.body), { app: app.id, workspace: d.workspaceId });
    // the app has them; the log says delivered once the daemon has read the app's answers and recorded them
    const delivered = async () =>
      (
        (await (await d.api(`${d.mgmt}/deliveries?appId=${app.id}`)).json()) as Array<{ kind: string; state: string }>
      ).filter((x) => x.kind === 'event' && x.state === 'delivered').length;
    t.equal(await until(delivered, (n) => n === 2), 2, 'both in the delivery log');
  },
);

/** A receiver, a daemon on a test clock and an app subscribed to `events` there, the receiver answering ok. */
async function appOn(t: Test, events: string[]) {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({ eventSubscriptions: { url: `${rx.url}/events`, events } }),
  });
  const app = (await res.json()) as CreatedApp;
  rx.secret = app.signingSecret;
  rx.on('/events', { text: 'ok' });
  return { rx, d, app, clock };
}

t.test('an app that does not subscribe to APP_UNAUTHORIZED is not sent it', async (t) => {
  const { rx, d, app } = await appOn(t, ['NEW_MESSAGE']);
  const a = await authorize(d, app);
  await fetch(`${d.url}/v1/app/authorization`, {
    method: 'DELETE',
    headers: { token: a.accessToken, 'x-app-token': app.appKey },
  });
  t.equal(
    await until(
      () => d.parts.store.count('eventsOutbox'),
      (n) => n === 0,
    ),
    0,
    'the outbox record was consumed, not left behind',
  );
  await d.stop(); // waits for the drain and every attempt it started
  t.equal(rx.received.length, 0);
});

t.test('an unauthorize reaches the app at once while the delivery worker idles', async (t) => {
  const { rx, d, app, clock } = await appOn(t, ['APP_UNAUTHORIZED']);
  for (let i = 0; i < 3; i++) {
    const a = await authorize(d, app);
    await clock.advance(2500); // nothing due: the worker polls once a second by now
    t.ok(
      clock.pending().some((ms) => ms > 0),
      'its next poll is ahead',
    );
    await fetch(`${d.url}/v1/app/authorization`, {
      method: 'DELETE',
      headers: { token: a.accessToken, 'x-app-token': app.appKey },
    });
    // the clock stands still: no poll runs, so only the revocation's hint can have woken the worker
    await rx.waitFor(i + 1);
  }
  t.equal(rx.received.length, 3, 'each arrived with the clock standing still');
});
