/**
 * Who a workspace event goes to when the outbox is drained (services/workspace/events.ts): the
 * rules of docs/protocol.md §9.6, decided on the audience recorded at the change and the grants
 * read at the drain, with the same few reads whatever the number of apps.
 */
import t from 'tap';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/types.js';
import { engineOf } from '../helpers/test-tables.js';
import { createEventRecipients } from '../../src/services/workspace/events.js';
import type { WorkspaceOutboxEvent } from '../../src/model/events.js';
import { authorizationId, installationId } from '../../src/model/oauth.js';
import { OAUTH_TABLES } from '../../src/model/oauth.js';
import { must } from '../../src/must.js';

const WS = 'ws_1';
const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();

/**
 * App `id` installed in WS (its bot holding `botScopes`), authorized by `users` with `userScopes`, subscribed to
 * `events`.
 */
function appChanges(
  id: string,
  n: number,
  o: { events?: string[]; botScopes?: string[]; userScopes?: string[]; users?: string[]; botToken?: boolean } = {},
) {
  const inst = {
    id: installationId(id, WS),
    appId: id,
    workspaceId: WS,
    installedBy: 'wu_a',
    botScopes: o.botScopes ?? [],
    ...(o.botToken === false ? {} : { botTokenId: `tok_${id}` }),
    createdAt: at(n),
    updatedAt: at(n),
  };
  const app = {
    id,
    ownerId: 'wu_a',
    manifest: { name: id, eventSubscriptions: { url: 'http://127.0.0.1:9/e', events: o.events ?? ['NEW_MESSAGE'] } },
  };
  return [
    { table: 'apps', id, value: app },
    { table: OAUTH_TABLES.installations, id: inst.id, value: inst },
    ...(o.users ?? ['wu_a']).map((u, i) => ({
      table: OAUTH_TABLES.authorizations,
      id: authorizationId(id, u),
      value: {
        id: authorizationId(id, u),
        appId: id,
        workspaceId: WS,
        workspaceUserId: u,
        userScopes: o.userScopes ?? [],
        createdAt: at(n + i),
        updatedAt: at(n + i),
      },
    })),
  ];
}

const event = (
  eventType: WorkspaceOutboxEvent['eventType'],
  audience: WorkspaceOutboxEvent['audience'],
): WorkspaceOutboxEvent => ({
  id: `evt_${eventType}`,
  workspaceId: WS,
  eventType,
  audience,
  body: {},
  createdAt: at(0),
});

/** The store's reads, counted by kind and table. */
function counted(store: Store) {
  const reads: string[] = [];
  const wrapped: Store = {
    ...store,
    get: (table, id) => (reads.push(`get ${table}`), store.get(table, id)),
    getMany: (keys, opts) => (
      reads.push(`getMany ${[...new Set(keys.map((k) => k.table))].join(',')}`),
      store.getMany(keys, opts)
    ),
    find: (table, field, value) => (reads.push(`find ${table}.${field}`), store.find(table, field, value)),
    all: (table) => (reads.push(`all ${table}`), store.all(table)),
  };
  return { store: wrapped, reads };
}

t.test(
  'an event goes to the apps subscribed to it, for the users who could see it and for whom the app holds its scope',
  async (t) => {
    const store = createMemoryStore();
    await engineOf(store).commit([
      ...appChanges('app_bot', 1, { botScopes: ['messages:read'], users: ['wu_a', 'wu_b'] }), // its bot holds the scope: every user who could see it
      ...appChanges('app_user', 2, { userScopes: ['messages:read'], users: ['wu_b'] }), // only through its user's own grant
      ...appChanges('app_noscope', 3, { users: ['wu_a'] }), // subscribed, but neither bot nor user holds messages:read
      ...appChanges('app_other', 4, { events: ['CHANNEL_CREATED'], botScopes: ['messages:read', 'channels:read'] }), // not subscribed to NEW_MESSAGE
      ...appChanges('app_revoked', 5, { botScopes: ['messages:read'], botToken: false, users: ['wu_a'] }), // its bot token was revoked: its scopes do not count
    ]);
    const { recipientsOf } = createEventRecipients({ store });
    const names = (rs: Awaited<ReturnType<typeof recipientsOf>>[number]) =>
      rs.map((r) => `${r.app.id}:${r.workspaceUserIds.join('+')}`);
    const [everyone, members, created] = await recipientsOf([
      event('NEW_MESSAGE', { everyone: true }),
      event('NEW_MESSAGE', { members: ['wu_b', 'wu_x'] }),
      event('CHANNEL_CREATED', { members: ['wu_a'] }),
    ]);
    t.same(
      names(must(everyone)),
      ['app_bot:wu_a+wu_b', 'app_user:wu_b'],
      'a public channel: every authorized user, in the order the apps were installed',
    );
    t.same(
      names(must(members)),
      ['app_bot:wu_b', 'app_user:wu_b'],
      'a private channel: only its members at the change (wu_a was not one)',
    );
    t.same(names(must(created)), ['app_other:wu_a']);
    // an app uninstalled before the drain (installation and authorizations gone) gets nothing
    await store.commit([
      { table: OAUTH_TABLES.installations, id: installationId('app_user', WS), value: null },
      { table: OAUTH_TABLES.authorizations, id: authorizationId('app_user', 'wu_b'), value: null },
    ]);
    t.same(
      names(must((await recipientsOf([event('NEW_MESSAGE', { everyone: true })]))[0])),
      ['app_bot:wu_a+wu_b'],
      'the grants are read at the drain',
    );
  },
);

t.test('the fan-out reads the same few things whatever the number of apps or events: no read per app', async (t) => {
  const base = createMemoryStore();
  for (let i = 0; i < 100; i++)
    await engineOf(base).commit(appChanges(`app_${i}`, i, { botScopes: ['messages:read'], users: ['wu_a', 'wu_b'] }));
  const { store, reads } = counted(base);
  const { recipientsOf } = createEventRecipients({ store });
  const out = await recipientsOf(
    Array.from({ length: 20 }, (_, i) => ({ ...event('NEW_MESSAGE', { everyone: true }), id: `evt_${i}` })),
  );
  t.equal(out.length, 20);
  t.ok(
    out.every((rs) => rs.length === 100),
    'each of 20 events to each of 100 apps',
  );
  t.same(
    reads.sort(),
    ['find oauthAuthorizations.workspaceId', 'find oauthInstallations.workspaceId', 'getMany apps'],
    'two finds and one read of the apps, for all of them',
  );
});
