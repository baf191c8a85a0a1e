/**
 * The workspace in the console, acting as the signed-in person: channels, a
 * channel's messages and threads (live: server-sent events fed by the workspace's message
 * changes, passed in by app.ts), the composer (a message, or a /command to the app that has
 * it), an app's blocks and their actions (BLOCK_INTERACTION), and the views (modals) apps open
 * in their answers, submitted or closed with VIEW_ACTION. Every POST passes the CSRF check.
 */
import { Router, type Request, type Response } from 'express';
import type { Clock } from '../../../clock.js';
import { AppError, invalidRequest, notFound, toErrorResponse } from '../../../errors.js';
import type { DeliveriesService } from '../../../services/deliveries.js';
import type { MessageRecord } from '../../../model/workspace.js';
import {
  modalHtml,
  timeline,
  workspacePage,
  type ReactionSummary,
  type TimelineItem,
} from '../../pages/console/workspace.js';
import { createLiveStreams, cursorOf, sse, versionOf } from './live.js';
import { handled, seeOther, sendConsolePage, type ConsoleBase, type ConsoleHandler, type Signed } from './common.js';
import type { PersonState } from '../../person-state.js';
import { stateOf } from './view-state.js';
import { channelHref, workspaceView, type People, type Workspace } from './workspace-view.js';
import { appInteractions, interactionOf, pickedIn } from './interactions.js';
import type { Choice } from '../../../model/workspace.js';
import { must } from '../../../must.js';
import { recordOr } from '../../../unknown-values.js';

const SHOWN = 100;
const GATHER_MS = 100;
const SLASH = /^(\/[A-Za-z0-9_-]{1,32})(?:\s+([\s\S]*))?$/;

export interface ConsoleWorkspaceDeps {
  base: ConsoleBase;
  workspace: Workspace;
  deliveries: Pick<DeliveriesService, 'invokeSlashCommand' | 'interact' | 'appsFor'>;
  state: PersonState;
  /** The live timeline's gathering and keep-alive. */
  clock: Clock;
  /** A modal closed without telling the app (a recording has it as a step). */
  onViewClosed?(s: Signed): void;
}

/** A message's reactions grouped by emoji, in the order each was first given; `me` is the person. */
function reactionsOf(rec: MessageRecord, who: People, me: string): ReactionSummary[] {
  const by = new Map<string, ReactionSummary>();
  for (const r of rec.reactions) {
    const sum = by.get(r.code) ?? { code: r.code, count: 0, who: [], mine: false };
    sum.count++;
    sum.who.push(who.name(r.user));
    sum.mine ||= r.user === me;
    by.set(r.code, sum);
  }
  return [...by.values()];
}

const one = (v: unknown, max = 200): string | undefined => (typeof v === 'string' && v ? v.slice(0, max) : undefined);

