/** Workspaces, users, passwords and management tokens. */
import { newId, PREFIX, hashPassword, verifyPassword, generatePassword, signJwt, verifyJwt } from '../crypto.js';
import { forbidden, invalidCredentials, invalidRequest, notFound, unauthenticated, userExists } from '../errors.js';
import type { ServiceContext } from './context.js';
import { T, accountId, type AccountRecord, type MgmtTokenRecord, type WorkspaceRecord, type WorkspaceUserRecord } from './records.js';

export interface Principal { workspaceId: string; workspaceUserId: string; jti: string }
export interface IssuedToken { authToken: string; exp: number; workspaceId: string; workspaceUserId: string }

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export function createIdentityService(ctx: ServiceContext) {
  const { store, clock } = ctx;
  const nowIso = () => new Date(clock.now()).toISOString();
  // Verified-token cache: avoids re-verifying the HMAC on every call; revocation is still checked per call.
  const verified = new Map<string, { claims: Principal; exp: number }>();

  function newWorkspace(name: unknown): WorkspaceRecord {
    if (typeof name !== 'string' || !name.trim() || name.length > 80) throw invalidRequest('A workspace name of 1 to 80 characters is required.', [{ pointer: '/name', message: 'must be 1 to 80 characters' }]);
    return { id: newId(PREFIX.workspace), name: name.trim(), createdAt: nowIso() };
  }

  async function createWorkspace(name: string): Promise<WorkspaceRecord> {
    const ws = newWorkspace(name);
    await store.commit([{ table: T.workspaces, id: ws.id, value: ws }]);
    return ws;
  }

  /** A new workspace whose first member is the caller, with the same login: one commit. */
  async function createWorkspaceFor(principal: Principal, name: unknown): Promise<WorkspaceRecord & { workspaceUserId: string }> {
    const me = store.get<WorkspaceUserRecord>(T.workspaceUsers, principal.workspaceUserId);
    if (!me) throw unauthenticated('The Authtoken has been revoked.');
    const ws = newWorkspace(name);
    const user: WorkspaceUserRecord = { id: newId(PREFIX.workspaceUser), workspaceId: ws.id, accountId: me.accountId, email: me.email, name: me.name, createdAt: nowIso() };
    await store.commit([
      { table: T.workspaces, id: ws.id, value: ws },
      { table: T.workspaceUsers, id: user.id, value: user },
    ]);
    return { ...ws, workspaceUserId: user.id };
  }

  /** The caller's membership of `workspaceId` (their own workspace user there), or 403. */
  function membershipIn(principal: Principal, workspaceId: string): WorkspaceUserRecord {
    const me = store.get<WorkspaceUserRecord>(T.workspaceUsers, principal.workspaceUserId);
    const m = !me ? undefined : me.workspaceId === workspaceId ? me : membershipsOf(me.accountId).find((u) => u.workspaceId === workspaceId);
    if (!m) throw forbidden('You are not a member of that workspace.');
    return m;
  }

  const userRecord = (id: string) => store.get<WorkspaceUserRecord>(T.workspaceUsers, id);

  /** existingAccount: the email already had a login (another workspace); its password is kept, a given one is not used. */
  async function createUser(input: { workspaceId: string; email: string; name: string; password?: string }): Promise<{ user: WorkspaceUserRecord; password?: string; existingAccount: boolean }> {
    const details = [];
    if (typeof input.email !== 'string' || !EMAIL.test(input.email) || input.email.length > 254) details.push({ pointer: '/email', message: 'must be an email address' });
    if (typeof input.name !== 'string' || !input.name.trim() || input.name.length > 80) details.push({ pointer: '/name', message: 'must be 1 to 80 characters' });
    if (input.password !== undefined && (typeof input.password !== 'string' || input.password.length < 8 || input.password.length > 200)) details.push({ pointer: '/password', message: 'must be 8 to 200 characters' });
    if (details.length) throw invalidRequest('The user is not valid.', details);
    if (!store.get(T.workspaces, input.workspaceId)) throw notFound('Workspace');
    const email = input.email.trim().toLowerCase();
    const accId = accountId(email);
    let account = store.get<AccountRecord>(T.accounts, accId);
    for (const wu of store.values<WorkspaceUserRecord>(T.workspaceUsers)) {
      if (wu.workspaceId === input.workspaceId && wu.accountId === accId) throw userExists();
    }
    let generated: string | undefined;
    const changes = [];
    const existingAccount = !!account;
    if (!account) {
      const password = input.password ?? (generated = generatePassword());
      account = { id: accId, email, passwordHash: await hashPassword(password), createdAt: nowIso() };
      changes.push({ table: T.accounts, id: account.id, value: account });
    }
    const user: WorkspaceUserRecord = { id: newId(PREFIX.workspaceUser), workspaceId: input.workspaceId, accountId: accId, email, name: input.name.trim(), createdAt: nowIso() };
    changes.push({ table: T.workspaceUsers, id: user.id, value: user });
    await store.commit(changes);
    return { user, password: generated, existingAccount };
  }

  async function issueToken(user: WorkspaceUserRecord): Promise<IssuedToken> {
    const iat = Math.floor(clock.now() / 1000);
    const exp = iat + ctx.config.managementTokenTtlSeconds;
    const rec: MgmtTokenRecord = { id: newId('mtk'), workspaceId: user.workspaceId, workspaceUserId: user.id, exp, createdAt: nowIso() };
    await store.commit([{ table: T.mgmtTokens, id: rec.id, value: rec }]);
    const authToken = signJwt({ sub: user.id, ws: user.workspaceId, jti: rec.id, iat, exp }, ctx.jwtKey);
    return { authToken, exp, workspaceId: user.workspaceId, workspaceUserId: user.id };
  }

  /** Workspace users that belong to the account with this email and password (null when the password is wrong). */
  async function checkPassword(email: unknown, password: unknown): Promise<WorkspaceUserRecord[] | null> {
    if (typeof email !== 'string' || typeof password !== 'string') return null;
    const account = store.get<AccountRecord>(T.accounts, accountId(email));
    // Verify against a dummy hash when the account is unknown so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, account?.passwordHash ?? DUMMY_HASH);
    if (!account || !ok) return null;
    return membershipsOf(account.id);
  }

  function membershipsOf(accId: string): WorkspaceUserRecord[] {
    const out: WorkspaceUserRecord[] = [];
    for (const wu of store.values<WorkspaceUserRecord>(T.workspaceUsers)) if (wu.accountId === accId) out.push(wu);
    return out;
  }

  async function login(input: { email?: unknown; password?: unknown; workspaceId?: unknown }): Promise<IssuedToken> {
    const users = await checkPassword(input.email, input.password);
    if (!users) throw invalidCredentials();
    const pick = input.workspaceId ? users.find((u) => u.workspaceId === input.workspaceId) : users.length === 1 ? users[0] : undefined;
    if (!pick) {
      if (users.length === 0) throw invalidCredentials('This account is not a member of any workspace.');
      throw invalidRequest(input.workspaceId ? 'This account is not a member of that workspace.' : `This account is in ${users.length} workspaces; name one with workspaceId.`, [{ pointer: '/workspaceId', message: 'choose one of: ' + users.map((u) => u.workspaceId).join(', ') }]);
    }
    return issueToken(pick);
  }

  function authenticate(token: string | undefined): Principal {
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
    if (!store.get(T.mgmtTokens, hit.claims.jti) || !store.get(T.workspaceUsers, hit.claims.workspaceUserId)) {
      verified.delete(token);
      throw unauthenticated('The Authtoken has been revoked.');
    }
    return hit.claims;
  }

  async function revoke(principal: Principal): Promise<void> {
    await store.commit([{ table: T.mgmtTokens, id: principal.jti, value: null }]);
  }

  function workspaceInfo(id: string) {
    const ws = store.get<WorkspaceRecord>(T.workspaces, id);
    if (!ws) throw notFound('Workspace');
    return { id: ws.id, name: ws.name };
  }

  function userInfo(workspaceId: string, id: string) {
    const wu = store.get<WorkspaceUserRecord>(T.workspaceUsers, id);
    if (!wu || wu.workspaceId !== workspaceId) throw notFound('Workspace user');
    return { id: wu.id, name: wu.name, email: wu.email };
  }

  /** On an empty store: a workspace, its owner and a management token, so the local CLI works with no login. */
  async function bootstrap(): Promise<{ workspaceId: string; workspaceUserId: string; email: string; authToken: string } | null> {
    if (store.count(T.workspaces) > 0) return null;
    const ws = await createWorkspace('Local workspace');
    const { user } = await createUser({ workspaceId: ws.id, email: 'owner@localhost', name: 'Owner' });
    const tok = await issueToken(user);
    return { workspaceId: ws.id, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  /**
   * On a later start: the local credentials.json must keep working with no login. When its token
   * has expired, was revoked, or has less than a quarter of its lifetime left, a new one is issued
   * for the same owner (undefined: nothing to renew, or its user no longer exists).
   */
  async function renewLocalCredentials(cur: unknown): Promise<{ workspaceId: string; workspaceUserId: string; email: string; authToken: string } | undefined> {
    if (!cur || typeof cur !== 'object') return undefined;
    const { workspaceUserId, authToken } = cur as { workspaceUserId?: unknown; authToken?: unknown };
    if (typeof workspaceUserId !== 'string') return undefined;
    const user = store.get<WorkspaceUserRecord>(T.workspaceUsers, workspaceUserId);
    if (!user) return undefined;
    const nowS = Math.floor(clock.now() / 1000);
    const claims = typeof authToken === 'string' ? verifyJwt(authToken, ctx.jwtKey, nowS) : null;
    const fresh = claims && claims.sub === user.id && store.get(T.mgmtTokens, claims.jti) && claims.exp - nowS > ctx.config.managementTokenTtlSeconds / 4;
    if (fresh) return undefined;
    const tok = await issueToken(user);
    return { workspaceId: user.workspaceId, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  function listWorkspaces(principal: Principal) {
    const wu = store.get<WorkspaceUserRecord>(T.workspaceUsers, principal.workspaceUserId);
    return wu ? membershipsOf(wu.accountId).map((m) => ({ ...workspaceInfo(m.workspaceId), workspaceUserId: m.id })) : [];
  }

  return { createWorkspaceFor, membershipIn, userRecord, createUser, checkPassword, membershipsOf, login, issueToken, authenticate, revoke, workspaceInfo, userInfo, bootstrap, renewLocalCredentials, listWorkspaces };
}

export type IdentityService = ReturnType<typeof createIdentityService>;

// scrypt hash of a random string, used only to spend the same time on unknown emails.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
