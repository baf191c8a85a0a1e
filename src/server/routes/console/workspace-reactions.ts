/**
 * A person's reactions from the console's channel page: the emoji's button adds their reaction
 * (REACTION_ADDED to the apps that subscribe, as POST /v1/messages/{m}/reactions does) or takes
 * it back when it is theirs; then the channel (or the thread) again. Passes the CSRF check; an
 * archived channel's messages take none.
 */
import { Router } from 'express';
import { invalidRequest } from '../../../errors.js';
import { handled, seeOther, type ConsoleBase } from './common.js';
import { channelHref, type Workspace } from './workspace-view.js';

export function consoleReactionRoutes(deps: { base: ConsoleBase; workspace: Workspace }): Router {
  const { base, workspace: ws } = deps;
  const r = Router();
  r.post(
    '/console/channels/:channelId/messages/:messageId/reactions',
    base.signedIn,
    base.form('2kb', 5),
    base.csrf,
    handled(base, async (req, res, s, form) => {
      const me = await ws.person(s.principal.workspaceUserId);
      const { ch, m } = await ws.messages.visibleMessage(
        me,
        String(req.params.channelId),
        String(req.params.messageId),
      );
      if (ch.isArchived) throw invalidRequest('The channel is archived: its messages take no reactions.');
      const code = String(form.code ?? '');
      const mine = m.reactions.some((x) => x.user === me.userId && x.code === code);
      if (mine) await ws.reactions.unreact(me, m.id, { code });
      else await ws.reactions.react(me, m.id, { code });
      seeOther(res, channelHref(ch.id, m.threadRootId));
    }),
  );
  return r;
}
