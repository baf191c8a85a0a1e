/**
 * The daemon's HTTP API as a run uses it, through the client layer's HTTP client (src/client/daemon-client.ts,
 * the CLI's too), as the owner or as the users a suite names: apps, users, authorization, channels, messages,
 * reactions, triggers and the delivery log (docs/protocol.md §2). The owner acts as another user with a
 * short-lived token of theirs (POST …/act-as), revoked at the end. A 429 is waited out
 * (Retry-After) and asked again.
 */
import { CliError, EXIT, refusalCode } from '../client/exit.js';
import { createClient, type Client } from '../client/daemon-client.js';
import { listMessages, messagesAfter, type Message } from '../client/workspace.js';
import type { Delivery } from '../client/delivery.js';
import type { Io } from '../client/io.js';

export type { Message, Delivery };
export interface AppRecord {
  id: string;
  name: string;
  displayName: string;
  clientSecret?: string;
  appKey?: string;
  signingSecret?: string;
  redirectUrls: string[];
  socketMode?: boolean;
  connections?: number;
  scopes: { botScopes: string[]; userScopes: string[] };
  bot: boolean;
  offlineMessage?: string;
  slashCommands?: Array<{ command: string }>;
  shortcuts?: Array<{ name: string; displayName: string; shortcutType: string }>;
  blockInteraction?: { url: string } | null;
  viewAction?: { url: string } | null;
  dynamicMenus?: Array<{ url: string; onAction: string }>;
  eventSubscriptions?: { url?: string; events?: string[] };
}
export interface Person {
  id: string;
  name: string;
  email: string;
}
/** A user as the workspace lists them: a person, or an app's bot. */
interface WorkspaceUser extends Person {
  isAddonBot?: boolean;
}
/** An app a user authorized, and its bot in the workspace. */
interface Authorization {
  app: { id: string; name?: string; displayName?: string };
  botId?: string;
}
interface Probe {
  wrongSignature: { status?: number; outcome: string; refused: boolean; error?: string };
  unsigned: { status?: number; outcome: string; refused: boolean; error?: string };
  refusedBoth: boolean;
}

/** An act-as token is good for ten minutes: ask for a new one after eight. */
const ACT_AS_RENEW_MS = 8 * 60_000;
const RETRIES_429 = 5;

