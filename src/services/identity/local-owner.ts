/**
 * The local owner: the workspace and owner the first start creates, so the CLI on this machine works
 * with no login (credentials.json, written by server/credentials.ts), and the renewal of that owner's
 * token on later starts.
 */
import { verifyJwt } from '../../crypto.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES, META, accountId, type BootstrapRecord } from '../../model/identity.js';
import type { Accounts } from './accounts.js';
import type { ManagementTokens } from './tokens.js';
import type { OwnerCredentials } from './types.js';
import type { Workspaces } from './workspaces.js';

/**
 * The login of the owner the first start creates (no password: the local CLI acts as them through credentials.json),
 * in a domain the official CLI accepts (a dotted one, its last label of 2 to 4 characters; `.test` never reaches
 * anyone). Stores made before kept `owner@localhost`, and that owner is still theirs: both are looked up.
 */
const OWNER_EMAIL = 'owner@appreg.test';
const OWNER_EMAILS = [OWNER_EMAIL, 'owner@localhost'];

export interface LocalOwnerDeps {
  store: Store;
  clock: Clock;
  /** The HS256 key tokens are signed with: a token of credentials.json is read to see whether it is still fresh. */
  jwtKey: Buffer;
  config: Pick<Config, 'managementTokenTtlSeconds'>;
  workspaces: Pick<Workspaces, 'newWorkspace'>;
  accounts: Pick<Accounts, 'addUser'>;
  tokens: Pick<ManagementTokens, 'newToken' | 'issueToken'>;
}

/** What credentials.json holds of the owner's, as far as it holds strings there. */
interface StoredCredentials {
  workspaceUserId?: string;
  authToken?: string;
}

export function createLocalOwner(deps: LocalOwnerDeps) {
  const { store, clock, jwtKey, config, workspaces, accounts, tokens } = deps;

  /**
   * On an empty store: a workspace, its owner and a management token, so the local CLI works with no
   * login. Once per store, even when several daemons start at once on an empty database: the
   * transaction reads the `meta/bootstrap` record as absent, so the daemon that loses runs again,
   * finds it, and gets null like a later start.
   */
  async function bootstrap(): Promise<OwnerCredentials | null> {
    if ((await store.count(IDENTITY_TABLES.workspaces)) > 0) return null;
    const ws = workspaces.newWorkspace('Local workspace');
    return store.transaction(async (tx) => {
      if (await tx.get(META, 'bootstrap')) return null;
      const { user } = await accounts.addUser(tx, { workspaceId: ws.id, email: OWNER_EMAIL, name: 'Owner' }, true);
      const tok = tokens.newToken(user);
      tx.put(IDENTITY_TABLES.workspaces, ws.id, ws);
      tx.apply(tok.change);
      tx.put(META, 'bootstrap', {
        id: 'bootstrap',
        workspaceId: ws.id,
        createdAt: ws.createdAt,
      } satisfies BootstrapRecord);
      return { workspaceId: ws.id, workspaceUserId: user.id, email: user.email, authToken: tok.issued.authToken };
    });
  }

  /**
   * On a later start: the local credentials.json must keep working with no login. When its token
   * has expired, was revoked, or has less than a quarter of its lifetime left, a new one is issued
   * for the same owner (undefined: nothing to renew, or its user no longer exists).
   */
  async function renewLocalCredentials(cur: StoredCredentials): Promise<OwnerCredentials | undefined> {
    const { workspaceUserId, authToken } = cur;
    if (workspaceUserId === undefined) return undefined;
    const user = await store.get(IDENTITY_TABLES.workspaceUsers, workspaceUserId);
    if (!user) return undefined;
    const nowS = Math.floor(clock.now() / 1000);
    const claims = authToken === undefined ? null : verifyJwt(authToken, jwtKey, nowS);
    const fresh =
      claims &&
      claims.sub === user.id &&
      claims.exp - nowS > config.managementTokenTtlSeconds / 4 &&
      (await store.get(IDENTITY_TABLES.mgmtTokens, claims.jti));
    if (fresh) return undefined;
    const tok = await tokens.issueToken(user);
    return { workspaceId: user.workspaceId, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  /**
   * A new token for the owner the first start created, for a data directory without credentials.json
   * on a store that has that owner: a second daemon of a PostgreSQL database, or a data dir whose
   * credentials.json was removed. Undefined when the store has no such owner.
   */
  async function ownerCredentials(): Promise<OwnerCredentials | undefined> {
    const mark = await store.get(META, 'bootstrap');
    if (!mark || !('workspaceId' in mark)) return undefined;
    const owners = await Promise.all(
      OWNER_EMAILS.map((e) => store.find(IDENTITY_TABLES.workspaceUsers, 'accountId', accountId(e))),
    );
    const user = owners.flat().find((u) => u.workspaceId === mark.workspaceId);
    if (!user) return undefined;
    const tok = await tokens.issueToken(user);
    return { workspaceId: user.workspaceId, workspaceUserId: user.id, email: user.email, authToken: tok.authToken };
  }

  return { bootstrap, renewLocalCredentials, ownerCredentials };
}
