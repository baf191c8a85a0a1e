/**
 * Accounts (a login: email and password) and the workspace users they are: adding a user to a
 * workspace makes the account when the email has none, and tells the workspace's apps.
 */
import { newId, PREFIX, hashPassword, generatePassword } from '../../crypto.js';
import { invalidRequest, notFound, userExists } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Store, Transaction } from '../../store/types.js';
import type { OutboxWriter } from '../outbox-writer.js';
import { EVERYONE } from '../workspace/events.js';
import { userEventBody } from '../../model/events.js';
import { IDENTITY_TABLES, accountId, type AccountRecord, type WorkspaceUserRecord } from '../../model/identity.js';

const EMAIL = /^[^\s@]+@[^\s@]+$/;

export interface NewUser {
  workspaceId: string;
  email: string;
  name: string;
  password?: string;
}

export interface AddedUser {
  user: WorkspaceUserRecord;
  /** The password made for a new account when none was given (shown once). */
  password?: string;
  /** The email already had a login (another workspace): its password is kept, a given one is not used. */
  existingAccount: boolean;
}

export interface AccountsDeps {
  store: Store;
  clock: Clock;
  outbox: Pick<OutboxWriter, 'workspaceEvent' | 'written'>;
}

export function createAccounts(deps: AccountsDeps) {
  const { store, clock, outbox } = deps;
  const nowIso = () => new Date(clock.now()).toISOString();

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

  /** A user joins a workspace: WORKSPACE_USER_JOINED, in the same commit, to the apps there with user:read. */
  async function createUser(input: NewUser): Promise<AddedUser> {
    const made = await store.transaction(async (tx) => {
      const added = await addUser(tx, input);
      tx.apply(
        outbox.workspaceEvent('WORKSPACE_USER_JOINED', added.user.workspaceId, EVERYONE, userEventBody(added.user)),
      );
      return added;
    });
    outbox.written();
    return made;
  }

  return { addUser, createUser };
}

export type Accounts = ReturnType<typeof createAccounts>;
