/**
 * The workspace as a person uses it (appreg say, messages, channels, react; the console),
 * mounted at the management base path: the caller acts as their own workspace user. A
 * message starting with `/` is a slash command, as in the platform's client: the app with the
 * command gets SLASH_COMMAND and the answer says what the person sees.
 */
import { Router } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { DeliveriesService } from '../../services/deliveries.js';
import type { createWorkspace } from '../../services/workspace/workspace.js';

type Workspace = ReturnType<typeof createWorkspace>;
import { jsonBody, rateLimit, type HitCounter } from '../middleware.js';
import { actAsAllowed, principalOf } from './auth.js';
import { fieldsOf, mountAuthed, route, type NotAnObject } from './route-table.js';
import type { ChannelBody } from '../../services/workspace/channels.js';
import type { ListQuery } from '../../services/workspace/messages.js';
import { ownWords, schema } from '../../validation/http-input.js';
import { BAD_REACTION_CODE, badReactionCode, type ReactionBody } from '../../services/workspace/reactions.js';
import { must } from '../../must.js';

export interface PeopleRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'rateLimitManagementWrites'>;
  clock: Clock;
  store: HitCounter;
  workspace: Workspace;
  deliveries: DeliveriesService;
}

const SLASH = /^(\/[A-Za-z0-9_-]{1,32})(?:\s+([\s\S]*))?$/;

/**
 * A channel as a person writes it: its id, `general` or `#general` (the channel's id; the text as given when no name
 * matches).
 */
export async function channelIdOf(ws: Workspace, workspaceId: string, channel: string): Promise<string> {
  await ws.channels.ensureWorkspace(workspaceId);
  return (await ws.channels.byName(workspaceId, channel))?.id ?? channel;
}

const auth = 'authtoken';
const channelPath = schema<{ channel: string }>('management#channelPath');
const channelMessagePath = schema<{ channel: string; messageId: string }>('management#channelMessagePath');
type PersonMessage = { text: string; threadRootId?: string; appId?: string };

/** The channels service's words for a channel's field that is wrong (channels.ts create). */
const CHANNEL_FIELDS: Record<string, { pointer: string; message: string }> = {
  '/name': { pointer: '/name', message: 'is not a valid channel name' },
  '/type': { pointer: '/type', message: 'must be PUBLIC or PRIVATE' },
  '/description': { pointer: '/description', message: 'must be a string of at most 250 characters' },
};
const CHANNEL_FIELD_SAYS: Record<string, string> = {
  '/name': 'name must be 1 to 80 letters, digits, spaces, _ or -.',
  '/type': 'type must be PUBLIC or PRIVATE.',
  '/description': 'description must be at most 250 characters.',
};

export const PEOPLE_ROUTES = {
  channels: route({
    method: 'get',
    path: '/channels',
    summary: 'The channels the caller can see',
    query: schema<{ types?: string }>('management#channelsQuery'),
    answers: { 200: 'The channels' },
    auth,
  }),
  createChannel: route({
    method: 'post',
    path: '/channels',
    summary: 'Create a channel',
    body: schema<ChannelBody | NotAnObject>('management#channelBody'),
    // a field that is not text is refused as the channels service refuses a wrong one
    refuse: ownWords(
      (p) => CHANNEL_FIELDS[p.pointer],
      (first) => must(CHANNEL_FIELD_SAYS[first.pointer]),
    ),
    answers: { 201: 'The channel' },
    auth,
  }),
  messages: route({
    method: 'get',
    path: '/channels/:channel/messages',
    summary: "A channel's messages as the caller sees them",
    params: channelPath,
    query: schema<ListQuery & { threads?: string }>('management#messagesQuery'),
    answers: { 200: 'The messages' },
    auth,
  }),
  replies: route({
    method: 'get',
    path: '/channels/:channel/messages/:messageId/replies',
    summary: "A thread's replies as the caller sees them",
    params: channelMessagePath,
    query: schema<ListQuery & { threads?: string }>('management#messagesQuery'),
    answers: { 200: 'The replies' },
    auth,
  }),
  users: route({
    method: 'get',
    path: '/users',
    summary: 'The users of the workspace',
    answers: { 200: 'The users' },
    auth,
  }),
  post: route({
    method: 'post',
    path: '/channels/:channel/messages',
    summary: 'Post as the caller; a text starting with / runs the slash command of an app',
    params: channelPath,
    body: schema<PersonMessage>('management#personMessageBody'),
    messages: {
      '': 'Send {"text"} (and "threadRootId" for a thread reply).',
      '/text': 'Send {"text"} (and "threadRootId" for a thread reply).',
      '/threadRootId': { text: 'threadRootId must be a message id.', details: false },
      '/appId': 'appId must be the id of the app whose command it is.',
    },
    answers: { 201: 'The message, or the slash command and its delivery' },
    auth,
  }),
  react: route({
    method: 'post',
    path: '/messages/:messageId/reactions',
    summary: 'React to a message as the caller',
    params: schema<{ messageId: string }>('management#messageIdPath'),
    body: schema<ReactionBody>('management#reactionBody'),
    // a code missing or not text is refused as the reactions service refuses a malformed one
    refuse: ownWords(
      () => badReactionCode,
      () => BAD_REACTION_CODE,
    ),
    answers: { 204: 'Reacted' },
    auth,
  }),
};

