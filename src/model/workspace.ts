/**
 * The local workspace's tables (docs/protocol.md §9): channels and messages, one record each,
 * in the same store as everything else. Channel membership lives in the channel record; the
 * workspace-wide channels (`general`, `random`) have every workspace user as a member, bots
 * of installed apps included, without listing them.
 */
import { sha256 } from '../crypto.js';
import type { Json, JsonObject } from './json.js';

export const WORKSPACE_TABLES = {
  channels: 'wsChannels',
  messages: 'wsMessages',
  scheduled: 'wsScheduledMessages',
  groups: 'wsUserGroups',
  statuses: 'wsCustomStatuses',
  homeViews: 'wsHomeViews',
  files: 'wsFiles',
  calls: 'wsPermanentCalls',
  callCodes: 'wsCallCodes',
} as const;

/** How a scheduled message recurs (services/workspace/recurrence.ts computes when). */
export const RECURRENCE_TYPES = [
  'DAILY',
  'BUSINESSDAYS',
  'WEEKLY',
  'BIWEEKLY',
  'MONTHLY_NTH_WEEKDAY',
  'MONTHLY_LAST_WEEKDAY',
  'QUARTERLY_NTH_WEEKDAY',
  'QUARTERLY_LAST_WEEKDAY',
  'ANNUALLY',
] as const;
export type RecurrenceType = (typeof RECURRENCE_TYPES)[number];

/** A recurrence as kept: 0 in an end field means no such end. */
export interface Recurrence {
  recurrenceType: RecurrenceType;
  /** Post at most this many times in all (the first included). */
  endAfterOccurrences: number;
  /** No occurrence after this time (epoch ms). */
  endDate: number;
}

export type ChannelType = 'PUBLIC' | 'PRIVATE' | 'DIRECT' | 'SELF';
export const CHANNEL_TYPES: readonly ChannelType[] = ['PUBLIC', 'PRIVATE', 'DIRECT', 'SELF'];
export const isChannelType = (s: string): s is ChannelType => CHANNEL_TYPES.some((t) => t === s);

export interface ChannelRecord {
  id: string;
  workspaceId: string;
  channelType: ChannelType;
  /** Absent for DIRECT and SELF channels. */
  name?: string;
  description?: string;
  /** Every workspace user is a member (general, random); `members` is then empty. */
  everyone?: boolean;
  /** general */
  isMain?: boolean;
  /** the channels a workspace starts with */
  isInitial?: boolean;
  members: string[];
  isArchived?: boolean;
  createdBy?: string;
  createdAt: string;
}

interface ReactionRecord {
  user: string;
  code: string;
}

export interface MessageRecord {
  id: string;
  workspaceId: string;
  channelId: string;
  author: string;
  text: string;
  blocks: JsonObject[];
  attachments: JsonObject[];
  /** epoch ms */
  timestampMilli: number;
  /**
   * Posting order, with the id on ties (see message-index.ts): at least the posting time in ms,
   * and above every earlier seq of its channel and of the daemon that posted it.
   */
  seq: number;
  threadRootId?: string;
  /** A thread reply also shown in the channel. */
  alsoSentToChannel?: boolean;
  edited?: boolean;
  reactions: ReactionRecord[];
  /** Ephemeral: only these workspace users see it, and it makes no event. */
  ephemeralTo?: string[];
  /** The app whose token posted it, if any. */
  appId?: string;
  /** Ids of files (FileRecord) it carries. */
  files?: string[];
}

/** An uploaded file (its bytes are the blob of the same id under <dataDir>/files/). */
export interface FileRecord {
  id: string;
  workspaceId: string;
  /** The workspace user who uploaded it (the bot user for a bot token). */
  owner: string;
  appId?: string;
  /** The name the uploader gave; shown, never used on disk. */
  name: string;
  mimeType: string;
  size: number;
  uploadedAtMilli: number;
}

