/** The shapes the identity parts hand each other and their callers: who a token speaks for, and a token issued. */

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

/** The local owner's management token, as credentials.json keeps it. */
export interface OwnerCredentials {
  workspaceId: string;
  workspaceUserId: string;
  email: string;
  authToken: string;
}
