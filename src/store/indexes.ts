import type { Tables } from '../model/tables.js';
import { fieldOf } from '../unknown-values.js';

/** What an index list may hold: for some tables of `TM`, fields of their records. */
export type IndexedFieldsOf<TM> = { readonly [K in keyof TM]?: readonly (keyof TM[K] & string)[] };

/**
 * The fields `Store.find` can look records up by, per table: only fields a lookup uses, since
 * every write of a record keeps an entry in each index of its table. The embedded store keeps an
 * index in memory for each; PostgreSQL has a partial expression index for each, made at start
 * (under the migration lock) from this list. A find on a field not listed here is a programming error
 * (TypeError), and a compile error: Store.find takes only the fields listed for its table, and each
 * field listed must be a field of the table's records (model/tables.ts). Index values are strings:
 * the field of the record, as a string, when it is a string or a number; a record without the field
 * is not indexed under it.
 */
const INDEXED = {
  // identity and apps
  workspaceUsers: ['workspaceId', 'accountId'],
  apps: ['ownerId'],
  // lead login (the official CLI's sign-in)
  loginLeads: ['email'],
  // OAuth
  oauthInstallations: ['workspaceId'],
  oauthAuthorizations: ['appId', 'workspaceUserId', 'workspaceId'],
  oauthTokens: ['appId'],
  oauthCodes: ['sweepMinute'],
  // the local workspace
  wsChannels: ['workspaceId'],
  wsMessages: ['channelId', 'threadRootId'],
  wsUserGroups: ['workspaceId'],
  // the recordings that are on
  recordings: ['on'],
  // delivery
  pendingDeliveries: ['appId'],
  socketEventQueue: ['appId'],
  deliveryLog: ['appId', 'ownerId'],
  deliveryAttempts: ['deliveryId'],
  socketHolders: ['appId'],
} as const satisfies IndexedFieldsOf<Tables>;

/** INDEXED as the stores and migrations read it at run time, by any table name. */
export const INDEXED_FIELDS: Readonly<Record<string, readonly string[]>> = INDEXED;

/** The tables `find` can be used on. */
export type IndexedTable = keyof typeof INDEXED;
/** The fields `find` can look records of `K` up by. */
export type IndexedField<K> = K extends IndexedTable ? (typeof INDEXED)[K][number] : never;

/**
 * Fields an earlier appreg indexed and no lookup uses any more: every write of such a record kept
 * an index entry nobody read (the exchange's new token one of two, on PostgreSQL one more index
 * insert and its WAL). PostgreSQL drops their indexes at start (migrations.ts).
 */
export const RETIRED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  workspaceUsers: ['email'],
  accounts: ['email'],
  mgmtTokens: ['workspaceUserId'],
  apps: ['workspaceId'],
  refreshTokens: ['familyId'],
  oauthInstallations: ['appId'],
  oauthTokens: ['workspaceUserId'],
  wsFiles: ['workspaceId'],
  wsScheduledMessages: ['author'],
};

/**
 * The orders `Store.findPage` reads an indexed field's records in, per table and field: a channel's
 * messages newest first, say. PostgreSQL has a composite index for each (the field, the order
 * value, the id), so a page is a range of that index, read from where the previous page ended,
 * instead of a sort of every record under the key; it serves the field's finds too (the field
 * has no index of its own there). Each field listed must be in INDEXED_FIELDS. The embedded store keeps a sorted list
 * per key for any order it is asked (ordered.ts); a findPage in an order not listed here still works
 * on PostgreSQL, by sorting.
 */
export const PAGE_ORDERS: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  wsMessages: { channelId: ['seq'] },
};

/** The index key of `record` under `field`, or undefined when it has none. */
export function indexKey(record: object, field: string): string | undefined {
  const v = fieldOf(record, field);
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/** Throws TypeError unless `field` is an indexed field of `table`. */
export function assertIndexed(table: string, field: string): void {
  if (!INDEXED_FIELDS[table]?.includes(field))
    throw new TypeError(`store.find: ${table}.${field} is not an indexed field`);
}
