/**
 * Every object the platform API answers, checked against the official SDK's types (its
 * `V1` namespace, pumble-sdk/src/api/v1/types.ts), which apps on the SDK are typed against.
 * The types are described below in a small notation of this test's own, written from reading
 * the SDK's source: each field with its type, `?` when the SDK marks it optional. A real answer
 * passes when every required field is there, every field present has the type described, and
 * it has no field the SDK's type does not name (a misspelt field would be one).
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { installPlatformApp, PLATFORM_SCOPES, sdkUploadFile } from '../helpers/platform-client.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

/** A field's type: a primitive, one of some strings, an array, an object of fields, any object, or one of several. */
type Shape =
  | 'string'
  | 'number'
  | 'boolean'
  | 'object'
  | { oneOf: string[] }
  | { arrayOf: Shape }
  | { fields: Fields }
  | { anyOf: Shape[] };
/** A type's fields: the name, `?` when optional. */
type Fields = Record<string, Shape>;

const S = 'string';
const N = 'number';
const B = 'boolean';
const OBJ = 'object';
const arr = (s: Shape): Shape => ({ arrayOf: s });
const obj = (f: Fields): Shape => ({ fields: f });

// --- the SDK's V1 types, as read ---
const Avatar = obj({ fullPath: S, scaledPath: S });
const CustomStatus = obj({ code: S, status: S, expiration: S, 'expiresAt?': N, 'showUntil?': B });
const WorkspaceUser = obj({
  id: S,
  email: S,
  name: S,
  workspaceId: S,
  role: S,
  status: S,
  avatar: Avatar,
  timeZoneId: S,
  automaticallyTimeZone: B,
  title: S,
  phone: S,
  'customStatus?': CustomStatus,
  'invitedBy?': S,
  'activeUntil?': N,
  'isInvitationAccepted?': B,
  'isPumbleBot?': B,
  'broadcastWarningShownTs?': S,
  'isAddonBot?': B,
  timeFormat: N,
});
const UserGroup = obj({
  id: S,
  workspaceId: S,
  createdBy: S,
  disabled: B,
  name: S,
  handle: S,
  description: S,
  workspaceUserIds: arr(S),
});
const Workspace = obj({
  id: S,
  name: S,
  'avatar?': Avatar,
  customStatusDefinitions: arr(obj({ code: S, status: S, expiration: S })),
  uniqueIdentifier: S,
  'previousUniqueIdentifiers?': arr(S),
});
const OAuthUserProfile = obj({ workspaceId: S, workspaceName: S, workspaceUserId: S, workspaceUserName: S });
const MessageFile = obj({
  id: S,
  owner: S,
  'name?': S,
  mimeType: S,
  path: S,
  'thumbnails?': arr(obj({ path: S, 'width?': N, 'height?': N })),
  'duration?': N,
  'audioRecording?': B,
  'videoRecording?': B,
  'waveform?': arr(N),
  'uploadedAtMilli?': N,
  'publicPath?': S,
});
const ThreadRootInfo = obj({
  'repliesCount?': N,
  'repliers?': arr(S),
  'lastReplyTimestamp?': S,
  'lastReplyTimestampMilli?': N,
  'lastMarkTimestamp?': S,
  'lastMarkTimestampMilli?': N,
  'isFollowing?': B,
});
const ThreadReplyInfo = obj({ 'rootId?': S, 'replySentToChannel?': B, 'rootText?': S });
const messageFields: Fields = {
  id: S,
  workspaceId: S,
  channelId: S,
  author: S,
  'text?': S,
  'timestamp?': S,
  'timestampMilli?': N,
  'subtype?': S,
  'reactions?': arr(obj({ user: S, code: S })),
  'linkPreviews?': arr(OBJ),
  'isFollowing?': B,
  'threadRootInfo?': ThreadRootInfo,
  'threadReplyInfo?': ThreadReplyInfo,
  'files?': arr(MessageFile),
  'deleted?': B,
  'edited?': B,
  'localId?': S,
  'attachments?': arr(OBJ),
  'sharedMessage?': OBJ,
  'savedTimestampMilli?': N,
  'blocks?': arr(OBJ),
  'meta?': OBJ,
};
const Message = obj(messageFields);
const Messages = obj({ 'messages?': arr(Message), 'hasMoreBefore?': B, 'hasMoreAfter?': B });
const PageMessageSearchResult = obj({
  'content?': arr(obj({ ...messageFields, 'highlightedBlocks?': arr(OBJ) })),
  'totalElements?': N,
  'hasMore?': B,
});
const Channel = obj({
  id: S,
  workspaceId: S,
  channelType: { oneOf: ['SELF', 'DIRECT', 'PUBLIC', 'PRIVATE'] },
  'name?': S,
  'description?': S,
  'isMember?': B,
  'isMuted?': B,
  'isHidden?': B,
  'isArchived?': B,
  'isPumbleBot?': B,
  'isAddonBot?': B,
  'lastMarkTimestamp?': S,
  'lastMarkTimestampMilli?': N,
  'isMain?': B,
  'isInitial?': B,
  'sectionId?': S,
  postingPermissions: obj({
    'allowThreads?': B,
    'allowMentions?': B,
    'postingPermissionsGroup?': S,
    'workspaceUserIds?': arr(S),
  }),
  desktopNotificationPreferences: S,
  mobileNotificationPreferences: S,
  'notifyAboutRepliesInThreads?': B,
  'addedById?': S,
});
const ChannelInfo = obj({
  channel: Channel,
  'users?': arr(S),
  'pinnedMessages?': arr(obj({ 'workspaceUserId?': S, 'messageId?': S })),
});
const UsersAddedToChannel = obj({ channelId: S, 'addedUserIds?': arr(S) });
const RECURRENCES = [
  'DAILY',
  'BUSINESSDAYS',
  'WEEKLY',
  'BIWEEKLY',
  'MONTHLY_NTH_WEEKDAY',
  'MONTHLY_LAST_WEEKDAY',
  'QUARTERLY_NTH_WEEKDAY',
  'QUARTERLY_LAST_WEEKDAY',
  'ANNUALLY',
];
const ScheduledMessage = obj({
  id: S,
  workspaceId: S,
  author: S,
  channelId: S,
  text: S,
  sentAt: N,
  files: arr(MessageFile),
  'blocks?': arr(OBJ),
  attachments: arr(OBJ),
  'recurrence?': obj({ recurrenceType: { oneOf: RECURRENCES }, endAfterOccurrences: N, endDate: N }),
});
const ScheduledMessages = obj({ scheduledMessages: arr(ScheduledMessage), hasMore: B });
const PermanentCall = obj({ 'id?': S, 'code?': S, 'workspaceId?': S, 'workspaceUserId?': S, 'permanentLink?': S });
const FileUploadToken = obj({ token: S, 'remoteProductToken?': S });
const FileDataResponse = obj({
  mimeType: S,
  width: N,
  height: N,
  size: N,
  path: S,
  duration: N,
  waveform: arr(N),
  requestedFileUploadId: S,
  base64Value: S,
});
const CompleteFileUpload = obj({ original: FileDataResponse, thumbs: arr(FileDataResponse), signature: S });
const File = obj({ id: S, path: S, name: S });

