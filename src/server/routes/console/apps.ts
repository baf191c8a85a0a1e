/**
 * The console's Apps: GET / lists the signed-in user's apps; create and edit from
 * a manifest pasted or uploaded (problems shown inline at their JSON pointers); show, rotate,
 * publish, unpublish, delete. Every POST passes the console's CSRF check first.
 */
import express, { Router, type Request, type Response } from 'express';
import multer from 'multer';
import { AppError, notFound } from '../../../errors.js';
import type { AppsService } from '../../../services/apps.js';
import { checkManifest } from '../../../validation/manifest.js';
import type { Grants } from '../../../services/oauth/grants.js';
import type { Revocation } from '../../../services/oauth/revocation.js';
import { appFormPage, appPage, appsListPage, confirmPage, type AppPageView } from '../../pages/console/apps.js';
import { jsonParseProblem } from '../../pages/console/manifest-view.js';
import { FORM_TYPE, handled, seeOther, sendConsolePage } from './common.js';
import type { ConsoleBase, ConsoleHandler, Form, Signed } from './common.js';
import { must } from '../../../must.js';
import { recordOr, stringOr } from '../../../unknown-values.js';

const PAGE_SIZE = 100;
/** The strings of a list field of the app object (docs/protocol.md §2): its scopes, its redirect URLs. */
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
const SECRET_FIELDS = ['id', 'published', 'clientSecret', 'appKey', 'signingSecret'];

export interface ConsoleAppsDeps {
  base: ConsoleBase;
  apps: AppsService;
  grants: Pick<Grants, 'installationOf'>;
  revocation: Pick<Revocation, 'uninstallAs'>;
  socketStatus(appId: string): Promise<{ connections: number; queuedEvents: number }>;
  bodyLimitBytes: number;
  /** The operator's allowInsecureRedirects: whether a manifest may name http redirect URLs beyond loopback. */
  allowInsecureRedirects: boolean;
}

