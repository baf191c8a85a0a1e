/**
 * More of the apps in the console's workspace: global shortcuts from the channel's Shortcuts
 * menu and message shortcuts from a message's menu (SHORTCUT), a dynamic select loading its
 * options from the app (DYNAMIC_MENU, asked by the script; in a message, a modal or a home view), and an app's
 * home view (one form, like a modal without Submit), whose elements go to the app as
 * BLOCK_INTERACTION from a VIEW with the view's state. Every POST passes the CSRF check.
 */
import { Router, type Request, type Response } from 'express';
import { invalidRequest, notFound } from '../../../errors.js';
import type { DeliveriesService } from '../../../services/deliveries.js';
import { homePage, modalHtml } from '../../pages/console/workspace.js';
import { handled, seeOther, sendConsolePage } from './common.js';
import type { ConsoleBase, ConsoleHandler, Form, Signed } from './common.js';
import type { PersonState } from '../../person-state.js';
import { channelHref, workspaceView, type Workspace } from './workspace-view.js';
import { appInteractions, interactionOf, pickedIn } from './interactions.js';
import { stateOf } from './view-state.js';
import { itemsOf, recordOr } from '../../../unknown-values.js';

export interface ConsoleWorkspaceAppsDeps {
  base: ConsoleBase;
  workspace: Workspace;
  deliveries: Pick<DeliveriesService, 'invokeSlashCommand' | 'interact' | 'appsFor'>;
  state: PersonState;
}

const MAX_OPTIONS = 100;

/** The shortcut a menu's button named: {appId, name}. */
function shortcutOf(b: Form): { appId: string; name: string } {
  try {
    const v = recordOr(JSON.parse(String(b.shortcut ?? '')));
    if (typeof v?.appId === 'string' && typeof v.name === 'string') return { appId: v.appId, name: v.name };
  } catch {
    // refused below
  }
  throw invalidRequest('Choose one of the shortcuts of the menu.');
}

/** The options of an app's menu answer (`options`, or `optionGroups`/`option_groups`), as labels and values. */
function optionsOf(answer: unknown): Array<{ label: string; value: string }> {
  const a = recordOr(answer) ?? {};
  const text = (o: unknown) => {
    const t = recordOr(o)?.text;
    return typeof t === 'string' ? t : String(recordOr(t)?.text ?? '');
  };
  const one = (o: unknown, group = '') => ({
    label: `${group ? `${group}: ` : ''}${text(o)}`,
    value: String(recordOr(o)?.value ?? ''),
  });
  const flat = itemsOf(a.options).map((o) => one(o));
  // a group that is no object, or whose options are no list, offers nothing
  const grouped = itemsOf(a.optionGroups ?? a.option_groups).flatMap((g) =>
    itemsOf(recordOr(g)?.options).map((o) => one(o, text({ text: recordOr(g)?.label }))),
  );
  return [...flat, ...grouped].slice(0, MAX_OPTIONS);
}

