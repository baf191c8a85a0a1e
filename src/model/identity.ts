/**
 * Who is who and what they made: workspaces, accounts and their workspace users, management
 * tokens, apps; the official CLI's login and the browser console's sessions; the meta table's
 * singletons. Table names and record shapes (model/tables.ts maps the one to the other).
 */
import type { Manifest } from '../validation/manifest.js';

export const IDENTITY_TABLES = {
  workspaces: 'workspaces',
  accounts: 'accounts',
  workspaceUsers: 'workspaceUsers',
  mgmtTokens: 'mgmtTokens',
  apps: 'apps',
} as const;

export interface WorkspaceRecord {
  id: string;
  name: string;
  createdAt: string;
}
/**
 * A login identity (email + password); it is a member of workspaces through WorkspaceUserRecord.
 * `rev` changes with every membership added, so two daemons adding the same login to one workspace conflict.
 */
export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string;
  createdAt: string;
  rev?: number;
}
export interface WorkspaceUserRecord {
  id: string;
  workspaceId: string;
  accountId: string;
  email: string;
  name: string;
  isBot?: boolean;
  /** A bot user: the app it is the bot of (one per installation), and the manifest's botTitle. */
  appId?: string;
  title?: string;
  createdAt: string;
}
export interface MgmtTokenRecord {
  id: string;
  workspaceId: string;
  workspaceUserId: string;
  exp: number;
  createdAt: string;
  /**
   * An act-as token (POST …/act-as): the workspace user who asked for it. Such a token reaches only the
   * routes docs/security.md's AS1 lists, in its own workspace.
   */
  actedBy?: string;
  /** An act-as token: the id of the token that asked for it, without which it stops working. */
  madeWith?: string;
}
export interface AppRecord {
  id: string;
  workspaceId: string;
  ownerId: string;
  manifest: Manifest;
  published: boolean;
  /** AES-256-GCM sealed JSON of {clientSecret, appKey, signingSecret}. */
  sealedSecrets: string;
  createdAt: string;
  updatedAt: string;
}
export interface AppSecrets {
  clientSecret: string;
  appKey: string;
  signingSecret: string;
}

/** The one normal form of an email address: what logins are looked up and rate-limited by. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
export const accountId = (email: string) => `acc_${normalizeEmail(email)}`;

/** Singleton records (the key check, the first bootstrap), one table. */
export const META = 'meta';

// ---- the official CLI's login (services/lead-login.ts) ----

/** A pending login; `id` is the digest of the lead id the client holds. */
export interface LeadRecord {
  id: string;
  email: string;
  /** false: the email is no user's; the lead behaves the same but no code can ever match. */
  known: boolean;
  sealedCode?: string;
  expiresAt: number;
  attempts: number;
  activatedAt?: string;
  /** Set when a workspace owner other than the user was shown the code: the login reaches only these workspaces. */
  limitTo?: string[];
  createdAt: string;
}
export interface ExchangeRecord {
  id: string;
  workspaceId: string;
  workspaceUserId: string;
  expiresAt: number;
}
export interface RefreshRecord {
  id: string;
  familyId: string;
  workspaceId: string;
  workspaceUserId: string;
  exp: number;
  spentAt?: string;
  createdAt: string;
}
/** Everything issued from one exchange: revoked together when a spent refresh token comes back. */
export interface FamilyRecord {
  id: string;
  workspaceId: string;
  workspaceUserId: string;
  accessTokenIds: string[];
  refreshTokenIds: string[];
  createdAt: string;
}

// ---- the browser console's sessions (services/oauth/web-sessions.ts): what a signed token cannot say itself ----

/** A one-time token (a sign-in link, a form's CSRF token) that was used, until it expires; keyed by its digest. */
export interface UsedTokenRecord {
  id: string;
  expiresAt: number;
}
/** A session signed out before it expired, until then; keyed by the session's id. */
export interface EndedSessionRecord {
  id: string;
  expiresAt: number;
}
/** An account signed out everywhere: its sessions issued before `before` (ms) are over. */
export interface AccountSignOutRecord {
  id: string;
  before: number;
  expiresAt: number;
}

// ---- the meta table's singletons ----

export interface KeyCheckRecord {
  id: 'keyCheck';
  /** base64url HMAC-SHA256 of LABEL under deriveKey(master, 'key-check'). */
  value: string;
  createdAt: string;
  /** How the key was known to be right when the value was first written. */
  basis: KeyCheckBasis;
}
export type KeyCheckBasis = 'new' | 'sealed-value' | 'credentials-token' | 'trust-on-first-use';

/** Written once, by the daemon that set up an empty store (identity.ts bootstrap): the workspace it made. */
export interface BootstrapRecord {
  id: 'bootstrap';
  workspaceId: string;
  createdAt: string;
}

export type MetaRecord = KeyCheckRecord | BootstrapRecord;
