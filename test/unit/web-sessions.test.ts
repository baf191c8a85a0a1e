/**
 * Browser sessions: signed, expiring, and ended by sign-out (one, or all of an account) until their expiry, then
 * forgotten.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createMemoryStore } from '../../src/store/memory-store.js';
import {
  ACCOUNT_SIGN_OUTS,
  createWebSessions,
  ENDED_SESSIONS,
  SESSION_TTL_MS,
} from '../../src/services/oauth/web-sessions.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

t.test('a signed-out session is refused until its expiry, then its record is swept', async (t) => {
  const clock = createTestClock(1_000_000);
  const store = createMemoryStore();
  const key = randomBytes(32);
  const sessions = createWebSessions({ clock, key, store });
  const { token } = sessions.login(undefined, 'acc_1');
  const other = sessions.login(undefined, 'acc_1').token;
  const s = await sessions.get(token);
  t.equal(s?.accountId, 'acc_1');
  t.equal(s?.expiresAt, clock.now() + SESSION_TTL_MS);
  t.equal(
    await sessions.get(token.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))),
    undefined,
    'a changed token is not a session',
  );
  t.equal(
    await createWebSessions({ clock, key: randomBytes(32), store }).get(token),
    undefined,
    'nor one signed under another key',
  );

  await sessions.end(must(s));
  t.equal(await sessions.get(token), undefined, 'signed out');
  t.ok(await sessions.get(other), "the account's other session goes on");
  t.equal(await sessions.sweep(), 0, 'kept while the session could still be used');
  t.equal(await store.count(ENDED_SESSIONS), 1);
  clock.set(clock.now() + SESSION_TTL_MS);
  t.equal(await sessions.get(token), undefined, 'expired');
  t.equal(await sessions.sweep(), 1, 'then forgotten');
  t.equal(await store.count(ENDED_SESSIONS), 0);
});

t.test(
  "signing an account out everywhere refuses every session it had, not later ones nor another account's",
  async (t) => {
    const clock = createTestClock(1_000_000);
    const store = createMemoryStore();
    const sessions = createWebSessions({ clock, key: randomBytes(32), store });
    const first = sessions.login(undefined, 'acc_1').token;
    clock.set(clock.now() + 1000);
    const second = sessions.login(undefined, 'acc_1').token;
    const someoneElse = sessions.login(undefined, 'acc_2').token;
    clock.set(clock.now() + 1000);
    await sessions.endAll('acc_1');
    t.equal(await sessions.get(first), undefined, 'an older session of the account: refused');
    t.equal(await sessions.get(second), undefined, 'the one that asked: refused too');
    t.equal((await sessions.get(someoneElse))?.accountId, 'acc_2', "another account's session goes on");
    clock.set(clock.now() + 1);
    const after = sessions.login(undefined, 'acc_1').token;
    t.equal((await sessions.get(after))?.accountId, 'acc_1', 'signing in again afterwards works');
    t.equal(await sessions.sweep(), 0, 'kept while a refused session could still be used');
    t.equal(await store.count(ACCOUNT_SIGN_OUTS), 1);
    clock.set(clock.now() + SESSION_TTL_MS);
    t.equal(await sessions.sweep(), 1, 'then forgotten: every session it refused has expired by then');
    t.equal(await store.count(ACCOUNT_SIGN_OUTS), 0);
  },
);