export function consoleWorkspaceAppsRoutes(deps: ConsoleWorkspaceAppsDeps): Router {
  const { base, workspace: ws, deliveries, state } = deps;
  const r = Router();
  const parsed = base.form('16kb', 20);
  const viewForm = base.form('64kb', 200); // a home view is a form of many inputs
  const post = (path: string, fn: ConsoleHandler) => r.post(path, base.signedIn, parsed, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const { actor, people, channels, menus } = workspaceView(ws, deliveries);
  const { follow, interactWith } = appInteractions(deliveries, state);

  post('/console/channels/:channelId/shortcuts', async (req, res, s, b) => {
    const ch = await ws.channels.visible(await actor(s), String(req.params.channelId));
    const sc = shortcutOf(b);
    const rec = await deliveries.interact(s.principal, sc.appId, 'global-shortcut', {
      shortcut: sc.name,
      channelId: ch.id,
    });
    seeOther(res, await follow(s, rec, { channelId: ch.id, returnTo: channelHref(ch.id) }));
  });

  post('/console/channels/:channelId/messages/:messageId/shortcuts', async (req, res, s, b) => {
    const { ch, m } = await ws.messages.visibleMessage(
      await actor(s),
      String(req.params.channelId),
      String(req.params.messageId),
    );
    const sc = shortcutOf(b);
    const rec = await deliveries.interact(s.principal, sc.appId, 'message-shortcut', {
      shortcut: sc.name,
      messageId: m.id,
      channelId: ch.id,
    });
    seeOther(res, await follow(s, rec, { channelId: ch.id, returnTo: channelHref(ch.id, m.threadRootId) }));
  });

  /** A dynamic select in an app's message: its options, from the app (JSON for the script). */
  post('/console/channels/:channelId/messages/:messageId/menu', async (req, res, s, b) => {
    const { ch, m } = await ws.messages.visibleMessage(
      await actor(s),
      String(req.params.channelId),
      String(req.params.messageId),
    );
    if (!m.appId) throw invalidRequest('Only an app’s message has menus.');
    const onAction = typeof b.onAction === 'string' ? b.onAction.slice(0, 200) : '';
    const rec = await deliveries.interact(s.principal, m.appId, 'dynamic-menu', {
      onAction,
      query: typeof b.query === 'string' ? b.query.slice(0, 200) : '',
      sourceType: m.ephemeralTo ? 'EPHEMERAL_MESSAGE' : 'MESSAGE',
      sourceId: m.id,
      channelId: ch.id,
    });
    res.setHeader('cache-control', 'no-store');
    res.json({
      options: rec.state === 'delivered' ? optionsOf(rec.response) : [],
      ...(rec.ephemeralMessage ? { message: rec.ephemeralMessage } : {}),
    });
  });

  /** A dynamic select in the modal on top: its options, from the app that opened the view. */
  post('/console/views/:viewId/menu', async (req, res, s, b) => {
    const top = await state.top(s.principal.workspaceUserId);
    if (!top || String(top.view.id) !== req.params.viewId) throw notFound('Open view');
    const onAction = typeof b.onAction === 'string' ? b.onAction.slice(0, 200) : '';
    const rec = await deliveries.interact(s.principal, top.appId, 'dynamic-menu', {
      onAction,
      query: typeof b.query === 'string' ? b.query.slice(0, 200) : '',
      sourceType: 'VIEW',
      sourceId: String(top.view.id),
      view: top.view,
      channelId: top.channelId,
    });
    res.setHeader('cache-control', 'no-store');
    res.json({ options: rec.state === 'delivered' ? optionsOf(rec.response) : [] });
  });

  /** The app's home view for the person (published for them, else the manifest's default). */
  const homeOf = async (s: Signed, appId: string) => {
    const app = (await deliveries.appsFor(s.principal)).find((a) => a.id === appId);
    if (!app) throw notFound('App in this workspace');
    const published = await ws.profiles.homeView(app.id, s.principal.workspaceUserId);
    const view: Record<string, unknown> | undefined =
      published ??
      (app.manifest.defaultHomeView?.enabled
        ? { id: `home-${app.id}`, type: 'HOME', blocks: app.manifest.defaultHomeView.blocks }
        : undefined);
    if (!view) throw notFound('Home view');
    return { app, view };
  };

  get('/console/home/:appId', async (req, res, s) => {
    const { app, view } = await homeOf(s, String(req.params.appId));
    const me = s.principal.workspaceUserId;
    const [top, picks, kept] = await Promise.all([
      state.top(me),
      state.picks(me),
      state.homeState(me, String(view.id)),
    ]);
    const who = await people(s);
    const userName = who.name;
    const html = homePage(
      { ...s.shell, section: 'workspace' },
      {
        channels: await channels(s, who),
        homes: (await menus(s, app.id)).homes,
        userName,
        title: app.manifest.displayName,
        view: kept === undefined ? view : { ...view, state: kept },
        action: `/console/home/${encodeURIComponent(app.id)}/actions`,
        picked: pickedIn(picks, String(view.id)),
        ...(top
          ? { modal: { html: modalHtml(top.view, s.shell.csrf, userName, pickedIn(picks, String(top.view.id))) } }
          : {}),
      },
    );
    sendConsolePage(res, 200, html);
  });

  /** A dynamic select in the home view: its options, from the app. */
  post('/console/home/:appId/menu', async (req, res, s, b) => {
    const { app, view } = await homeOf(s, String(req.params.appId));
    const onAction = typeof b.onAction === 'string' ? b.onAction.slice(0, 200) : '';
    const rec = await deliveries.interact(s.principal, app.id, 'dynamic-menu', {
      onAction,
      query: typeof b.query === 'string' ? b.query.slice(0, 200) : '',
      sourceType: 'VIEW',
      sourceId: String(view.id),
      view,
    });
    res.setHeader('cache-control', 'no-store');
    res.json({ options: rec.state === 'delivered' ? optionsOf(rec.response) : [] });
  });

  /** A use of an element of the home view: BLOCK_INTERACTION from a VIEW, with the view's state as typed. */
  r.post(
    '/console/home/:appId/actions',
    base.signedIn,
    viewForm,
    base.csrf,
    handled(base, async (req, res, s, b) => {
      const { app, view } = await homeOf(s, String(req.params.appId));
      const used = interactionOf(b, 'view');
      const withState = { ...view, state: stateOf(view, b) };
      await state.keepHomeState(s.principal.workspaceUserId, String(view.id), withState.state);
      await ws.channels.ensureWorkspace(s.principal.workspaceId);
      const general = await ws.channels.byName(s.principal.workspaceId, 'general');
      const channelId = general?.id ?? '';
      const rec = await interactWith(
        s,
        app.id,
        { sourceType: 'VIEW', sourceId: String(view.id), view: withState, channelId },
        used,
      );
      seeOther(res, await follow(s, rec, { channelId, returnTo: `/console/home/${encodeURIComponent(app.id)}` }));
    }),
  );

  return r;
}
