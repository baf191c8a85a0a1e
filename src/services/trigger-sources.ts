/**
 * What a test block interaction (deliver-test --kind block-interaction; docs/protocol.md §2.5)
 * is about, made real before it is sent, so that an app that reads it (the SDK's
 * ctx.fetchMessage, ctx.say in the message's thread) finds it:
 *
 * - a message named by `sourceId` must be one the caller can see; the trigger happens in its
 *   channel, with its kind (MESSAGE or EPHEMERAL_MESSAGE);
 * - without one, a message carrying the clicked button is posted first, as the app's bot when
 *   the app is installed in the caller's workspace (else as the caller), ephemeral to the caller
 *   for EPHEMERAL_MESSAGE;
 * - on a view, the view given keeps its id (one is made when it has none); without one, the
 *   home view the app published for the caller, else a made-up modal. `sourceId` is the view's id.
 */
import { newId } from '../crypto.js';
import { AppError, invalidRequest } from '../errors.js';
import { TEST_ON_ACTION, type TriggerFields } from '../delivery/payloads.js';
import type { AppsService } from './apps.js';
import type { Principal } from './identity.js';
import type { Grants } from './oauth/grants.js';
import { initialChannelId } from '../model/workspace.js';
import type { Actor } from './workspace/users.js';
import type { createWorkspace } from './workspace/workspace.js';

type Workspace = ReturnType<typeof createWorkspace>;

export function createTriggerSources(deps: {
  workspace: Workspace;
  grants: Pick<Grants, 'installationOf'>;
  apps: Pick<AppsService, 'owned'>;
}) {
  const { workspace: ws, grants, apps } = deps;

  /** Post, as the app's bot when it can see the channel, else as `me`. */
  async function postAs(bot: Actor | undefined, me: Actor, channelId: string, body: Record<string, unknown>) {
    if (bot) {
      try {
        return await ws.messages.post(bot, channelId, body);
      } catch (e) {
        // the bot does not see that channel: the caller posts it
        if (!(e instanceof AppError) || e.status !== 404) throw e;
      }
    }
    return ws.messages.post(me, channelId, body);
  }

  /**
   * Who the trigger is by: the caller, or `asUser`, a person of the caller's workspace (a bot
   * user, or anyone else, is 400). The app's owner may already send any body (`payload`), so
   * naming another user gives them nothing new: the body is built, and the source checked, as
   * that user would have it.
   */
  async function actorOf(p: Principal, input: { kind: string; asUser?: string | null }): Promise<string> {
    if (input.asUser === undefined || input.asUser === null) return p.workspaceUserId;
    if (!input.asUser)
      throw invalidRequest('asUser must be a workspace user id.', [
        { pointer: '/asUser', message: 'must be a workspace user id' },
      ]);
    if (input.kind === 'event')
      throw invalidRequest(
        'An event is sent by the workspace, not by a user: name the user in its body instead of asUser.',
        [{ pointer: '/asUser', message: 'is not for events' }],
      );
    const u = await ws.users.member(p.workspaceId, input.asUser);
    if (!u || u.isBot)
      throw invalidRequest(`asUser ${input.asUser} is not a person of your workspace.`, [
        { pointer: '/asUser', message: 'is not a person of your workspace' },
      ]);
    return u.id;
  }

  /**
   * The trigger `input` of `kind` by `p` (or by its `asUser`), with that user checked and its
   * source made real (block interactions; others as given).
   */
  async function prepare<T extends TriggerFields & { appId: string; kind: string; asUser?: string }>(
    p: Principal,
    input: T,
  ): Promise<T> {
    const userId = await actorOf(p, input);
    if (input.asUser !== undefined && input.asUser !== null) input = { ...input, asUser: userId };
    if (input.kind !== 'block-interaction' || input.payload) return input;
    const sourceType = input.sourceType ?? 'MESSAGE';
    if (sourceType === 'VIEW') {
      if (input.view)
        return { ...input, view: { ...input.view, id: input.view.id ?? input.sourceId ?? newId('view', 8) } };
      const home = await ws.profiles.homeView(input.appId, userId);
      return home ? { ...input, view: home } : input;
    }
    const me = await ws.person(userId);
    if (input.sourceId !== undefined) {
      const { m } = await ws.messages.visibleMessage(me, undefined, input.sourceId);
      if (input.channelId !== undefined && input.channelId !== m.channelId)
        throw invalidRequest(`Message ${m.id} is in another channel than channelId.`, [
          { pointer: '/channelId', message: "is not the message's channel" },
        ]);
      return { ...input, channelId: m.channelId, sourceType: m.ephemeralTo ? 'EPHEMERAL_MESSAGE' : 'MESSAGE' };
    }
    const app = await apps.owned(p, input.appId);
    if (!app.manifest.blockInteraction?.url) return input; // refused when it is built: nothing posted for nothing
    await ws.channels.ensureWorkspace(p.workspaceId);
    const channelId = input.channelId ?? initialChannelId(p.workspaceId, 'general');
    const onAction = input.onAction ?? TEST_ON_ACTION;
    const value = input.value ?? '';
    const plain = (text: string) => ({ type: 'plain_text', text });
    // checkboxes, with the values sent ticked: the message holds the element the interaction is about
    const element =
      input.actionType === 'CHECKBOXES' && Array.isArray(input.values)
        ? {
            type: 'checkboxes',
            onAction,
            options: input.values.map((v) => ({ text: plain(String(v) || ' '), value: String(v) })),
          }
        : { type: 'button', onAction, value, text: plain(value || onAction) };
    const bot = (await grants.installationOf(app.id, p.workspaceId))?.botUserId;
    const posted = await postAs(
      bot ? { workspaceId: p.workspaceId, userId: bot, appId: app.id } : undefined,
      me,
      channelId,
      {
        text: `A message to click in, posted by appreg deliver-test for ${String(app.manifest.displayName ?? app.manifest.name)}`,
        blocks: [
          {
            type: 'actions',
            elements: [element],
          },
        ],
        ...(sourceType === 'EPHEMERAL_MESSAGE' ? { ephemeral: { sendToUsers: [userId] } } : {}),
      },
    );
    return { ...input, channelId: String(posted.channelId), sourceId: String(posted.id), sourceType, onAction };
  }

  return { prepare };
}

export type TriggerSources = ReturnType<typeof createTriggerSources>;
