/**
 * An SDK-like client of the platform API: the headers, paths, query parameters and bodies the
 * official SDK's api client sends (token, x-app-token, JSON), written here from its documented
 * shapes. Each call returns the raw status and the parsed body so tests can check errors too.
 */
import type { TestDaemon } from './daemon.js';
import { authorize, createApp } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

export interface PlatformAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export function platformClient(baseUrl: string, token: string, appKey: string) {
  async function call<T = any>(
    method: string,
    path: string,
    opts: { query?: Record<string, string | number | undefined>; data?: unknown } = {},
  ): Promise<PlatformAnswer<T>> {
    const url = new URL(baseUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const res = await fetch(url, {
      method,
      headers: {
        token,
        'x-app-token': appKey,
        'content-type': 'application/json',
        'user-agent': 'pumble-sdk/1.0.0',
        appversion: 'app/1.0.0',
      },
      body: opts.data === undefined ? undefined : JSON.stringify(opts.data),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  }
  const msgs = (c: string) => `/v1/channels/${c}/messages`;
  return {
    call,
    // messages
    fetchMessages: (c: string, cursor?: string, count = 1, strategy?: string) =>
      call('GET', msgs(c), { query: { limit: count, strategy, cursor } }),
    fetchMessage: (m: string, c: string) => call('GET', `${msgs(c)}/${m}`),
    postMessageToChannel: (c: string, text: string, extra: Record<string, unknown> = {}) =>
      call('POST', msgs(c), { data: { text, blocks: [], attachments: [], files: [], ...extra } }),
    postEphemeral: (c: string, text: string, ...users: string[]) =>
      call('POST', msgs(c), { data: { ephemeral: { sendToUsers: users }, text } }),
    reply: (root: string, c: string, text: string, extra: Record<string, unknown> = {}) =>
      call('POST', `${msgs(c)}/${root}`, { data: { text, blocks: [], attachments: [], files: [], ...extra } }),
    editMessage: (m: string, c: string, text: string) => call('PUT', `${msgs(c)}/${m}`, { data: { text } }),
    editAttachments: (m: string, c: string, attachments: unknown[]) =>
      call('PUT', `${msgs(c)}/${m}/attachments`, { data: { attachments } }),
    deleteMessage: (m: string, c: string) => call('DELETE', `${msgs(c)}/${m}`),
    deleteEphemeralMessage: (m: string, c: string, deleteForUsers: string[]) =>
      call('DELETE', `${msgs(c)}/${m}/ephemeral`, { data: { deleteForUsers } }),
    fetchThreadReplies: (root: string, c: string, cursor?: string, limit?: number, strategy?: string) =>
      call('GET', `${msgs(c)}/${root}/replies`, { query: { cursor, strategy, limit } }),
    searchMessages: (req: Record<string, unknown>) => call('POST', '/v1/messages/search', { data: req }),
    addReaction: (m: string, code: string) => call('POST', `/v1/messages/${m}/reactions`, { data: { code } }),
    removeReaction: (m: string, code: string) => call('DELETE', `/v1/messages/${m}/reactions`, { data: { code } }),
    // scheduled messages
    fetchScheduledMessages: (channelId?: string, limit?: number) =>
      call('GET', '/v1/messages/scheduled', { query: { channelId, limit } }),
    fetchScheduledMessage: (id: string) => call('GET', `/v1/messages/scheduled/${id}`),
    createScheduledMessage: (req: Record<string, unknown>) => call('POST', '/v1/messages/scheduled', { data: req }),
    editScheduledMessage: (id: string, req: Record<string, unknown>) =>
      call('PUT', `/v1/messages/scheduled/${id}`, { data: req }),
    editScheduledMessageAttachments: (id: string, attachments: unknown[]) =>
      call('PUT', `/v1/messages/scheduled/${id}/attachments`, { data: { attachments } }),
    deleteScheduledMessage: (id: string) => call('DELETE', `/v1/messages/scheduled/${id}`),
    // channels
    listChannels: (types?: string) => call('GET', '/v1/channels', { query: { types } }),
    getChannelDetails: (c: string) => call('GET', `/v1/channels/${c}`),
    getDirectChannel: (me: string, withUsers: string[]) =>
      call('GET', '/v1/channels/direct', { query: { participantIds: [...new Set([me, ...withUsers])].join(',') } }),
    /** listAllDirectChannels, in the SDK versions that have it: no query, no body. */
    listAllDirectChannels: () => call('GET', '/v1/channels/direct/list'),
    createDirectChannel: (participantIds: string[]) =>
      call('POST', '/v1/channels/direct', { data: { participantIds } }),
    createChannel: (name: string, type: 'PUBLIC' | 'PRIVATE' = 'PUBLIC', description?: string) =>
      call('POST', '/v1/channels', { data: { name, type, description } }),
    addUsersToChannel: (c: string, userIds: string[]) => call('POST', `/v1/channels/${c}/users`, { data: { userIds } }),
    removeUserFromChannel: (c: string, u: string) => call('DELETE', `/v1/channels/${c}/users/${u}`),
    // users and workspace
    listWorkspaceUsers: () => call('GET', '/v1/workspaceUsers'),
    userInfo: (u: string) => call('GET', `/v1/workspaceUsers/${u}`),
    getWorkspaceInfo: () => call('GET', '/v1/workspace'),
    listUserGroups: () => call('GET', '/v1/workspaceUsers/groups'),
    updateCustomStatus: (data: Record<string, unknown>) => call('PUT', '/v1/workspaceUsers/customStatus', { data }),
    publishHomeView: (u: string, data: Record<string, unknown>) =>
      call('POST', `/v1/app/homeView/workspaceUsers/${u}`, { data }),
    // calls
    createPermanentCall: () => call('POST', '/v1/calls/permanent'),
    // files, as the SDK's files client uploads them: a token, the bytes to the file-upload host, then complete
    getUploadToken: (filename: string, length: number) =>
      call('POST', '/v1/files/upload/token', { data: { filename, length } }),
    postUpload: (
      upload: { token: string; remoteProductToken?: string },
      bytes: Buffer,
      name: string,
      mimeType = 'application/octet-stream',
      uploadUrl = baseUrl,
    ) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(bytes)], { type: mimeType }), name);
      const headers: Record<string, string> = {
        authtoken: upload.token,
        'user-agent': 'pumble-sdk/1.0.0',
        appversion: 'app/1.0.0',
      };
      if (upload.remoteProductToken) headers['Remote-Product-Token'] = upload.remoteProductToken;
      return answer(fetch(`${uploadUrl}/upload/files`, { method: 'POST', headers, body: form }));
    },
    completeFileUpload: (uploaded: unknown) => call('POST', '/v1/files/upload/complete', { data: uploaded }),
    /** files.fetchFile: GET the file's URL with the token headers; the raw response. */
    fetchFile: (url: string) =>
      fetch(url, { headers: { token, 'x-app-token': appKey, 'user-agent': 'pumble-sdk/1.0.0' } }),
  };
}

