/**
 * Every table of the store and the type of its records: the store's methods take a table's name
 * and give back its records' type (store/types.ts Store), so a misspelled table, a record of the
 * wrong shape or a find on a field that is not indexed is a compile error, not a cast. The types
 * are what the daemon writes; the store checks none of them at run time (it keeps any JSON object).
 */
import type {
  StoredAttempt,
  StoredHead,
  StoredState,
  HolderRecord,
  EventBody,
  PendingDelivery,
  QueuedEvent,
  RelayRecord,
  SentMark,
  TicketRecord,
} from './delivery.js';
import type { OutboxEventRecord } from './events.js';
import type {
  AccountRecord,
  AccountSignOutRecord,
  AppRecord,
  EndedSessionRecord,
  ExchangeRecord,
  FamilyRecord,
  LeadRecord,
  MetaRecord,
  MgmtTokenRecord,
  RefreshRecord,
  UsedTokenRecord,
  WorkspaceRecord,
  WorkspaceUserRecord,
} from './identity.js';
import type { RecordingEventRecord, RecordingRecord } from './recording.js';
import type { AuthorizationRecord, InstallationRecord, StoredCodeRecord, TokenRecord } from './oauth.js';
import type {
  BlobChunk,
  BlobHead,
  CallCodeRecord,
  ChannelNameRecord,
  ChannelRecord,
  CustomStatusRecord,
  FileRecord,
  FileTotalsRecord,
  GroupHandleRecord,
  HomeViewRecord,
  MessageRecord,
  PermanentCallRecord,
  PersonRecord,
  ScheduledRecord,
  UserGroupRecord,
} from './workspace.js';

export interface Tables {
  // identity and apps
  workspaces: WorkspaceRecord;
  accounts: AccountRecord;
  workspaceUsers: WorkspaceUserRecord;
  mgmtTokens: MgmtTokenRecord;
  apps: AppRecord;
  meta: MetaRecord;
  // the official CLI's login
  loginLeads: LeadRecord;
  loginExchanges: ExchangeRecord;
  refreshTokens: RefreshRecord;
  loginFamilies: FamilyRecord;
  // the browser console's sessions
  webTokensUsed: UsedTokenRecord;
  webSessionsEnded: EndedSessionRecord;
  webAccountSignOuts: AccountSignOutRecord;
  // OAuth
  oauthInstallations: InstallationRecord;
  oauthAuthorizations: AuthorizationRecord;
  oauthCodes: StoredCodeRecord;
  oauthTokens: TokenRecord;
  // the local workspace
  wsChannels: ChannelRecord;
  wsChannelNames: ChannelNameRecord;
  wsMessages: MessageRecord;
  wsScheduledMessages: ScheduledRecord;
  wsUserGroups: UserGroupRecord;
  wsGroupHandles: GroupHandleRecord;
  wsCustomStatuses: CustomStatusRecord;
  wsHomeViews: HomeViewRecord;
  wsFiles: FileRecord;
  wsFileTotals: FileTotalsRecord;
  wsPermanentCalls: PermanentCallRecord;
  wsCallCodes: CallCodeRecord;
  fileBlobs: BlobHead;
  fileBlobChunks: BlobChunk;
  consolePersonState: PersonRecord;
  // recordings of conversations (appreg test --record, the console's recorder)
  recordings: RecordingRecord;
  recordingEvents: RecordingEventRecord;
  // delivery
  eventsOutbox: OutboxEventRecord;
  pendingDeliveries: PendingDelivery;
  eventBodies: EventBody;
  deliveryLog: StoredHead;
  deliveryAttempts: StoredAttempt;
  deliveryStates: StoredState;
  socketTickets: TicketRecord;
  socketEventQueue: QueuedEvent;
  socketEventSent: SentMark;
  socketHolders: HolderRecord;
  socketRelay: RelayRecord;
}
