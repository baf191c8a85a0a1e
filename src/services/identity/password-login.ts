/** Signing in with an email and password: the account's memberships, then a management token for one of them. */
import { verifyPassword } from '../../crypto.js';
import { invalidCredentials, invalidRequest } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { IDENTITY_TABLES, accountId, type WorkspaceUserRecord } from '../../model/identity.js';
import type { Members } from './members.js';
import type { ManagementTokens } from './tokens.js';
import type { IssuedToken } from './types.js';
import type { Json } from '../../model/json.js';

// scrypt hash of a random string, used only to spend the same time on unknown emails.
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

export interface PasswordLoginDeps {
  store: Store;
  members: Pick<Members, 'membershipsOf'>;
  tokens: Pick<ManagementTokens, 'issueToken'>;
}

/**
 * POST /auth/login's body (management.schema.json#loginBody): any JSON in its fields, checked here so that
 * every wrong email or password is the same 401 invalid_credentials.
 */
export interface LoginBody {
  email?: Json;
  password?: Json;
  workspaceId?: Json;
}

export function createPasswordLogin(deps: PasswordLoginDeps) {
  const { store, members, tokens } = deps;

  /** Workspace users that belong to the account with this email and password (null when the password is wrong). */
  async function checkPassword(
    email: Json | undefined,
    password: Json | undefined,
  ): Promise<WorkspaceUserRecord[] | null> {
    if (typeof email !== 'string' || typeof password !== 'string') return null;
    const account = await store.get(IDENTITY_TABLES.accounts, accountId(email));
    // Verify against a dummy hash when the account is unknown so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, account?.passwordHash ?? DUMMY_HASH);
    if (!account || !ok) return null;
    return members.membershipsOf(account.id);
  }

  async function login(input: LoginBody): Promise<IssuedToken> {
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
    return tokens.issueToken(pick);
  }

  return { checkPassword, login };
}