async function answer(p: Promise<Response>): Promise<PlatformAnswer> {
  const res = await p;
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/**
 * The SDK's uploadFile: token for the name and length, the bytes, then complete → V1.File (or the first failing
 * answer).
 */
export async function sdkUploadFile(
  c: ReturnType<typeof platformClient>,
  bytes: Buffer,
  name: string,
  mimeType?: string,
): Promise<PlatformAnswer> {
  const tok = await c.getUploadToken(name, bytes.length);
  if (tok.status !== 200) return tok;
  const up = await c.postUpload(tok.body, bytes, name, mimeType);
  if (up.status !== 200) return up;
  return c.completeFileUpload(up.body);
}

/** Every scope a platform test app asks for. */
export const PLATFORM_SCOPES = [
  'messages:read',
  'messages:write',
  'messages:edit',
  'messages:delete',
  'attachments:write',
  'reaction:read',
  'reaction:write',
  'channels:list',
  'channels:read',
  'channels:write',
  'users:list',
  'user:read',
  'workspace:read',
  'status:write',
  'group:read',
  'calls:write',
];

/** The consent-screen scope string granting `user` scopes to the user and `bot` scopes to the bot. */
const scopeString = (user: string[], bot: string[]) => [...user, ...bot.map((s) => `bot:${s}`)].join(',');

/**
 * Create an app with the given scopes (all platform scopes by default), authorize it as the daemon's owner (or `as`),
 * and return SDK-like clients for its user and bot tokens.
 */
export async function installPlatformApp(
  d: TestDaemon,
  opts: {
    userScopes?: string[];
    botScopes?: string[];
    events?: string[];
    eventsUrl?: string;
    as?: { token: string; mgmt: string };
    name?: string;
    manifest?: Record<string, unknown>;
  } = {},
) {
  const userScopes = opts.userScopes ?? PLATFORM_SCOPES;
  const botScopes = opts.botScopes ?? PLATFORM_SCOPES;
  const app = await createApp(d, {
    ...(opts.name ? { name: opts.name } : {}),
    scopes: { botScopes, userScopes },
    eventSubscriptions: { url: opts.eventsUrl ?? 'http://127.0.0.1:9/events', events: opts.events ?? [] },
    ...opts.manifest,
  });
  const tokens = await authorize(d, app, {
    scopes: scopeString(userScopes, botScopes),
    ...(opts.as ? { token: opts.as.token, mgmt: opts.as.mgmt } : {}),
  });
  return {
    app,
    tokens,
    user: platformClient(d.url, tokens.accessToken, app.appKey),
    bot: platformClient(d.url, must(tokens.botToken), app.appKey),
  };
}