/** The workspace as a person uses it, relative to MGMT_BASE; a channel is its id, its name or #name. */
export function peopleRoutes(deps: PeopleRoutesDeps): Router {
  const { workspace: ws } = deps;
  const r = Router({ mergeParams: true });
  const body = jsonBody(deps.config.bodyLimitBytes);
  const writes = rateLimit({
    perMinute: deps.config.rateLimitManagementWrites,
    clock: deps.clock,
    store: deps.store,
    key: (_req, res) => `people-writes|${principalOf(res).workspaceUserId}`,
  });

  const R = PEOPLE_ROUTES;

  mountAuthed(r, R.channels, [actAsAllowed], async (_req, res, p, { query }) =>
    res.json(await ws.channels.list(await ws.person(p.workspaceUserId), query.types)),
  );
  mountAuthed(r, R.createChannel, [writes, body], async (_req, res, p, { body: b }) =>
    res.status(201).json(await ws.channels.create(await ws.person(p.workspaceUserId), fieldsOf(b))),
  );
  // threads=true: thread replies too (what appreg watches for after a command)
  mountAuthed(r, R.messages, [actAsAllowed], async (_req, res, p, { params, query }) =>
    res.json(
      await ws.messages.list(
        await ws.person(p.workspaceUserId),
        await channelIdOf(ws, p.workspaceId, params.channel),
        query,
        { forPerson: true, withReplies: query.threads === 'true' },
      ),
    ),
  );
  mountAuthed(r, R.replies, [actAsAllowed], async (_req, res, p, { params, query }) =>
    res.json(
      await ws.messages.replies(
        await ws.person(p.workspaceUserId),
        await channelIdOf(ws, p.workspaceId, params.channel),
        params.messageId,
        query,
        { forPerson: true },
      ),
    ),
  );
  mountAuthed(r, R.users, [actAsAllowed], async (_req, res, p) =>
    res.json(await ws.users.list(await ws.person(p.workspaceUserId))),
  );
  mountAuthed(r, R.post, [actAsAllowed, writes, body], async (_req, res, p, { params, body: b }) => {
    const channelId = await channelIdOf(ws, p.workspaceId, params.channel);
    const slash = SLASH.exec(b.text.trim());
    if (slash) {
      // the person must be able to see the channel the command is typed in
      const ch = await ws.channels.visible(await ws.person(p.workspaceUserId), channelId);
      const delivery = await deps.deliveries.invokeSlashCommand(p, {
        command: must(slash[1]),
        text: slash[2] ?? '',
        channelId: ch.id,
        threadRootId: b.threadRootId,
        appId: b.appId,
      });
      res.status(201).json({ kind: 'slash-command', channelId: ch.id, delivery });
      return;
    }
    const message = await ws.postAsUser(p.workspaceUserId, channelId, { text: b.text, threadRootId: b.threadRootId });
    res.status(201).json({ kind: 'message', message });
  });
  mountAuthed(r, R.react, [actAsAllowed, writes, body], async (_req, res, p, { params, body: b }) => {
    await ws.reactions.react(await ws.person(p.workspaceUserId), params.messageId, b);
    res.status(204).end();
  });
  return r;
}