/** Where `value` differs from `shape`: one line per difference, with the path to it. */
function differences(value: unknown, shape: Shape, at = '$'): string[] {
  if (typeof shape === 'string') {
    if (shape === 'object')
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? [] : [`${at}: not an object`];
    return typeof value === shape ? [] : [`${at}: ${JSON.stringify(value)} is not a ${shape}`];
  }
  if ('oneOf' in shape)
    return shape.oneOf.includes(value as string)
      ? []
      : [`${at}: ${JSON.stringify(value)} is not one of ${shape.oneOf.join('|')}`];
  if ('anyOf' in shape)
    return shape.anyOf.some((s) => !differences(value, s, at).length) ? [] : [`${at}: matches none of its types`];
  if ('arrayOf' in shape)
    return Array.isArray(value)
      ? value.flatMap((v, i) => differences(v, shape.arrayOf, `${at}[${i}]`))
      : [`${at}: not an array`];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`${at}: not an object`];
  const o = value as Record<string, unknown>;
  const out: string[] = [];
  const named = new Set<string>();
  for (const [key, s] of Object.entries(shape.fields)) {
    const optional = key.endsWith('?');
    const name = optional ? key.slice(0, -1) : key;
    named.add(name);
    if (o[name] === undefined) {
      if (!optional) out.push(`${at}.${name}: missing (the SDK's type requires it)`);
      continue;
    }
    out.push(...differences(o[name], s, `${at}.${name}`));
  }
  for (const k of Object.keys(o)) if (!named.has(k)) out.push(`${at}.${k}: not a field of the SDK's type`);
  return out;
}

