/**
 * The local workspace (docs/protocol.md §9): users, channels, messages, reactions and search,
 * built over the one store, with the events their changes make. This is what the platform API
 * routes and the CLI's person-side calls (`postAsUser`) use.
 */
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import { newId } from '../../crypto.js';
import { notFound } from '../../errors.js';
import type { Store } from '../../store/types.js';
import { createCalls } from './calls.js';
import { createChannels } from './channels.js';
import type { WorkspaceEvents } from './events.js';
import { createFiles, type FileBlobs } from './files.js';
import { createMessageIndex } from './message-index.js';
import { createMessages } from './messages.js';
import { createMentions } from './mentions.js';
import { createReactions } from './reactions.js';
import { createMessageSearch } from './search.js';
import { createScheduledMessages } from './scheduled.js';
import { createProfiles } from './profile.js';
import { createWorkspaceUsers, type Actor } from './users.js';

export interface WorkspaceDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'workspaceMessagesPerChannel' | 'filesMaxBytes' | 'filesTotalMaxBytes'>;
  /** Where the changes' events are written, in their commits (the events outbox). */
  events: WorkspaceEvents;
  /** Where uploaded files' bytes are kept, and the URL each is served at. */
  blobs: FileBlobs;
  fileUrl: (fileId: string) => string;
  /** The daemon's page for a permanent call's code. */
  callUrl: (code: string) => string;
  /** This daemon among those sharing the store (the owner of its leases on scheduled messages). */
  instanceId?: string;
  /**
   * The trim cadence of channels (message-index.ts): whether counting a channel is cheap enough to do at every post.
   */
  countEveryPost: boolean;
}

export function createWorkspace(deps: WorkspaceDeps) {
  const { store, clock, logger, config, events } = deps;
  const users = createWorkspaceUsers(store, clock);
  const index = createMessageIndex(store, clock, { countEveryPost: deps.countEveryPost });
  const files = createFiles({
    store,
    clock,
    logger,
    blobs: deps.blobs,
    fileUrl: deps.fileUrl,
    limits: { maxBytes: config.filesMaxBytes, totalMaxBytes: config.filesTotalMaxBytes },
  });
  const channels = createChannels({ store, transaction: index.transaction, clock, users, events });
  const mentions = createMentions({ store, membersOf: channels.membersOf });
  const messages = createMessages({
    mentions: mentions.of,
    clock,
    perChannel: config.workspaceMessagesPerChannel,
    index,
    channels,
    users,
    events,
    files,
  });
  const reactions = createReactions({ index, messages, events });
  const search = createMessageSearch({ messages, channels, users });
  const scheduled = createScheduledMessages({
    store,
    clock,
    logger,
    channels,
    messages,
    files,
    instanceId: deps.instanceId ?? newId('daemon', 12),
  });
  const profiles = createProfiles({ store, clock, users, events });
  const calls = createCalls({ store, clock, users, callUrl: deps.callUrl });

  /** A person of the workspace, as an actor of the calls below. */
  async function person(workspaceUserId: string): Promise<Actor> {
    const u = await users.byId(workspaceUserId);
    if (!u) throw notFound('Workspace user');
    return { workspaceId: u.workspaceId, userId: u.id };
  }

  return {
    users,
    channels,
    messages,
    reactions,
    search,
    scheduled,
    profiles,
    files,
    calls,
    /**
     * Every message added, changed or removed, by any daemon (its id, channel and thread root); returns the
     * unsubscribe.
     */
    onMessageChange: index.onChange,
    /** A workspace user (a person) as the actor of channel and message calls. */
    person,
    /** A person posts in a channel (by id, name or #name), optionally in a thread: NEW_MESSAGE as for an app's post. */
    postAsUser: messages.postAsUser,
    /** A person archives a channel: CHANNEL_ARCHIVED. */
    archiveChannel: async (workspaceUserId: string, channelId: string) =>
      channels.archive(await person(workspaceUserId), channelId),
    /** A person deletes a channel they created, with its messages: CHANNEL_DELETED. */
    async deleteChannel(workspaceUserId: string, channelId: string): Promise<void> {
      const a = await person(workspaceUserId);
      await channels.remove(a, channelId);
    },
  };
}