export function consoleWorkspaceRoutes(deps: ConsoleWorkspaceDeps): { router: Router; endStreams(): void } {
  const { base, workspace: ws, deliveries, state } = deps;
  const r = Router();
  const parsed = base.form('64kb', 200);
  const post = (path: string, fn: ConsoleHandler) => r.post(path, base.signedIn, parsed, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const shell = (s: Signed) => ({ ...s.shell, section: 'workspace' as const });
  const { actor, people, label, channels: channelsOf, menus } = workspaceView(ws, deliveries);
  const { follow, interactWith } = appInteractions(deliveries, state);
  const enc = encodeURIComponent;

  function toItem(
    rec: MessageRecord,
    view: Record<string, unknown>,
    thread: boolean,
    who: People,
    picks: Choice[],
    me: string,
  ): TimelineItem {
    // the message as the platform API shows it (services/workspace/message-view.ts): its files, a root's reply count
    const replies = recordOr(view.threadRootInfo)?.repliesCount;
    return {
      id: rec.id,
      author: who.name(rec.author),
      app: !!rec.appId || who.isBot(rec.author),
      atMilli: rec.timestampMilli,
      text: rec.text,
      blocks: rec.blocks,
      attachments: rec.attachments,
      files: (Array.isArray(view.files) ? view.files : []).map((given) => {
        const f = recordOr(given) ?? {};
        return { name: String(f.name ?? f.id), mimeType: String(f.mimeType ?? '') };
      }),
      ephemeral: !!rec.ephemeralTo,
      edited: rec.edited,
      ...(!thread && !rec.ephemeralTo
        ? { replies: { count: typeof replies === 'number' ? replies : 0, href: channelHref(rec.channelId, rec.id) } }
        : {}),
      ...(rec.reactions.length ? { reactions: reactionsOf(rec, who, me) } : {}),
      ...(rec.ephemeralTo ? {} : { reactUrl: `${channelHref(rec.channelId)}/messages/${enc(rec.id)}/reactions` }),
      ...(rec.appId
        ? {
            actionUrl: `${channelHref(rec.channelId)}/messages/${enc(rec.id)}/actions`,
            picked: pickedIn(picks, rec.id),
          }
        : {}),
      shortcutUrl: `${channelHref(rec.channelId)}/messages/${enc(rec.id)}/shortcuts`,
    };
  }

  /** The messages and the person's notes (of the channel, or of the thread) as the page shows them. */
  async function items(s: Signed, who: People, channelId: string, rootId?: string) {
    const [t, picks] = await Promise.all([
      ws.messages.timeline(await actor(s), channelId, { rootId, limit: SHOWN }),
      state.picks(s.principal.workspaceUserId),
    ]);
    const me = s.principal.workspaceUserId;
    const list = t.messages.map((m) => toItem(m.record, m.view, !!rootId, who, picks, me));
    for (const n of await state.notes(s.principal.workspaceUserId, t.channel.id, rootId))
      list.push({
        id: n.id,
        author: n.from,
        app: true,
        atMilli: n.atMilli,
        text: n.text,
        blocks: [],
        attachments: [],
        files: [],
        ephemeral: true,
      });
    list.sort((a, b) => a.atMilli - b.atMilli);
    return { channel: t.channel, items: list };
  }

  /** The stream's cursor for a timeline: a fingerprint of the items the page shows. */
  const versionOfItems = (list: TimelineItem[]) => versionOf(JSON.stringify(list));

  async function page(
    res: Response,
    s: Signed,
    channelId: string,
    rootId?: string,
    error?: { status: number; message: string },
  ) {
    const me = s.principal.workspaceUserId;
    const who = await people(s);
    const { channel, items: list } = await items(s, who, channelId, rootId);
    const stream = new URLSearchParams({ ...(rootId ? { thread: rootId } : {}), since: versionOfItems(list) });
    const top = await state.top(me);
    const userName = who.name;
    const html = workspacePage(shell(s), {
      channels: await channelsOf(s, who),
      ...(await menus(s)),
      channel: { id: channel.id, label: label(channel, me, who), ...(channel.isArchived ? { archived: true } : {}) },
      ...(rootId ? { thread: { rootId, back: channelHref(channel.id) } } : {}),
      items: list,
      stream: `${channelHref(channel.id)}/events?${stream}`,
      userName,
      error: error?.message,
      ...(top
        ? {
            modal: {
              html: modalHtml(top.view, s.shell.csrf, userName, pickedIn(await state.picks(me), String(top.view.id))),
            },
          }
        : {}),
    });
    sendConsolePage(res, error?.status ?? 200, html);
  }

  /** Run `fn`; a refusal (4xx) is the page again with the reason, at its status. */
  const orPage = async (
    res: Response,
    s: Signed,
    channelId: string,
    rootId: string | undefined,
    fn: () => Promise<void>,
  ) => {
    try {
      await fn();
    } catch (e) {
      if (!(e instanceof AppError) || e.status >= 500) throw e;
      await page(res, s, channelId, rootId, { status: toErrorResponse(e).status, message: e.message });
    }
  };

  get('/console/channels', async (_req, res, s) => {
    await ws.channels.ensureWorkspace(s.principal.workspaceId);
    const general = await ws.channels.byName(s.principal.workspaceId, 'general');
    if (!general) throw notFound('Channel');
    seeOther(res, channelHref(general.id));
  });
  get('/console/channels/:channelId', (req, res, s) => page(res, s, String(req.params.channelId)));
  get('/console/channels/:channelId/threads/:rootId', (req, res, s) =>
    page(res, s, String(req.params.channelId), String(req.params.rootId)),
  );

  post('/console/channels/:channelId/messages', async (req, res, s, b) => {
    const channelId = String(req.params.channelId);
    const rootId = one(b.threadRootId);
    const back = channelHref(channelId, rootId);
    await orPage(res, s, channelId, rootId, async () => {
      const text = typeof b.text === 'string' ? b.text.trim() : '';
      if (!text) throw invalidRequest('Write a message first.');
      const slash = SLASH.exec(text);
      if (!slash) {
        await ws.postAsUser(s.principal.workspaceUserId, channelId, {
          text,
          ...(rootId ? { threadRootId: rootId } : {}),
        });
        return seeOther(res, back);
      }
      const ch = await ws.channels.visible(await actor(s), channelId);
      const rec = await deliveries.invokeSlashCommand(s.principal, {
        command: must(slash[1]),
        text: slash[2] ?? '',
        channelId: ch.id,
        ...(rootId ? { threadRootId: rootId } : {}),
      });
      seeOther(res, await follow(s, rec, { channelId: ch.id, returnTo: back, ...(rootId ? { rootId } : {}) }));
    });
  });

  /** A click or a choice in an app's message: BLOCK_INTERACTION to the app that posted it. */
  post('/console/channels/:channelId/messages/:messageId/actions', async (req, res, s, b) => {
    const channelId = String(req.params.channelId);
    await orPage(res, s, channelId, undefined, async () => {
      const { m } = await ws.messages.visibleMessage(await actor(s), channelId, String(req.params.messageId));
      if (!m.appId) throw invalidRequest('Only an app’s message has actions.');
      const used = interactionOf(b);
      const back = channelHref(channelId, m.threadRootId);
      const rec = await interactWith(
        s,
        m.appId,
        { sourceType: m.ephemeralTo ? 'EPHEMERAL_MESSAGE' : 'MESSAGE', sourceId: m.id, channelId },
        used,
      );
      seeOther(res, await follow(s, rec, { channelId, returnTo: back }));
    });
  });

  /**
   * The modal on top: Submit (VIEW_ACTION SUBMIT with its state), Close (VIEW_ACTION CLOSE when the view asks), or one
   * of its buttons.
   */
  post('/console/views/:viewId', async (req, res, s, b) => {
    const me = s.principal.workspaceUserId;
    const top = await state.top(me);
    if (!top || String(top.view.id) !== req.params.viewId) return seeOther(res, top?.returnTo ?? '/console/channels');
    const view: Record<string, unknown> = { ...top.view, state: stateOf(top.view, b) };
    const ctx = { channelId: top.channelId, returnTo: top.returnTo };
    if (b.do === 'close') {
      await state.close(me);
      if (view.notifyOnClose === true)
        await follow(
          s,
          await deliveries.interact(s.principal, top.appId, 'view-action', {
            viewActionType: 'CLOSE',
            view,
            channelId: top.channelId,
          }),
          ctx,
        );
      else deps.onViewClosed?.(s);
      return seeOther(res, (await state.top(me))?.returnTo ?? top.returnTo);
    }
    // what was typed stays when the app answers without a new view
    await state.keepState(me, String(top.view.id), view.state);
    if (b.act !== undefined) {
      // a choice not made (a date range with one date) is the page again, the modal open, with the reason
      return orPage(res, s, top.channelId, undefined, async () => {
        const rec = await interactWith(
          s,
          top.appId,
          { sourceType: 'VIEW', sourceId: String(view.id), view, channelId: top.channelId },
          interactionOf(b, 'view'),
        );
        seeOther(res, await follow(s, rec, ctx));
      });
    }
    const rec = await deliveries.interact(s.principal, top.appId, 'view-action', {
      viewActionType: 'SUBMIT',
      view,
      channelId: top.channelId,
    });
    seeOther(res, await follow(s, rec, ctx, true));
  });

  const live = createLiveStreams(GATHER_MS, deps.clock);
  get('/console/channels/:channelId/events', async (req, res, s) => {
    const ch = await ws.channels.visible(await actor(s), String(req.params.channelId));
    const rootId = one(req.query.thread);
    /** The timeline as it is now, unless it is still the one the page shows (`shown`, its cursor). */
    const send = async (shown?: string) => {
      try {
        const who = await people(s);
        const { items: list } = await items(s, who, ch.id, rootId);
        const version = versionOfItems(list);
        if (version === shown) return;
        const { messageShortcuts } = await menus(s);
        res.write(
          sse(
            'timeline',
            {
              html: timeline(list, {
                csrf: s.shell.csrf,
                userName: who.name,
                messageShortcuts,
                archived: !!ch.isArchived,
              }),
            },
            version,
          ),
        );
      } catch {
        res.end(); // the channel or thread is gone, or no longer visible
      }
    };
    live.open(
      res,
      {
        subscribe: (wake) =>
          ws.onMessageChange((m) => {
            if (m.channelId === ch.id && (!rootId || m.id === rootId || m.threadRootId === rootId)) wake();
          }, wake), // notices lost: the timeline is sent again whole, as after any change
        flush: () => send(),
        // what changed between the page's render (or the last timeline the browser got) and now
        resume: (cursor) => (cursor === undefined ? undefined : send(cursor)),
      },
      () => base.stillSignedIn(req),
      cursorOf(req),
    );
  });

  return { router: r, endStreams: live.endAll };
}