/** A message to be posted by the daemon at `sendAt`, as its author. */
export interface ScheduledRecord {
  id: string;
  workspaceId: string;
  channelId: string;
  author: string;
  appId?: string;
  text: string;
  blocks: JsonObject[];
  attachments: JsonObject[];
  /** Ids of files (FileRecord) it carries, posted with it each time. */
  files?: string[];
  /** epoch ms: the next time it is posted */
  sendAt: number;
  /** Posted again and again (recurrence.ts); absent for a message posted once. */
  recurrence?: Recurrence;
  /** A recurring one: its first occurrence (epoch ms), from which the others are counted. */
  anchorAt?: number;
  /** A recurring one: the occurrences gone by (posted, or missed while the daemon was stopped). */
  occurrences?: number;
  createdAt: string;
  /** Set by store.claim: the daemon posting it, until when (epoch ms). */
  leaseOwner?: string;
  leaseUntil?: number;
}

export interface UserGroupRecord {
  id: string;
  workspaceId: string;
  createdBy: string;
  name: string;
  handle: string;
  description: string;
  disabled: boolean;
  workspaceUserIds: string[];
  createdAt: string;
}

/** Keyed by the workspace user's id. */
export interface CustomStatusRecord {
  id: string;
  code: string;
  status: string;
  expiration: string;
  /** epoch ms; 0 = never */
  expiresAt: number;
  pausedNotifications: boolean;
}

/** An app's home view for one user, keyed by `${appId}|${workspaceUserId}`. */
export interface HomeViewRecord {
  id: string;
  appId: string;
  workspaceId: string;
  workspaceUserId: string;
  blocks: JsonObject[];
  title?: Json;
  state?: Json;
  updatedAt: string;
}

/** general and random have ids derived from the workspace, so creating them twice is the same write. */
export const initialChannelId = (workspaceId: string, name: string) =>
  `ch_${sha256(`${workspaceId}|initial|${name}`).slice(0, 22)}`;

/** A direct (or self) channel is found by its members: its id is derived from them. */
export const directChannelId = (workspaceId: string, members: readonly string[]) =>
  `dm_${sha256(`${workspaceId}|${[...members].sort().join(',')}`).slice(0, 22)}`;

/** A user's permanent call, keyed by the workspace user's id. */
export interface PermanentCallRecord {
  id: string;
  callId: string;
  code: string;
  workspaceId: string;
  createdAt: string;
}
/** The code → the user whose call it is. */
export interface CallCodeRecord {
  id: string;
  workspaceUserId: string;
}

/**
 * A channel name taken in a workspace (keyed by channels.ts nameKey): claiming it is what makes names unique across
 * daemons.
 */
export interface ChannelNameRecord {
  id: string;
  channelId: string;
}
/** A user group's handle taken in a workspace (keyed by profile.ts handleKey), likewise. */
export interface GroupHandleRecord {
  id: string;
  groupId: string;
}

/** The bytes of every uploaded file, one record (id 'all'): the files total, counted in the commit of each upload. */
export interface FileTotalsRecord {
  id: string;
  bytes: number;
}

// ---- an uploaded file's bytes on PostgreSQL (files/store-blobs.ts): a head and its chunks ----

export interface BlobHead {
  id: string;
  chunks: number;
  size: number;
}
export interface BlobChunk {
  id: string;
  data: string;
}

// ---- what a person sees of the apps' answers in the console (server/person-state.ts) ----

export interface Note {
  id: string;
  channelId: string;
  /** In a thread (a command typed in its composer). */
  rootId?: string;
  /** Who the note is from (the app's name). */
  from: string;
  text: string;
  atMilli: number;
}
export interface OpenView {
  appId: string;
  channelId: string;
  /** The page to come back to once the stack is empty. */
  returnTo: string;
  view: Record<string, unknown>;
}
/**
 * What the person chose in one element: `source` is the message or view holding it, `key` the element as it was (see
 * elementKey).
 */
export interface Choice {
  source: string;
  onAction: string;
  key: string;
  value?: string;
  values?: string[];
}
export interface PersonRecord {
  id: string;
  notes: Note[];
  views: OpenView[];
  picks?: Choice[];
  /** A home view's state, by the view's id. */
  homes?: Record<string, unknown>;
  updatedAt: number;
}
