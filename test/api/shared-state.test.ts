/**
 * What a browser or a client needs between two requests lives in the store, not in one daemon:
 * two HTTP servers over one store (two daemons behind a balancer) share the rate-limit windows,
 * and a person's console state (notes, open views) written through one is read through the other.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import t from 'tap';

type Tap = { teardown(fn: () => unknown): void };
import { createMemoryStore } from '../../src/store/memory-store.js';
import { errorHandler, leaseSize, rateLimit } from '../../src/server/middleware.js';
import { createPersonState } from '../../src/server/person-state.js';
import { createLogger } from '../../src/logger.js';
import type { Store } from '../../src/store/types.js';
import type { Clock } from '../../src/clock.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const silent = createLogger({ level: 'error', stream: { write: () => true } as unknown as NodeJS.WritableStream });

/** One "daemon": an express app limited to `perMinute` requests per caller, on `store`. */
async function limitedServer(t: Tap, store: Store, clock: Clock, perMinute: number): Promise<string> {
  const app = express();
  app.get(
    '/x',
    rateLimit({ perMinute, clock, store, key: () => 'test|caller' }),
    (_req, res) => void res.json({ ok: true }),
  );
  app.use(errorHandler(silent));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('two daemons on one store share a limiter window; Retry-After is the rest of it', async (t) => {
  const store = createMemoryStore();
  // the window starts at the first request, 15 s past a whole minute
  const clock = createTestClock(1_000_000 * 60_000 + 15_000);
  const a = await limitedServer(t, store, clock, 4);
  const b = await limitedServer(t, store, clock, 4);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await fetch(`${i % 2 ? b : a}/x`)).status);
  t.same(statuses, [200, 200, 200, 200, 429, 429], 'the fifth request is refused, whichever daemon gets it');
  clock.set(clock.now() + 45_000); // the turn of a whole minute is not the end of the window
  const over = await fetch(`${a}/x`);
  t.equal(over.status, 429);
  t.equal(over.headers.get('retry-after'), '15', 'seconds to the end of the window');
  t.equal(((await over.json()) as { code?: string }).code, 'rate_limited');
  clock.set(clock.now() + 15_000); // the next window
  t.equal((await fetch(`${b}/x`)).status, 200, 'a new window starts afresh');
});

t.test('a limit of 0 asks nothing of the store', async (t) => {
  const store = createMemoryStore();
  let hits = 0;
  const counting = { ...store, hit: (...args: Parameters<Store['hit']>) => (hits++, store.hit(...args)) } as Store;
  const url = await limitedServer(t, counting, createTestClock(), 0);
  for (let i = 0; i < 3; i++) t.equal((await fetch(`${url}/x`)).status, 200);
  t.equal(hits, 0);
});

t.test(
  'a limit of 200 or more is leased: the store is asked once per lease, and never more than the limit get through',
  async (t) => {
    const store = createMemoryStore();
    let hits = 0;
    const counting = { ...store, hit: (...args: Parameters<Store['hit']>) => (hits++, store.hit(...args)) } as Store;
    const clock = createTestClock(5_000_000);
    const limiter = (perMinute: number, caller: string) =>
      rateLimit({ perMinute, clock, store: counting, key: () => `test|${caller}` });
    /** 200 when the limiter lets the request through, else the error's status */
    const pass = (h: ReturnType<typeof rateLimit>) =>
      new Promise<number>((resolve) =>
        h({} as never, {} as never, (err?: unknown) =>
          resolve(err ? Number((err as { status?: number }).status) : 200),
        ),
      );
    t.equal(leaseSize(6000), 50, 'the token endpoint: 50 at once');
    t.equal(leaseSize(199), 1, 'below 200 every request is counted as it comes');
    // two daemons (two limiters, one store), taking turns: 250 a minute, leases of 2
    const [a, b] = [limiter(250, 'one'), limiter(250, 'one')];
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++) statuses.push(await pass(i % 2 ? b : a));
    t.equal(statuses.filter((s) => s === 200).length, 250, 'exactly the limit got through');
    // the last lease of one daemon may still let one through after the other's first refusal
    t.same(statuses.slice(252), Array(48).fill(429), 'and everything after it was refused');
    t.equal(hits, 125 + 50, 'one store call per lease of two, and one per refusal');
    // a lease one daemon holds unused is counted: the other may let through that many fewer
    const [c, d] = [limiter(1000, 'two'), limiter(1000, 'two')];
    await pass(c); // counts 10, lets 1 through, holds 9
    let through = 0;
    for (let i = 0; i < 1100; i++) if ((await pass(d)) === 200) through++;
    t.equal(through, 990, 'the other daemon: the limit less the lease counted there');
  },
);

t.test("a person's notes and open views are read back through another daemon's console", async (t) => {
  const store = createMemoryStore();
  const one = createPersonState(store, createTestClock());
  const two = createPersonState(store, createTestClock());
  const rec = {
    appName: 'Poll',
    appId: 'app_1',
    state: 'delivered',
    ephemeralMessage: 'Only you can see this',
    response: { view: { type: 'MODAL', title: 'Vote' } },
  };
  const next = await one.follow('wu_1', rec, 'Poll', { channelId: 'ch_1', returnTo: '/console/channels/ch_1' });
  t.equal(next, '/console/channels/ch_1');
  const notes = await two.notes('wu_1', 'ch_1');
  t.equal(notes.length, 1);
  t.equal(must(notes[0]).text, 'Only you can see this');
  const top = await two.top('wu_1');
  t.equal(top?.view.title, 'Vote', 'the modal is open on the other daemon too');
  t.match(String(top?.view.id), /^view-[0-9a-f]{12}$/);
  await two.keepState('wu_1', String(must(top).view.id), {
    values: { b: { a: { type: 'plain_text_input', value: 'typed' } } },
  });
  t.same(
    (await one.top('wu_1'))?.view.state,
    { values: { b: { a: { type: 'plain_text_input', value: 'typed' } } } },
    'what was typed stays',
  );
  t.equal(await one.close('wu_1'), undefined, 'closing the only view leaves none');
  t.equal(await two.top('wu_1'), undefined);
  t.same(await two.notes('wu_2', 'ch_1'), [], "another person's state is their own");
});

t.test('two pages of one person changing the state at once both count (no lost update)', async (t) => {
  const store = createMemoryStore();
  const a = createPersonState(store, createTestClock());
  const b = createPersonState(store, createTestClock());
  const note = (text: string) => ({ appName: 'A', appId: 'app_1', state: 'delivered', ephemeralMessage: text });
  await Promise.all([
    a.follow('wu_1', note('one'), 'A', { channelId: 'ch', returnTo: '/' }),
    b.follow('wu_1', note('two'), 'A', { channelId: 'ch', returnTo: '/' }),
  ]);
  t.same((await a.notes('wu_1', 'ch')).map((n) => n.text).sort(), ['one', 'two']);
});

t.test('an answer that shows nothing writes nothing', async (t) => {
  const store = createMemoryStore();
  const s = createPersonState(store, createTestClock());
  await s.follow('wu_1', { appName: 'A', appId: 'app_1', state: 'delivered', response: {} }, 'A', {
    channelId: 'ch',
    returnTo: '/back',
  });
  t.equal(await store.count('consolePersonState'), 0);
});
