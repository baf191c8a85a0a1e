/**
 * The workspace as a person uses it (appreg say, messages, channels, react; the console),
 * mounted at the management base path: the caller acts as their own workspace user. A
 * message starting with `/` is a slash command, as in the platform's client: the app with the
 * command gets SLASH_COMMAND and the answer says what the person sees.
 */
import { Router, type Request } from 'express';
import { invalidRequest } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { DeliveriesService } from '../../services/deliveries.js';
import type { createWorkspace } from '../../services/workspace/workspace.js';

type Workspace = ReturnType<typeof createWorkspace>;
import { jsonBody, rateLimit, type HitCounter } from '../middleware.js';
import { actAsAllowed, authed, principalOf } from './auth.js';
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
  const channelOf = (req: Request, workspaceId: string) => channelIdOf(ws, workspaceId, String(req.params.channel));

  r.get(
    '/channels',
    actAsAllowed,
    authed(async (req, res, p) =>
      res.json(await ws.channels.list(await ws.person(p.workspaceUserId), req.query.types)),
    ),
  );
  r.post(
    '/channels',
    writes,
    body,
    authed(async (req, res, p) =>
      res
        .status(201)
        .json(
          await ws.channels.create(await ws.person(p.workspaceUserId), (req.body ?? {}) as Record<string, unknown>),
        ),
    ),
  );
  r.get(
    '/channels/:channel/messages',
    actAsAllowed,
    // threads=true: thread replies too (what appreg watches for after a command)
    authed(async (req, res, p) =>
      res.json(
        await ws.messages.list(await ws.person(p.workspaceUserId), await channelOf(req, p.workspaceId), req.query, {
          forPerson: true,
          withReplies: req.query.threads === 'true',
        }),
      ),
    ),
  );
  r.get(
    '/channels/:channel/messages/:messageId/replies',
    actAsAllowed,
    authed(async (req, res, p) =>
      res.json(
        await ws.messages.replies(
          await ws.person(p.workspaceUserId),
          await channelOf(req, p.workspaceId),
          String(req.params.messageId),
          req.query,
          { forPerson: true },
        ),
      ),
    ),
  );
  r.get(
    '/users',
    actAsAllowed,
    authed(async (_req, res, p) => res.json(await ws.users.list(await ws.person(p.workspaceUserId)))),
  );
  r.post(
    '/channels/:channel/messages',
    actAsAllowed,
    writes,
    body,
    authed(async (req, res, p) => {
      const b = (req.body ?? {}) as Record<string, unknown>;
      if (typeof b.text !== 'string' || !b.text.trim())
        throw invalidRequest('Send {"text"} (and "threadRootId" for a thread reply).', [
          { pointer: '/text', message: 'is required' },
        ]);
      if (b.threadRootId !== undefined && typeof b.threadRootId !== 'string')
        throw invalidRequest('threadRootId must be a message id.');
      if (b.appId !== undefined && (typeof b.appId !== 'string' || !b.appId))
        throw invalidRequest('appId must be the id of the app whose command it is.', [
          { pointer: '/appId', message: 'must be an app id' },
        ]);
      const channelId = await channelOf(req, p.workspaceId);
      const slash = SLASH.exec(b.text.trim());
      if (slash) {
        // the person must be able to see the channel the command is typed in
        const ch = await ws.channels.visible(await ws.person(p.workspaceUserId), channelId);
        const delivery = await deps.deliveries.invokeSlashCommand(p, {
          command: must(slash[1]),
          text: slash[2] ?? '',
          channelId: ch.id,
          threadRootId: b.threadRootId,
          appId: b.appId as string | undefined,
        });
        res.status(201).json({ kind: 'slash-command', channelId: ch.id, delivery });
        return;
      }
      const message = await ws.postAsUser(p.workspaceUserId, channelId, { text: b.text, threadRootId: b.threadRootId });
      res.status(201).json({ kind: 'message', message });
    }),
  );
  r.post(
    '/messages/:messageId/reactions',
    actAsAllowed,
    writes,
    body,
    authed(async (req, res, p) => {
      await ws.reactions.react(await ws.person(p.workspaceUserId), String(req.params.messageId), req.body);
      res.status(204).end();
    }),
  );
  return r;
}
