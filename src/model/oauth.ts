/** Tables and record shapes of the authorization flow (docs/protocol.md §3). */
import { PREFIX, sha256 } from '../crypto.js';

export const OAUTH_TABLES = {
  installations: 'oauthInstallations',
  authorizations: 'oauthAuthorizations',
  codes: 'oauthCodes',
  tokens: 'oauthTokens',
} as const;

/**
 * Installations and authorizations have ids derived from (app, workspace) and (app, user): each is one get, and
 * creating one twice is the same write.
 */
export const installationId = (appId: string, workspaceId: string) =>
  `${PREFIX.installation}_${sha256(`${appId}|${workspaceId}`).slice(0, 27)}`;
export const authorizationId = (appId: string, workspaceUserId: string) =>
  `${PREFIX.authorization}_${sha256(`${appId}|${workspaceUserId}`).slice(0, 27)}`;

/** One per (app, workspace): created by the first authorization; the bot lives here for `bot: true` apps. */
export interface InstallationRecord {
  id: string; // ins_… (deterministic per app+workspace)
  appId: string;
  workspaceId: string;
  /** Workspace user id of whoever authorized first (or last reinstalled). */
  installedBy: string;
  /** The bot user (a workspace user with isBot) when the app has a bot. */
  botUserId?: string;
  botScopes: string[];
  /** AES-256-GCM sealed current bot token, or absent when none is valid (e.g. revoked after a code reuse). */
  sealedBotToken?: string;
  /** sha256 digest of the current bot token (its id in the tokens table). */
  botTokenId?: string;
  createdAt: string;
  updatedAt: string;
}

/** One per (app, workspace user): the scopes the user granted. */
export interface AuthorizationRecord {
  id: string; // auz_… (deterministic per app+user)
  appId: string;
  workspaceId: string;
  workspaceUserId: string;
  userScopes: string[];
  createdAt: string;
  updatedAt: string;
}

/** Keyed by sha256(code): the code itself is never stored. */
export interface CodeRecord {
  id: string;
  appId: string;
  workspaceId: string;
  workspaceUserId: string;
  userScopes: string[];
  botScopes: string[];
  redirectUrl: string;
  reinstall: boolean;
  /** epoch ms */
  expiresAt: number;
  createdAt: string;
  /** The sweep's minute for this record: sweepMinuteOf(expiresAt). */
  sweepMinute?: string;
  /** The ids of the installation and authorization the exchange reads and updates, so it reads them with the code. */
  installationId?: string;
  authorizationId?: string;
}

/**
 * The minute (ms / 60,000, as a string: an indexed field) after which the sweep may forget a code record,
 * so that a sweep reads only the codes of the minutes that ended instead of every code kept.
 */
export const sweepMinuteOf = (ms: number): string => String(Math.floor(ms / 60_000));

/**
 * What replaces a code once it is exchanged: kept until the code's expiry so a reuse is
 * recognised and what it issued can be revoked; small, since every exchange writes one.
 */
export interface ConsumedCodeRecord {
  id: string;
  appId: string;
  workspaceId: string;
  expiresAt: number;
  consumedAt: string;
  /**
   * When the sweep may forget it (ms): a reuse is recognised, and revokes, until then. Older records lack it (expiresAt
   * applies).
   */
  forgetAt?: number;
  /** Ids (digests) of the tokens handed out in the response to this code. */
  issuedTokenIds: string[];
  /** sweepMinuteOf(forgetAt). Older records lack it (the first sweep of a daemon reads every code). */
  sweepMinute?: string;
}

export type StoredCodeRecord = CodeRecord | ConsumedCodeRecord;

/** Keyed by sha256(token): user access tokens are stored only as this digest. */
export interface TokenRecord {
  id: string;
  kind: 'user' | 'bot';
  appId: string;
  workspaceId: string;
  /** The user, or the bot user for a bot token. */
  workspaceUserId: string;
  scopes: string[];
  createdAt: string;
}