export function createApi(io: Io, owner: Client) {
  const enc = encodeURIComponent;
  const tokens = new Map<string, { client: Client; at: number }>();
  let me: (Person & { workspaceId: string }) | undefined;

  /** A request, a 429 waited out and sent again (at most RETRIES_429 times). */
  async function call<T>(
    client: Client,
    method: string,
    pathname: string,
    o: Parameters<Client['request']>[2] = {},
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let retryAfter: string | undefined;
      try {
        return await client.request<T>(method, pathname, {
          ...o,
          onHeaders: (h) => void (retryAfter = h['retry-after']),
        });
      } catch (e) {
        if (refusalCode(e) !== 'rate_limited' || attempt >= RETRIES_429) throw e;
        await new Promise((r) => setTimeout(r, Math.min(60, Math.max(1, Number(retryAfter) || 1)) * 1000));
      }
    }
  }

  const base = () => owner.base();

  async function whoami(): Promise<Person & { workspaceId: string }> {
    if (!me) {
      const w = await call<{ workspaceId: string; workspaceUserId: string; name: string; email: string }>(
        owner,
        'GET',
        '/auth/whoami',
      );
      me = { id: w.workspaceUserId, name: w.name, email: w.email, workspaceId: w.workspaceId };
    }
    return me;
  }

  /** The client acting as `userId`: the owner's own, or a short-lived token of that user. */
  async function clientOf(userId: string): Promise<Client> {
    if (userId === (await whoami()).id) return owner;
    const had = tokens.get(userId);
    if (had && Date.now() - had.at < ACT_AS_RENEW_MS) return had.client;
    const issued = await call<{ authToken: string }>(owner, 'POST', `${base()}/act-as`, {
      json: { user: userId },
    }).catch((e: unknown) => {
      if (e instanceof CliError && refusalCode(e) === 'forbidden') {
        throw new CliError(
          "only the owner of the workspace can act as other users: run appreg test with the owner's token, or keep the suite to owner",
          EXIT.rejected,
          e.body,
        );
      }
      throw e;
    });
    const client = createClient({ ...io, env: {} }, { url: owner.url, token: issued.authToken });
    if (had) await call(had.client, 'POST', '/auth/logout').catch(() => undefined);
    tokens.set(userId, { client, at: Date.now() });
    return client;
  }

  return {
    url: owner.url,
    call,
    whoami,
    clientOf,
    /** Revoke the tokens this run was given for other users. */
    async release() {
      await Promise.all([...tokens.values()].map((t) => call(t.client, 'POST', '/auth/logout').catch(() => undefined)));
      tokens.clear();
    },

    createApp: (manifest: unknown) => call<AppRecord>(owner, 'POST', `${base()}/apps`, { json: manifest }),
    getApp: (id: string) => call<AppRecord>(owner, 'GET', `${base()}/apps/mine/${enc(id)}`),
    syncFromUrl: (id: string, url: string) =>
      call<AppRecord>(owner, 'POST', `${base()}/apps/from-url`, { json: { url, appId: id } }),
    deleteApp: (id: string) => call(owner, 'DELETE', `${base()}/apps/${enc(id)}`),
    uninstall: async (id: string) =>
      call(owner, 'DELETE', `${base()}/apps/${enc(id)}/installations/${enc((await whoami()).workspaceId)}`),

    users: () => call<WorkspaceUser[]>(owner, 'GET', `${base()}/users`),
    /** A user of the workspace made for the run; one of that email already there is used as it is. */
    async ensureUser(email: string, name: string): Promise<Person> {
      const ws = (await whoami()).workspaceId;
      try {
        const u = await call<{ id: string; name: string; email: string }>(
          owner,
          'POST',
          `/workspaces/${enc(ws)}/workspaceUsers`,
          { json: { email, name } },
        );
        return { id: u.id, name: u.name, email: u.email };
      } catch (e) {
        if (refusalCode(e) !== 'user_exists') throw e;
        const found = (await call<Person[]>(owner, 'GET', `${base()}/users`)).find(
          (u) => u.email.toLowerCase() === email.toLowerCase(),
        );
        if (!found) throw e;
        return found;
      }
    },

    /** Allow on the consent screen as `client`'s user: the code and where it goes. */
    grant: (client: Client, q: Record<string, string>) =>
      call<{ code: string; redirectUrl: string }>(client, 'GET', `${client.base()}/oauth2/grant`, { searchParams: q }),
    codeState: (client: Client, code: string) =>
      call<{ state: string }>(client, 'POST', `${client.base()}/oauth2/code-state`, { json: { code } }),
    authorizations: (client: Client) => call<Authorization[]>(client, 'GET', `${client.base()}/apps/authorizations`),

    createChannel: (name: string) =>
      call<{ channel: { id: string; name: string } }>(owner, 'POST', `${base()}/channels`, { json: { name } }),
    deleteChannel: (id: string) => call(owner, 'DELETE', `${base()}/channels/${enc(id)}`),

    /** A person types `text` in a channel (a /command runs it: the command of `appId`, when given). */
    say: (client: Client, channel: string, text: string, o: { threadRootId?: string; appId?: string } = {}) =>
      call<{ kind: 'message'; message: Message } | { kind: 'slash-command'; channelId: string; delivery: Delivery }>(
        client,
        'POST',
        `${client.base()}/channels/${enc(channel)}/messages`,
        {
          json: {
            text,
            ...(o.threadRootId ? { threadRootId: o.threadRootId } : {}),
            ...(o.appId ? { appId: o.appId } : {}),
          },
          timeoutMs: 120_000,
        },
      ),
    react: (client: Client, messageId: string, code: string) =>
      call(client, 'POST', `${client.base()}/messages/${enc(messageId)}/reactions`, { json: { code } }),
    /** What `client`'s user sees in the channel after `mark`, thread replies included. */
    messagesAfter: (client: Client, channel: string, mark: string | undefined) =>
      messagesAfter(client, channel, mark, true),
    /** The newest message of the channel as `client`'s user sees it (thread replies counted). */
    newest: async (client: Client, channel: string) =>
      (await listMessages(client, channel, { limit: 1, threads: true })).messages.at(-1),
    /** One message of the channel as `client`'s user sees it; undefined once it is gone. */
    async message(client: Client, channel: string, id: string): Promise<Message | undefined> {
      try {
        const page = await listMessages(client, channel, { cursor: id, strategy: 'AROUND', limit: 3, threads: true });
        return page.messages.find((m) => m.id === id);
      } catch (e) {
        // a cursor that is no longer a message of the channel
        if (e instanceof CliError && e.exitCode === EXIT.rejected) return undefined;
        throw e;
      }
    },

    trigger: (body: Record<string, unknown>) =>
      call<Delivery>(owner, 'POST', `${base()}/deliveries`, { json: body, timeoutMs: 120_000 }),
    probe: (body: Record<string, unknown>) =>
      call<Probe>(owner, 'POST', `${base()}/deliveries/probe-signature`, { json: body, timeoutMs: 120_000 }),
    deliveries: (q: { appId: string; failed?: boolean; limit?: number }) =>
      call<Delivery[]>(owner, 'GET', `${base()}/deliveries`, {
        searchParams: { appId: q.appId, limit: String(q.limit ?? 200), ...(q.failed ? { failed: 'true' } : {}) },
      }),
  };
}

export type Api = ReturnType<typeof createApi>;