export function consoleAppsRoutes(deps: ConsoleAppsDeps): Router {
  const { base, apps, grants } = deps;
  const r = Router();
  const multipart = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: deps.bodyLimitBytes, fieldSize: deps.bodyLimitBytes, files: 1, fields: 4, parts: 6 },
  }).single('file');
  const manifestForm = express.urlencoded({ extended: false, limit: deps.bodyLimitBytes, parameterLimit: 4 });
  // the manifest form: multipart (a file chosen) or urlencoded (pasted)
  const upload = base.parsedBy([FORM_TYPE, 'multipart/form-data'], (req, res, next) =>
    req.is('multipart/form-data') ? multipart(req, res, next) : manifestForm(req, res, next),
  );
  const form = base.form('8kb', 20);
  const post = (path: string, parser: express.RequestHandler, fn: ConsoleHandler) =>
    r.post(path, base.signedIn, parser, base.csrf, handled(base, fn));
  const get = (path: string, fn: (req: Request, res: Response, s: Signed) => unknown) =>
    r.get(path, base.signedIn, handled(base, fn));
  const id = (req: Request) => String(req.params.appId);

  const installedIn = async (s: Signed, appId: string) => {
    const found = await Promise.all(s.shell.workspaces.map((w) => grants.installationOf(appId, w.id)));
    return s.shell.workspaces.filter((_w, i) => found[i]).map((w) => ({ workspaceId: w.id, name: w.name }));
  };

  /** The app's page; `reveal` shows its current secrets (the Show secrets button). */
  async function view(
    s: Signed,
    appId: string,
    extra: Partial<AppPageView> = {},
    reveal = false,
  ): Promise<AppPageView> {
    const app = await apps.get(s.principal, appId);
    // the app object of docs/protocol.md §2 with its secrets: its arrays and objects are always present
    const [clientSecret, appKey, signingSecret] = [app.clientSecret, app.appKey, app.signingSecret].map(stringOr);
    const status = await deps.socketStatus(appId);
    const redirect = stringOr(strings(app.redirectUrls)[0]);
    let installUrl: string | undefined;
    if (redirect) {
      const scopes = recordOr(app.scopes);
      const q = new URLSearchParams({
        clientId: app.id,
        scopes: [...strings(scopes?.userScopes), ...strings(scopes?.botScopes).map((x) => `bot:${x}`)].join(','),
        redirectUrl: redirect,
        state: 'console',
        defaultWorkspaceId: s.principal.workspaceId,
      });
      installUrl = `/access-request?${q}`;
    }
    for (const k of SECRET_FIELDS.slice(2)) delete app[k];
    const secrets = reveal
      ? { clientSecret: must(clientSecret), appKey: must(appKey), signingSecret: must(signingSecret) }
      : undefined;
    return {
      app,
      installedIn: await installedIn(s, appId),
      connections: status.connections,
      queuedEvents: status.queuedEvents,
      installUrl,
      secrets,
      ...extra,
    };
  }

  get('/', async (req, res, s) => {
    const all = await apps.list(s.principal);
    const pages = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
    const page = Math.min(pages, Math.max(1, Number.parseInt(String(req.query.page ?? '1'), 10) || 1));
    const rows = await Promise.all(
      all.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map(async (a) => ({
        id: a.id,
        name: String(a.name),
        displayName: String(a.displayName),
        socketMode: a.socketMode === true,
        published: a.published,
        installedIn: (await installedIn(s, a.id)).map((w) => w.name),
        connections: a.socketMode === true ? (await deps.socketStatus(a.id)).connections : 0,
      })),
    );
    sendConsolePage(res, 200, appsListPage(s.shell, { rows, page, pages, total: all.length }));
  });

  get('/console/apps/new', (_req, res, s) =>
    sendConsolePage(res, 200, appFormPage(s.shell, { mode: 'create', text: '' })),
  );

  /** Create or update from the form: the manifest problems come back as the form with them inline. */
  async function fromForm(req: Request, res: Response, s: Signed, b: Form, mode: 'create' | 'edit') {
    const text = req.file ? req.file.buffer.toString('utf8') : typeof b.manifest === 'string' ? b.manifest : '';
    const formBase = { mode, ...(mode === 'edit' ? { appId: id(req) } : {}), text };
    if (!text.trim())
      return sendConsolePage(
        res,
        400,
        appFormPage(s.shell, { ...formBase, message: 'Paste a manifest or choose its file.' }),
      );
    const problem = jsonParseProblem(text);
    if (problem) return sendConsolePage(res, 400, appFormPage(s.shell, { ...formBase, parseProblem: problem }));
    const parsed: unknown = JSON.parse(text);
    try {
      const { manifest, warnings } = checkManifest(parsed, deps);
      const app =
        mode === 'create'
          ? await apps.create(s.principal, manifest)
          : await apps.update(s.principal, id(req), manifest);
      sendConsolePage(
        res,
        mode === 'create' ? 201 : 200,
        appPage(
          s.shell,
          await view(s, app.id, {
            notice: mode === 'create' ? 'App created.' : 'Manifest saved.',
            warnings,
          }),
        ),
      );
    } catch (e) {
      if (!(e instanceof AppError) || e.code !== 'invalid_manifest') throw e;
      const errors = (e.details ?? []).map((d) => ({ pointer: String(d.pointer ?? ''), message: String(d.message) }));
      sendConsolePage(res, 400, appFormPage(s.shell, { ...formBase, parsed, errors, message: e.message }));
    }
  }

  post('/console/apps', upload, (req, res, s, form) => fromForm(req, res, s, form, 'create'));
  get('/console/apps/:appId', async (req, res, s) =>
    sendConsolePage(res, 200, appPage(s.shell, await view(s, id(req)))),
  );
  get('/console/apps/:appId/edit', async (req, res, s) => {
    const app: Record<string, unknown> = await apps.get(s.principal, id(req));
    for (const k of SECRET_FIELDS) delete app[k];
    sendConsolePage(
      res,
      200,
      appFormPage(s.shell, { mode: 'edit', appId: id(req), text: JSON.stringify(app, null, 2) }),
    );
  });
  post('/console/apps/:appId/edit', upload, (req, res, s, form) => fromForm(req, res, s, form, 'edit'));
  post('/console/apps/:appId/secrets', form, async (req, res, s) =>
    sendConsolePage(res, 200, appPage(s.shell, await view(s, id(req), {}, true))),
  );
  get('/console/apps/:appId/rotate', async (req, res, s) => {
    const app = await apps.get(s.principal, id(req));
    sendConsolePage(
      res,
      200,
      confirmPage(s.shell, {
        title: `Rotate the secrets of ${String(app.displayName)}?`,
        message: 'New client secret, app key and signing secret are made now; the current ones stop working at once.',
        action: `/console/apps/${app.id}/rotate`,
        label: 'Rotate secrets',
        cancelHref: `/console/apps/${app.id}`,
      }),
    );
  });
  post('/console/apps/:appId/rotate', form, async (req, res, s) => {
    const secrets = await apps.rotateSecrets(s.principal, id(req));
    sendConsolePage(
      res,
      200,
      appPage(
        s.shell,
        await view(s, id(req), { secrets, notice: 'Secrets rotated: the previous ones no longer work.' }),
      ),
    );
  });
  post('/console/apps/:appId/publish', form, async (req, res, s) => {
    await apps.setPublished(s.principal, id(req), true);
    seeOther(res, `/console/apps/${encodeURIComponent(id(req))}`);
  });
  post('/console/apps/:appId/unpublish', form, async (req, res, s) => {
    await apps.setPublished(s.principal, id(req), false);
    seeOther(res, `/console/apps/${encodeURIComponent(id(req))}`);
  });
  get('/console/apps/:appId/delete', async (req, res, s) => {
    const app = await apps.get(s.principal, id(req));
    sendConsolePage(
      res,
      200,
      confirmPage(s.shell, {
        title: `Delete ${String(app.displayName)}?`,
        message: 'The app, its secrets and its tokens are removed for good; deliveries to it stop.',
        action: `/console/apps/${app.id}/delete`,
        label: 'Delete app',
        cancelHref: `/console/apps/${app.id}`,
      }),
    );
  });
  get('/console/apps/:appId/installations/:workspaceId/uninstall', async (req, res, s) => {
    const app = await apps.get(s.principal, id(req));
    const ws = (await installedIn(s, app.id)).find((w) => w.workspaceId === req.params.workspaceId);
    if (!ws) throw notFound('Installation');
    const action = `/console/apps/${app.id}/installations/${encodeURIComponent(ws.workspaceId)}/uninstall`;
    sendConsolePage(
      res,
      200,
      confirmPage(s.shell, {
        title: `Uninstall ${String(app.displayName)} from ${ws.name}?`,
        message: 'Its bot and the tokens it holds in that workspace stop working; the app gets APP_UNINSTALLED.',
        action,
        label: 'Uninstall',
        cancelHref: `/console/apps/${app.id}`,
      }),
    );
  });
  post('/console/apps/:appId/installations/:workspaceId/uninstall', form, async (req, res, s) => {
    await deps.revocation.uninstallAs(s.principal, id(req), String(req.params.workspaceId));
    sendConsolePage(res, 200, appPage(s.shell, await view(s, id(req), { notice: 'Uninstalled.' })));
  });
  post('/console/apps/:appId/delete', form, async (req, res, s) => {
    await apps.remove(s.principal, id(req));
    seeOther(res, '/');
  });
  return r;
}
