/**
 * The console's page for the workspace's channels and user groups (docs/protocol.md §2.8), acting
 * as the signed-in person through the same workspace services as the management API: archive and
 * delete a channel (deleting asks first), create and change a user group. Every POST passes the
 * CSRF check; a refusal (4xx) is the page again with the reason and what the form held.
 */
import { Router, type Request, type Response } from 'express';
import { AppError, toErrorResponse } from '../../../errors.js';
import { confirmPage } from '../../pages/console/apps.js';
import {
  MANAGE_PATH,
  managePage,
  type GroupFields,
  type ManagedChannel,
  type ManageView,
} from '../../pages/console/manage.js';
import { handled, seeOther, sendConsolePage } from './common.js';
import type { ConsoleBase, ConsoleHandler, Form, Signed } from './common.js';
import type { Workspace } from './workspace-view.js';

const NOTICES: Record<string, string> = {
  archived: 'The channel is archived.',
  deleted: 'The channel and its messages are deleted.',
  created: 'The group is created.',
  saved: 'The group is saved.',
};

/** A group form's fields as the service reads them: members from the checkboxes, disabled from its box. */
function groupBody(b: Form, creating: boolean): GroupFields {
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  const members = b.members === undefined ? [] : Array.isArray(b.members) ? b.members : [b.members];
  const out: GroupFields = {
    name: text(b.name).trim(),
    description: text(b.description).trim(),
    workspaceUserIds: members.map(String),
    disabled: b.disabled === 'true',
  };
  const handle = text(b.handle).trim().replace(/^@/, '');
  if (handle || !creating) out.handle = handle;
  return out;
}

export function consoleManageRoutes(deps: { base: ConsoleBase; workspace: Workspace }): Router {
  const { base, workspace: ws } = deps;
  const r = Router();
  const parsed = base.form('32kb', 400);
  const post = (path: string, fn: ConsoleHandler) => r.post(path, base.signedIn, parsed, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const shell = (s: Signed) => ({ ...s.shell, section: 'workspace' as const });
  const actor = (s: Signed) => ws.person(s.principal.workspaceUserId);

  async function view(s: Signed, extra: Partial<ManageView> = {}): Promise<ManageView> {
    const me = await actor(s);
    const list = await ws.channels.list(me, 'PUBLIC,PRIVATE');
    const channels: ManagedChannel[] = list.flatMap(({ channel: c }) =>
      c.channelType === 'PUBLIC' || c.channelType === 'PRIVATE'
        ? [
            {
              id: c.id,
              name: c.name ?? '',
              type: c.channelType,
              archived: c.isArchived,
              canArchive: c.isMember && !c.isMain && !c.isArchived,
              canDelete: c.addedById === me.userId && !c.isInitial,
            },
          ]
        : [],
    );
    const people = (await ws.users.usersOf(s.principal.workspaceId)).map((u) => ({
      id: u.id,
      name: u.isBot ? `${u.name} (app)` : u.name,
    }));
    return { channels, groups: await ws.profiles.listGroups(me), people, ...extra };
  }

  /** Run `fn`, then see the page with `notice`; a refusal (4xx) is the page again with the reason. */
  const orPage = async (
    res: Response,
    s: Signed,
    notice: string,
    fn: () => Promise<unknown>,
    again?: ManageView['again'],
  ) => {
    try {
      await fn();
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      return sendConsolePage(
        res,
        toErrorResponse(e).status,
        managePage(shell(s), await view(s, { error: e.message, again })),
      );
    }
    seeOther(res, `${MANAGE_PATH}?done=${notice}`);
  };

  get(MANAGE_PATH, async (req, res, s) => {
    const done = typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined;
    sendConsolePage(res, 200, managePage(shell(s), await view(s, done ? { notice: done } : {})));
  });
  post(`${MANAGE_PATH}/channels/:channelId/archive`, (req, res, s) =>
    orPage(res, s, 'archived', async () => ws.channels.archive(await actor(s), String(req.params.channelId))),
  );
  get(`${MANAGE_PATH}/channels/:channelId/delete`, async (req, res, s) => {
    const ch = await ws.channels.visible(await actor(s), String(req.params.channelId));
    const action = `${MANAGE_PATH}/channels/${encodeURIComponent(ch.id)}/delete`;
    sendConsolePage(
      res,
      200,
      confirmPage(shell(s), {
        title: `Delete #${ch.name ?? ch.id}?`,
        message:
          'The channel and every message in it are removed for good; apps subscribed to CHANNEL_DELETED hear of it.',
        action,
        label: 'Delete channel',
        cancelHref: MANAGE_PATH,
      }),
    );
  });
  post(`${MANAGE_PATH}/channels/:channelId/delete`, (req, res, s) =>
    orPage(res, s, 'deleted', () => ws.deleteChannel(s.principal.workspaceUserId, String(req.params.channelId))),
  );
  post(`${MANAGE_PATH}/groups`, async (_req, res, s, form) => {
    const body = groupBody(form, true);
    await orPage(res, s, 'created', async () => ws.profiles.createGroup(await actor(s), body), {
      group: 'new',
      fields: body,
    });
  });
  post(`${MANAGE_PATH}/groups/:groupId`, async (req, res, s, form) => {
    const id = String(req.params.groupId);
    const body = groupBody(form, false);
    await orPage(res, s, 'saved', async () => ws.profiles.updateGroup(await actor(s), id, body), {
      group: id,
      fields: body,
    });
  });
  return r;
}
