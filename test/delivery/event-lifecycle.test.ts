/**
 * Events from trigger to end: the first attempt's outcome, its timeout, cancel, replay, an app's deletion, the list's
 * order.
 */
import t from 'tap';
import type { Test } from 'tap';
import { startTestDaemon, manifest, type TestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { createTestClock } from '../helpers/test-clock.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

/** A receiver, a daemon on a test clock (no retry comes unless a test advances it) and an app of the receiver's. */
async function setup(t: Test, config: Record<string, unknown> = {}) {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = createTestClock();
  const d = await startTestDaemon({ clock, config: { deliveryRetrySchedule: '60,60', ...config } });
  t.teardown(() => d.stop());
  const res = await d.api(`${d.mgmt}/apps`, {
    method: 'POST',
    json: manifest({
      name: 'ev-app',
      displayName: 'Event App',
      eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
      slashCommands: [{ command: '/go', url: `${rx.url}/slash` }],
    }),
  });
  const app = (await res.json()) as { id: string; signingSecret: string };
  rx.secret = app.signingSecret;
  return { d, rx, app, clock };
}

const trigger = async (d: TestDaemon, body: Record<string, unknown>) => {
  const res = await d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: body });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};
const show = async (d: TestDaemon, id: string) =>
  (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as Record<string, any>;
const post = async (d: TestDaemon, path: string) => {
  const res = await d.api(`${d.mgmt}${path}`, { method: 'POST' });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

t.test('an event trigger always reports the outcome of its own first attempt (200 in a row)', async (t) => {
  const { d, rx, app } = await setup(t);
  const outcomes = new Map<string, number>();
  for (let i = 0; i < 200; i++) {
    const r = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
    outcomes.set(String(r.body.outcome), (outcomes.get(String(r.body.outcome)) ?? 0) + 1);
  }
  t.same([...outcomes], [['acked', 200]], 'every trigger answered acked');
  t.equal(rx.received.length, 200, 'and each event arrived once');
});

t.test("timeoutMs applies to an event trigger's first attempt", async (t) => {
  const { d, rx, app, clock } = await setup(t, { deliveryEventTimeoutMs: 10_000 });
  rx.on('/events', { hang: true });
  let r: Awaited<ReturnType<typeof trigger>> | undefined;
  void trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE', timeoutMs: 300 }).then((x) => (r = x));
  await rx.waitFor(1);
  await clock.advance(299);
  t.equal(r, undefined, 'not before 300 ms');
  await clock.advance(1);
  await until(() => r);
  t.equal(must(r).body.outcome, 'timeout', 'at 300 ms, not the 10 s event timeout');
  t.equal(must(r).body.state, 'retrying');
});

t.test('cancel ends a retrying event; anything else is 409 delivery_not_retrying', async (t) => {
  const { d, rx, app } = await setup(t);
  rx.on('/events', { status: 503 });
  const r = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  t.equal(r.body.state, 'retrying');
  const c = await post(d, `/deliveries/${r.body.id}/cancel`);
  t.equal(c.status, 200);
  t.match(c.body, { state: 'cancelled', cancelReason: 'cancelled by its owner' });
  t.equal(c.body.nextAttemptAt, undefined);
  t.equal(await d.parts.store.get('pendingDeliveries', r.body.id), undefined, 'no retry left');
  const again = await post(d, `/deliveries/${r.body.id}/cancel`);
  t.equal(again.status, 409);
  t.equal(again.body.code, 'delivery_not_retrying');
  const s = await trigger(d, { appId: app.id, kind: 'slash-command', command: '/go' });
  t.equal((await post(d, `/deliveries/${s.body.id}/cancel`)).status, 409, 'a trigger is not cancellable');
  t.equal((await post(d, '/deliveries/dlv_nope/cancel')).status, 404);
});

t.test('deleting an app ends its retrying events as cancelled, not retrying forever', async (t) => {
  const { d, rx, app, clock } = await setup(t);
  rx.on('/events', { status: 503 });
  const r = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  t.equal(r.body.state, 'retrying');
  t.equal((await d.api(`${d.mgmt}/apps/${app.id}`, { method: 'DELETE' })).status, 204);
  // the worker looks for events of deleted apps at a poll a second or more after its last look
  await clock.advance(2000);
  const rec = await until(
    () => d.parts.delivery.log.get(r.body.id),
    (x) => x?.state === 'cancelled',
  );
  t.match(rec, { state: 'cancelled', cancelReason: 'the app was deleted' });
  t.equal(rec?.nextAttemptAt, undefined);
  t.equal(await d.parts.store.get('pendingDeliveries', r.body.id), undefined);
});

t.test('a replay is an attempt marked as a replay; a retrying event keeps its schedule', async (t) => {
  const { d, rx, app } = await setup(t);
  rx.on('/events', { status: 503 });
  const r = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  const next = r.body.nextAttemptAt;
  t.ok(next, 'scheduled');
  let p = await post(d, `/deliveries/${r.body.id}/replay`);
  t.equal(p.status, 200);
  t.equal(p.body.state, 'retrying', 'still retrying, not failed');
  t.equal(p.body.nextAttemptAt, next, 'on its own schedule');
  t.same(
    p.body.attempts.map((a: { replay?: boolean }) => a.replay ?? false),
    [false, true],
  );
  rx.on('/events', { status: 200, json: {} });
  p = await post(d, `/deliveries/${r.body.id}/replay`);
  t.equal(p.body.state, 'delivered', 'a replay that delivered ends it');
  t.equal(p.body.nextAttemptAt, undefined);
  t.equal(await d.parts.store.get('pendingDeliveries', r.body.id), undefined);
  const s = await trigger(d, { appId: app.id, kind: 'slash-command', command: '/go' });
  const sp = await post(d, `/deliveries/${s.body.id}/replay`);
  t.same(
    sp.body.attempts.map((a: { replay?: boolean }) => a.replay ?? false),
    [false, true],
    'triggers too',
  );
});

t.test('the list is newest first by creation time, whatever was updated last', async (t) => {
  const { d, rx, app, clock } = await setup(t);
  rx.on('/events', { status: 503 });
  const first = await trigger(d, { appId: app.id, kind: 'event', event: 'NEW_MESSAGE' });
  await clock.advance(5);
  const second = await trigger(d, { appId: app.id, kind: 'slash-command', command: '/go' });
  await post(d, `/deliveries/${first.body.id}/replay`); // updates the older one last
  const list = (await (await d.api(`${d.mgmt}/deliveries`)).json()) as Array<{ id: string }>;
  t.same(
    list.map((x) => x.id),
    [second.body.id, first.body.id],
  );
  t.equal((await show(d, first.body.id)).attempts.length, 2);
});