t.test(
  'the notation itself: it finds a missing field, a wrong type, a value outside its set, a field the type does not name',
  async (t) => {
    const shape = obj({ id: S, 'n?': N, kind: { oneOf: ['A'] }, list: arr(obj({ x: B })) });
    t.same(differences({ id: 'a', kind: 'A', list: [{ x: true }] }, shape), []);
    t.same(differences({ id: 1, n: 'x', kind: 'B', list: [{ x: 1 }], extra: 0 }, shape), [
      '$.id: 1 is not a string',
      '$.n: "x" is not a number',
      '$.kind: "B" is not one of A',
      '$.list[0].x: 1 is not a boolean',
      "$.extra: not a field of the SDK's type",
    ]);
    t.same(differences({ kind: 'A', list: [] }, shape), ["$.id: missing (the SDK's type requires it)"]);
  },
);

t.test('every answer of the platform API has the shape of its V1 type', async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const other = await secondUser(d);
  const scopes = [...PLATFORM_SCOPES, 'files:write'];
  const { user, bot, tokens, app } = await installPlatformApp(d, { userScopes: scopes, botScopes: scopes });
  const checked: string[] = [];
  /** The answer of one call, which must be 200 and of `shape`. */
  const check = async <T = any>(name: string, call: Promise<{ status: number; body: T }>, shape: Shape): Promise<T> => {
    const r = await call;
    t.equal(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
    t.same(differences(r.body, shape), [], name);
    checked.push(name);
    return r.body;
  };
  const ws = d.parts.workspace;
  await ws.profiles.createGroup(await ws.person(d.workspaceUserId), {
    name: 'Reviewers',
    workspaceUserIds: [d.workspaceUserId, other.id],
  });

  await check(
    'GET /oauth2/me',
    fetch(`${d.url}/oauth2/me`, { headers: { token: tokens.accessToken, 'x-app-token': app.appKey } }).then(
      async (r) => ({ status: r.status, body: await r.json() }),
    ),
    OAuthUserProfile,
  );
  await check('GET /v1/workspaceUsers', bot.listWorkspaceUsers(), arr(WorkspaceUser));
  await check(
    'PUT /v1/workspaceUsers/customStatus',
    user.updateCustomStatus({
      code: ':tea:',
      status: 'Break',
      expiration: 'custom',
      expiresAt: clock.now() + 60_000,
      pausedNotifications: false,
    }),
    WorkspaceUser,
  );
  const me = await check('GET /v1/workspaceUsers/{u}', bot.userInfo(d.workspaceUserId), WorkspaceUser);
  t.ok(me.customStatus, 'with its custom status');
  await check('GET /v1/workspaceUsers/{bot}', bot.userInfo(must(tokens.botId)), WorkspaceUser);
  await check('GET /v1/workspaceUsers/groups', bot.listUserGroups(), arr(UserGroup));
  await check('GET /v1/workspace', bot.getWorkspaceInfo(), Workspace);

  const channels = await check('GET /v1/channels', bot.listChannels(), arr(ChannelInfo));
  const general = channels.find((c: any) => c.channel.name === 'general').channel.id as string;
  const made = await check(
    'POST /v1/channels',
    user.createChannel('shapes', 'PRIVATE', 'for the shape test'),
    ChannelInfo,
  );
  await check('GET /v1/channels/{c}', user.getChannelDetails(made.channel.id), ChannelInfo);
  await check('POST /v1/channels/{c}/users', user.addUsersToChannel(made.channel.id, [other.id]), UsersAddedToChannel);
  await check('GET /v1/channels/direct', bot.getDirectChannel(must(tokens.botId), [d.workspaceUserId]), ChannelInfo);
  await check('POST /v1/channels/direct', bot.createDirectChannel([d.workspaceUserId, other.id]), ChannelInfo);
  await check('GET /v1/channels/direct/list', user.listAllDirectChannels(), arr(ChannelInfo));

  const upload = await user.getUploadToken('notes.txt', 5);
  t.same(differences(upload.body, FileUploadToken), [], 'POST /v1/files/upload/token');
  const sent = await user.postUpload(upload.body, Buffer.from('hello'), 'notes.txt', 'text/plain');
  t.same(differences(sent.body, CompleteFileUpload), [], 'POST /upload/files');
  const file = await check('POST /v1/files/upload/complete', user.completeFileUpload(sent.body), File);
  checked.push('POST /v1/files/upload/token', 'POST /upload/files');
  const uploaded = await sdkUploadFile(bot, Buffer.from('bot file'), 'bot.txt', 'text/plain');
  t.equal(uploaded.status, 200);

  const root = await check(
    'POST /v1/channels/{c}/messages',
    user.postMessageToChannel(general, 'root', {
      files: [file.id],
      attachments: [{ title: 'A' }],
      blocks: [{ type: 'rich_text', elements: [] }],
    }),
    Message,
  );
  t.equal(root.files.length, 1, 'carrying a V1.MessageFile');
  await check(
    'POST /v1/channels/{c}/messages (ephemeral)',
    bot.postEphemeral(general, 'only you', d.workspaceUserId),
    Message,
  );
  const reply = await check(
    'POST /v1/channels/{c}/messages/{m}',
    bot.reply(root.id, general, 'a reply', { alsoSendToChannel: true, files: [uploaded.body.id] }),
    Message,
  );
  t.ok(reply.threadReplyInfo, 'a reply carries threadReplyInfo');
  await user.addReaction(root.id, ':tada:');
  const again = await check('GET /v1/channels/{c}/messages/{m}', user.fetchMessage(root.id, general), Message);
  t.ok(again.threadRootInfo && again.reactions.length, 'a root with replies and a reaction');
  await check('GET /v1/channels/{c}/messages', user.fetchMessages(general, undefined, 10), Messages);
  await check('GET /v1/channels/{c}/messages/{m}/replies', user.fetchThreadReplies(root.id, general), arr(Message));
  await check('PUT /v1/channels/{c}/messages/{m}', user.editMessage(root.id, general, 'root, edited'), Message);
  await check(
    'PUT /v1/channels/{c}/messages/{m}/attachments',
    user.editAttachments(root.id, general, [{ title: 'B' }]),
    Message,
  );
  await check('POST /v1/messages/search', user.searchMessages({ text: 'root' }), PageMessageSearchResult);

  const later = { channelId: general, text: 'later', sendAt: clock.now() + 3_600_000, attachments: [{ title: 'C' }] };
  const sch = await check(
    'POST /v1/messages/scheduled',
    bot.createScheduledMessage({
      ...later,
      recurrence: { recurrenceType: 'WEEKLY', endDate: clock.now() + 30 * 86_400_000 },
    }),
    ScheduledMessage,
  );
  const once = await check(
    'POST /v1/messages/scheduled (once, with a file)',
    bot.createScheduledMessage({ ...later, files: [uploaded.body.id] }),
    ScheduledMessage,
  );
  t.equal(once.files.length, 1, 'carrying a V1.MessageFile');
  await check('GET /v1/messages/scheduled/{id}', bot.fetchScheduledMessage(sch.id), ScheduledMessage);
  await check(
    'PUT /v1/messages/scheduled/{id}',
    bot.editScheduledMessage(sch.id, { ...later, text: 'later, edited' }),
    ScheduledMessage,
  );
  await check(
    'PUT /v1/messages/scheduled/{id}/attachments',
    bot.editScheduledMessageAttachments(sch.id, [{ title: 'D' }]),
    ScheduledMessage,
  );
  await check('GET /v1/messages/scheduled', bot.fetchScheduledMessages(undefined, 1), ScheduledMessages);

  await check('POST /v1/calls/permanent', user.createPermanentCall(), PermanentCall);
  t.ok(checked.length >= 30, `${checked.length} calls checked`);
});
