/** Workspaces, users, passwords and management tokens. */
import { newId, PREFIX, hashPassword, verifyPassword, generatePassword, signJwt, verifyJwt } from '../crypto.js';
import { forbidden, invalidCredentials, invalidRequest, notFound, unauthenticated, userExists } from '../errors.js';
import type { Change, Transaction } from '../store/types.js';
import type { ServiceContext } from './context.js';
import type { OutboxWriter } from './outbox-writer.js';
import { EVERYONE } from './workspace/events.js';
import { userEventBody } from '../model/events.js';
import {
  IDENTITY_TABLES,
  META,
  accountId,
  type AccountRecord,
  type BootstrapRecord,
  type MgmtTokenRecord,
  type WorkspaceRecord,
  type WorkspaceUserRecord,
} from '../model/identity.js';

export interface Principal {
  workspaceId: string;
  workspaceUserId: string;
  jti: string;
  /** Set when the token is an act-as token: who asked for it (docs/security.md AS1). */
  actedBy?: string;
}
export interface IssuedToken {
  authToken: string;
  exp: number;
  workspaceId: string;
  workspaceUserId: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
/** How long a token of `actAs` lives: one command's worth (the CLI revokes it when done). */
const ACT_AS_TTL_SECONDS = 10 * 60;
/**
 * The login of the owner the first start creates (no password: the local CLI acts as them through credentials.json),
 * in a domain the official CLI accepts (a dotted one, its last label of 2 to 4 characters; `.test` never reaches
 * anyone). Stores made before kept `owner@localhost`, and that owner is still theirs: both are looked up.
 */
const OWNER_EMAIL = 'owner@appreg.test';
const OWNER_EMAILS = [OWNER_EMAIL, 'owner@localhost'];

export function createIdentityService(
  ctx: ServiceContext,
  deps: { outbox: Pick<OutboxWriter, 'workspaceEvent' | 'written'> },
) {
  const { store, clock } = ctx;
  const nowIso = () => new Date(clock.now()).toISOString();
  // Verified-signature cache: a pure function of the token (and the shared key), so it decides nothing on its
  // own; expiry, revocation and the user's existence are checked against the store on every call.
  const verified = new Map<string, { claims: Principal; exp: number }>();

  function newWorkspace(name: unknown): WorkspaceRecord {
    if (typeof name !== 'string' || !name.trim() || name.length > 80)
      throw invalidRequest('A workspace name of 1 to 80 characters is required.', [
        { pointer: '/name', message: 'must be 1 to 80 characters' },
      ]);
    return { id: newId(PREFIX.workspace), name: name.trim(), createdAt: nowIso() };
  }

  /** A new workspace whose first member is the caller, with the same login: one commit. */
  async function createWorkspaceFor(
    principal: Principal,
    name: unknown,
  ): Promise<WorkspaceRecord & { workspaceUserId: string }> {
    const me = await store.get(IDENTITY_TABLES.workspaceUsers, principal.workspaceUserId);
    if (!me) throw unauthenticated('The Authtoken has been revoked.');
    const ws = newWorkspace(name);
    const user: WorkspaceUserRecord = {
      id: newId(PREFIX.workspaceUser),
      workspaceId: ws.id,
      accountId: me.accountId,
      email: me.email,
      name: me.name,
      createdAt: nowIso(),
    };
    await store.transaction(async (tx) => {
      tx.put(IDENTITY_TABLES.workspaces, ws.id, ws);
      tx.put(IDENTITY_TABLES.workspaceUsers, user.id, user);
    });
    return { ...ws, workspaceUserId: user.id };
  }

  /**
   * The caller's membership of `workspaceId` (their own workspace user there), or 403. An act-as token
   * is a member of its own workspace only, whatever else the account belongs to.
   */
  async function membershipIn(principal: Principal, workspaceId: string): Promise<WorkspaceUserRecord> {
    const me = await store.get(IDENTITY_TABLES.workspaceUsers, principal.workspaceUserId);
    const m = !me
      ? undefined
      : me.workspaceId === workspaceId
        ? me
        : principal.actedBy
          ? undefined
          : (await membershipsOf(me.accountId)).find((u) => u.workspaceId === workspaceId);
    if (!m) throw forbidden('You are not a member of that workspace.');
    return m;
  }

  const userRecord = (id: string) => store.get(IDENTITY_TABLES.workspaceUsers, id);

  type NewUser = { workspaceId: string; email: string; name: string; password?: string };
  interface AddedUser {
    user: WorkspaceUserRecord;
    password?: string;
    existingAccount: boolean;
  }

  /**
   * Add a user in `tx`: the account is written too (new, or with its `rev` moved on), so two daemons
   * adding one email to one workspace at once cannot both succeed (both read the account); the loser
   * runs again and finds the member (user_exists). `workspaceKnown`: the caller writes the workspace
   * in the same transaction (bootstrap).
   */
  async function addUser(tx: Transaction, input: NewUser, workspaceKnown = false): Promise<AddedUser> {
    const details = [];
    if (typeof input.email !== 'string' || !EMAIL.test(input.email) || input.email.length > 254)
      details.push({ pointer: '/email', message: 'must be an email address' });
    if (typeof input.name !== 'string' || !input.name.trim() || input.name.length > 80)
      details.push({ pointer: '/name', message: 'must be 1 to 80 characters' });
    if (
      input.password !== undefined &&
      (typeof input.password !== 'string' || input.password.length < 8 || input.password.length > 200)
    )
      details.push({ pointer: '/password', message: 'must be 8 to 200 characters' });
    if (details.length) throw invalidRequest('The user is not valid.', details);
    const email = input.email.trim().toLowerCase();
    const accId = accountId(email);
    const [ws, found, members] = await Promise.all([
      workspaceKnown ? true : tx.get(IDENTITY_TABLES.workspaces, input.workspaceId),
      tx.get(IDENTITY_TABLES.accounts, accId),
      tx.find(IDENTITY_TABLES.workspaceUsers, 'accountId', accId),
    ]);
    if (!ws) throw notFound('Workspace');
    if (members.some((wu) => wu.workspaceId === input.workspaceId)) throw userExists();
    let generated: string | undefined;
    let account: AccountRecord;
    if (found) account = { ...found, rev: (found.rev ?? 0) + 1 };
    else {
      const password = input.password ?? (generated = generatePassword());
      account = { id: accId, email, passwordHash: await hashPassword(password), createdAt: nowIso() };
    }
    const user: WorkspaceUserRecord = {
      id: newId(PREFIX.workspaceUser),
      workspaceId: input.workspaceId,
      accountId: accId,
      email,
      name: input.name.trim(),
      createdAt: nowIso(),
    };
    tx.put(IDENTITY_TABLES.accounts, accId, account);
    tx.put(IDENTITY_TABLES.workspaceUsers, user.id, user);
    return { user, password: generated, existingAccount: !!found };
  }

  /**
   * A user joins a workspace: WORKSPACE_USER_JOINED, in the same commit, to the apps there with user:read.
   * existingAccount: the email already had a login (another workspace); its password is kept, a given one is not used.
   */
  async function createUser(
    input: NewUser,
  ): Promise<{ user: WorkspaceUserRecord; password?: string; existingAccount: boolean }> {
    const made = await store.transaction(async (tx) => {
      const added = await addUser(tx, input);
      tx.apply(
        deps.outbox.workspaceEvent(
          'WORKSPACE_USER_JOINED',
          added.user.workspaceId,
          EVERYONE,
          userEventBody(added.user),
        ),
      );
      return added;
    });
    deps.outbox.written();
    return made;
  }

  /**
   * A management token's record and its value, not yet committed (a caller may commit it with more); `ttlSeconds`
   * shortens its life. `acting`: an act-as token, for the caller who asked for it; it lives no longer than
   * their token.
   */
  function newToken(
    user: WorkspaceUserRecord,
    ttlSeconds = ctx.config.managementTokenTtlSeconds,
    acting?: Principal,
  ): { change: Change; issued: IssuedToken; jti: string } {
    const iat = Math.floor(clock.now() / 1000);
    const exp = iat + Math.min(ttlSeconds, ctx.config.managementTokenTtlSeconds);
    const rec: MgmtTokenRecord = {
      id: newId('mtk'),
      workspaceId: user.workspaceId,
      workspaceUserId: user.id,
      exp,
      createdAt: nowIso(),
      ...(acting ? { actedBy: acting.workspaceUserId, madeWith: acting.jti } : {}),
    };
    const authToken = signJwt({ sub: user.id, ws: user.workspaceId, jti: rec.id, iat, exp }, ctx.jwtKey);
    return {
      change: { table: IDENTITY_TABLES.mgmtTokens, id: rec.id, value: rec },
      issued: { authToken, exp, workspaceId: user.workspaceId, workspaceUserId: user.id },
      jti: rec.id,
    };
  }

  async function issueToken(user: WorkspaceUserRecord): Promise<IssuedToken> {
    const t = newToken(user);
    await store.transaction(async (tx) => tx.apply(t.change));
    return t.issued;
  }

  /** Workspace users that belong to the account with this email and password (null when the password is wrong). */
  async function checkPassword(email: unknown, password: unknown): Promise<WorkspaceUserRecord[] | null> {
    if (typeof email !== 'string' || typeof password !== 'string') return null;
    const account = await store.get(IDENTITY_TABLES.accounts, accountId(email));
    // Verify against a dummy hash when the account is unknown so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, account?.passwordHash ?? DUMMY_HASH);
    if (!account || !ok) return null;
    return membershipsOf(account.id);
  }

  /** The account's workspace users, oldest first (the order they were added in). */
  async function membershipsOf(accId: string): Promise<WorkspaceUserRecord[]> {
    const out = await store.find(IDENTITY_TABLES.workspaceUsers, 'accountId', accId);
    return out.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  async function login(input: { email?: unknown; password?: unknown; workspaceId?: unknown }): Promise<IssuedToken> {
    const users = await checkPassword(input.email, input.password);
    if (!users) throw invalidCredentials();
    const pick = input.workspaceId
      ? users.find((u) => u.workspaceId === input.workspaceId)
      : users.length === 1
        ? users[0]
        : undefined;
    if (!pick) {
      if (users.length === 0) throw invalidCredentials('This account is not a member of any workspace.');
      throw invalidRequest(
        input.workspaceId
          ? 'This account is not a member of that workspace.'
          : `This account is in ${users.length} workspaces; name one with workspaceId.`,
        [{ pointer: '/workspaceId', message: 'choose one of: ' + users.map((u) => u.workspaceId).join(', ') }],
      );
    }
    return issueToken(pick);
  }

  async function authenticate(token: string | undefined): Promise<Principal> {
    if (!token) throw unauthenticated();
    const nowS = Math.floor(clock.now() / 1000);
    let hit = verified.get(token);
    if (!hit) {
      const claims = verifyJwt(token, ctx.jwtKey, nowS);
      if (!claims) throw unauthenticated('The Authtoken is invalid or expired.');
      hit = { claims: { workspaceId: claims.ws, workspaceUserId: claims.sub, jti: claims.jti }, exp: claims.exp };
      if (verified.size > 10000) verified.clear();
      verified.set(token, hit);
    }
    if (hit.exp <= nowS) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has expired.');
    }
    const [tok, user] = await store.getMany(
      [
        { table: IDENTITY_TABLES.mgmtTokens, id: hit.claims.jti },
        { table: IDENTITY_TABLES.workspaceUsers, id: hit.claims.workspaceUserId },
      ],
      { shared: true },
    );
    if (!tok || !user) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has been revoked.');
    }
    if (!tok.actedBy) return hit.claims;
    // an act-as token ends with the token that asked for it (AS2)
    const parent = tok.madeWith === undefined ? undefined : await store.get(IDENTITY_TABLES.mgmtTokens, tok.madeWith);
    if (!parent || parent.exp <= nowS) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has been revoked: the token that asked for it no longer works.');
    }
    return { ...hit.claims, actedBy: tok.actedBy };
  }

  /** The workspace's owner: its first human member (who created it). */
  async function ownerOf(workspaceId: string): Promise<string | undefined> {
    let first: WorkspaceUserRecord | undefined;
    for (const wu of await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', workspaceId)) {
      if (!wu.isBot && (!first || wu.createdAt < first.createdAt)) first = wu;
    }
    return first?.id;
  }

  /**
   * POST …/act-as {user}: the workspace's owner gets a short-lived management token of another
   * (human) user of the workspace, by id or email (appreg say --as). Nothing of that user's own
   * logins is touched: no lead is made or voided, no login code is issued.
   */
  async function actAs(principal: Principal, who: unknown): Promise<IssuedToken> {
    if (typeof who !== 'string' || !who || who.length > 254)
      throw invalidRequest('user must be the id or email of a user of your workspace.', [
        { pointer: '/user', message: 'is required' },
      ]);
    const members = await store.find(IDENTITY_TABLES.workspaceUsers, 'workspaceId', principal.workspaceId);
    const target =
      members.find((u) => u.id === who) ?? members.find((u) => !u.isBot && u.email === who.trim().toLowerCase());
    if (!target) throw notFound('Workspace user');
    if (target.isBot)
      throw invalidRequest("An app's bot user acts through its app's bot token, not as a person.", [
        { pointer: '/user', message: 'is a bot user' },
      ]);
    if (target.id !== principal.workspaceUserId && (await ownerOf(principal.workspaceId)) !== principal.workspaceUserId)
      throw forbidden('Only the owner of the workspace can act as another user.');
    const t = newToken(target, ACT_AS_TTL_SECONDS, principal);
    await store.transaction(async (tx) => tx.apply(t.change));
    return t.issued;
  }

  async function revoke(principal: Principal): Promise<void> {
    await store.transaction(async (tx) => tx.delete(IDENTITY_TABLES.mgmtTokens, principal.jti));
  }

  async function workspaceInfo(id: string) {
    const ws = await store.get(IDENTITY_TABLES.workspaces, id);
    if (!ws) throw notFound('Workspace');
    return { id: ws.id, name: ws.name };
  }

  async function userInfo(workspaceId: string, id: string) {
    const wu = await store.get(IDENTITY_TABLES.workspaceUsers, id);
    if (!wu || wu.workspaceId !== workspaceId) throw notFound('Workspace user');
    return { id: wu.id, name: wu.name, email: wu.email };
  }

  /**
   * On an empty store: a workspace, its owner and a management token, so the local CLI works with no
   * login. Once per store, even when several daemons start at once on an empty database: the
   * transaction reads the `meta/bootstrap` record as absent, so the daemon that loses runs again,
   * finds it, and gets null like a later start.
   */
  async function bootstrap(): Promise<{
    workspaceId: string;
    workspaceUserId: string;
    email: string;
    authToken: string;
  } | null> {
    if ((await store.count(IDENTITY_TABLES.workspaces)) > 0) return null;
    const ws = newWorkspace('Local workspace');
    const made = await store.transaction(async (tx) => {
      if (await tx.get(META, 'bootstrap')) return null;
      const { user } = await addUser(tx, { workspaceId: ws.id, email: OWNER_EMAIL, name: 'Owner' }, true);
      const tok = newToken(user);
      tx.put(IDENTITY_TABLES.workspaces, ws.id, ws);
      tx.apply(tok.change);
      tx.put(META, 'bootstrap', {
        id: 'bootstrap',
        workspaceId: ws.id,
        createdAt: ws.createdAt,
      } satisfies BootstrapRecord);
      return { workspaceId: ws.id, workspaceUserId: user.id, email: user.email, authToken: tok.issued.authToken };
    });
    return made;
  }

  /**
   * On a later start: the local credentials.json must keep working with no login. When its token
   * has expired, was revoked, or has less than a quarter of its lifetime left, a new one is issued
   * for the same owner (undefined: nothing to renew, or its user no longer exists).
   */
  async function renewLocalCredentials(
    cur: unknown,
  ): Promise<{ workspaceId: string; workspaceUserId: string; email: string; authToken: string } | undefined> {
    if (!cur || typeof cur !== 'object') return undefined;
    const { workspaceUserId, authToken } = cur as { workspaceUserId?: unknown; authToken?: unknown };
    if (typeof workspaceUserId !== 'string') return undefined;
    const user = await store.get(IDENTITY_TABLES.workspaceUsers, workspaceUserId);
    if (!user) return undefined;
    const nowS = Math.floor(clock.now() / 1000);
    const claims = typeof authToken === 'string' ? verifyJwt(authToken, ctx.jwtKey, nowS) : null;
    const fresh =
      claims &&
      claims.sub === user.id &&
      claims.exp - nowS > ctx.config.managementTokenTtlSeconds / 4 &&
      (await store.get(IDENTITY_TABLES.mgmtTokens, claims.jti));
    if (fresh) return undefined;
    const tok = await issueToken(user);
    return { workspaceId: user.workspaceId, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  /**
   * A new token for the owner the first start created, for a data directory without credentials.json
   * on a store that has that owner: a second daemon of a PostgreSQL database, or a data dir whose
   * credentials.json was removed. Undefined when the store has no such owner.
   */
  async function ownerCredentials(): Promise<
    { workspaceId: string; workspaceUserId: string; email: string; authToken: string } | undefined
  > {
    const mark = await store.get(META, 'bootstrap');
    if (!mark || !('workspaceId' in mark)) return undefined;
    const owners = await Promise.all(
      OWNER_EMAILS.map((e) => store.find(IDENTITY_TABLES.workspaceUsers, 'accountId', accountId(e))),
    );
    const user = owners.flat().find((u) => u.workspaceId === mark.workspaceId);
    if (!user) return undefined;
    const tok = await issueToken(user);
    return { workspaceId: user.workspaceId, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  /** The caller's workspaces: every one of the account's, or an act-as token's own alone. */
  async function listWorkspaces(principal: Principal) {
    const wu = await store.get(IDENTITY_TABLES.workspaceUsers, principal.workspaceUserId);
    if (!wu) return [];
    return Promise.all(
      (principal.actedBy ? [wu] : await membershipsOf(wu.accountId)).map(async (m) => ({
        ...(await workspaceInfo(m.workspaceId)),
        workspaceUserId: m.id,
      })),
    );
  }

  return {
    createWorkspaceFor,
    membershipIn,
    userRecord,
    createUser,
    newToken,
    checkPassword,
    membershipsOf,
    login,
    issueToken,
    authenticate,
    revoke,
    workspaceInfo,
    userInfo,
    bootstrap,
    renewLocalCredentials,
    ownerCredentials,
    listWorkspaces,
    ownerOf,
    actAs,
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;

// scrypt hash of a random string, used only to spend the same time on unknown emails.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
