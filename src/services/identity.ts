/**
 * Identity: workspaces, users, passwords and management tokens. The work is done by the parts under
 * `identity/`, each built by the composition root with what it uses; this is the one face the routes
 * and the other services see, a composition of the parts with no state of its own.
 */
import type { Accounts } from './identity/accounts.js';
import type { createActAs } from './identity/act-as.js';
import type { createLocalOwner } from './identity/local-owner.js';
import type { Members } from './identity/members.js';
import type { createPasswordLogin } from './identity/password-login.js';
import type { ManagementTokens } from './identity/tokens.js';
import type { Workspaces } from './identity/workspaces.js';

export type { Principal } from './identity/types.js';
export { createAccounts } from './identity/accounts.js';
export { createActAs } from './identity/act-as.js';
export { createLocalOwner } from './identity/local-owner.js';
export { createMembers } from './identity/members.js';
export { createPasswordLogin } from './identity/password-login.js';
export { createManagementTokens } from './identity/tokens.js';
export { createWorkspaces } from './identity/workspaces.js';

/** The parts, built in src/server/compose.ts. */
export interface IdentityParts {
  members: Members;
  workspaces: Workspaces;
  accounts: Accounts;
  tokens: ManagementTokens;
  actAs: ReturnType<typeof createActAs>;
  passwords: ReturnType<typeof createPasswordLogin>;
  localOwner: ReturnType<typeof createLocalOwner>;
}

export function createIdentityService(parts: IdentityParts) {
  const { members, workspaces, accounts, tokens, actAs, passwords, localOwner } = parts;
  return {
    // who belongs where
    userRecord: members.userRecord,
    membershipsOf: members.membershipsOf,
    membershipIn: members.membershipIn,
    ownerOf: members.ownerOf,
    userInfo: members.userInfo,
    // workspaces
    createWorkspaceFor: workspaces.createWorkspaceFor,
    workspaceInfo: workspaces.workspaceInfo,
    listWorkspaces: workspaces.listWorkspaces,
    // accounts
    createUser: accounts.createUser,
    // management tokens
    newToken: tokens.newToken,
    issueToken: tokens.issueToken,
    authenticate: tokens.authenticate,
    revoke: tokens.revoke,
    actAs: actAs.actAs,
    // passwords
    checkPassword: passwords.checkPassword,
    login: passwords.login,
    // the local owner
    bootstrap: localOwner.bootstrap,
    renewLocalCredentials: localOwner.renewLocalCredentials,
    ownerCredentials: localOwner.ownerCredentials,
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
