/** Shapes of the records kept in the store, one table each. */
import type { Manifest } from '../validation/manifest.js';

export const T = {
  workspaces: 'workspaces',
  accounts: 'accounts',
  workspaceUsers: 'workspaceUsers',
  mgmtTokens: 'mgmtTokens',
  apps: 'apps',
} as const;

export interface WorkspaceRecord { id: string; name: string; createdAt: string }
/**
 * A login identity (email + password); it is a member of workspaces through WorkspaceUserRecord.
 * `rev` changes with every membership added, so two daemons adding the same login to one workspace conflict.
 */
export interface AccountRecord { id: string; email: string; passwordHash: string; createdAt: string; rev?: number }
export interface WorkspaceUserRecord { id: string; workspaceId: string; accountId: string; email: string; name: string; isBot?: boolean; createdAt: string }
export interface MgmtTokenRecord { id: string; workspaceId: string; workspaceUserId: string; exp: number; createdAt: string }
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
export interface AppSecrets { clientSecret: string; appKey: string; signingSecret: string }

/** The one normal form of an email address: what logins are looked up and rate-limited by. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
export const accountId = (email: string) => `acc_${normalizeEmail(email)}`;

/** Singleton records (the key check, the first bootstrap), one table. */
export const META = 'meta';

