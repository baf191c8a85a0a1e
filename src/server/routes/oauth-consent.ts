/**
 * The consent screen (docs/protocol.md §3, endpoint 7; docs/security.md §1 and §3), served by the daemon
 * at /access-request: validate clientId, redirectUrl and scopes first (an error page, never a
 * redirect), then a login form or the consent form; Allow/Cancel → 303 to the app.
 */
import { stringOr } from '../../unknown-values.js';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { IdentityService } from '../../services/identity.js';
import type {
  AuthorizationRequests,
  AuthRequest,
  AuthRequestParams,
} from '../../services/oauth/authorization-request.js';
import { newVisitorToken, type WebSessions } from '../../services/oauth/web-sessions.js';
import type { WorkspaceUserRecord } from '../../model/identity.js';
import { loginLimits, rateLimit, type HitCounter } from '../middleware.js';
import { sendErrorPage } from '../respond.js';
import {
  cookieValue,
  pageHeaders,
  redirect303,
  sendPage,
  setSessionCookie as writeSessionCookie,
} from '../pages/send.js';
import { errorPage } from '../pages/layout.js';
import { consentPage, loginPage } from '../pages/consent.js';
import { must } from '../../must.js';
import { checked, schema } from '../../validation/http-input.js';

/** The consent link's query: each parameter one value or, repeated, several (which validate refuses). */
const CONSENT_QUERY = schema<AuthRequestParams>('management#consentQuery');

export const CONSENT_PATH = '/access-request';

const errorTitle = (status: number) =>
  status === 429
    ? 'Too many attempts'
    : status === 403
      ? 'Not allowed'
      : status >= 500
        ? 'Something went wrong'
        : 'This authorization link is not valid';

export interface ConsentRoutesDeps {
  config: Pick<Config, 'rateLimitLogin' | 'rateLimitConsent' | 'appUrl' | 'publicUrl'>;
  clock: Clock;
  store: HitCounter;
  logger: Logger;
  identity: IdentityService;
  requests: AuthorizationRequests;
  webSessions: WebSessions;
}

export function oauthConsentRoutes(deps: ConsentRoutesDeps): Router {
  const { identity, requests: oauth, webSessions, config, logger } = deps;
  const r = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });
  const loginLimit = loginLimits({
    name: 'consent-login',
    perMinute: config.rateLimitLogin,
    clock: deps.clock,
    store: deps.store,
    emailOf: (req) => req.body?.email,
  });
  const secureCookie = (req: Request) => req.secure || /^https:/i.test(config.appUrl ?? config.publicUrl ?? '');

  /** An error as the consent screen's HTML page: never a redirect (docs/security.md §1 M7). */
  function sendError(res: Response, e: unknown) {
    pageHeaders(res);
    const req = res.req;
    sendErrorPage(res, e, logger, { reqId: req.id, method: req.method, path: req.path }, (status, message) =>
      errorPage(errorTitle(status), message),
    );
  }

  const setSessionCookie = (req: Request, res: Response, token: string) =>
    writeSessionCookie(res, token, secureCookie(req));

  /**
   * The browser's signed-in session, or its visitor token: a random cookie value that nothing
   * on the daemon remembers, to which the sign-in form's token is bound.
   */
  async function browserOf(
    req: Request,
    res: Response,
  ): Promise<{ session?: { id: string; accountId: string }; visitor: string }> {
    const token = cookieValue(req);
    const s = await webSessions.get(token);
    if (s && token) return { session: { id: s.id, accountId: s.accountId }, visitor: token };
    if (token && /^[A-Za-z0-9_-]{16,128}$/.test(token)) return { visitor: token };
    const visitor = newVisitorToken();
    setSessionCookie(req, res, visitor);
    return { visitor };
  }

  async function memberships(accountId: string): Promise<WorkspaceUserRecord[]> {
    return (await identity.membershipsOf(accountId)).filter((u) => !u.isBot);
  }

  async function renderConsent(res: Response, sessionId: string, req: AuthRequest, users: WorkspaceUserRecord[]) {
    const preselect = users.find((u) => u.workspaceId === req.defaultWorkspaceId) ?? must(users[0]);
    const context = await oauth.consentContext(req, preselect.workspaceId);
    const names = await Promise.all(users.map((u) => safeWorkspaceName(u.workspaceId)));
    const csrf = await webSessions.issueCsrf(sessionId, {
      kind: 'consent',
      params: req.params,
      workspaceIds: users.map((u) => u.workspaceId),
    });
    const origin = new URL(req.redirectUrl).origin;
    sendPage(
      res,
      200,
      consentPage({
        appId: req.app.id,
        displayName: req.app.manifest.displayName,
        botTitle: req.app.manifest.botTitle,
        hasBot: !!req.app.manifest.bot,
        redirectOrigin: origin,
        userScopes: req.userScopes,
        botScopes: req.botScopes,
        newBotScopes: context.installed ? context.newBotScopes : [],
        botScopesGranted: context.botScopesGranted,
        reinstall: req.reinstall,
        workspaces: users.map((u, i) => ({ id: u.workspaceId, name: must(names[i]), selected: u === preselect })),
        userName: preselect.name,
        csrf,
      }),
      [origin],
    );
  }

  async function safeWorkspaceName(id: string): Promise<string> {
    try {
      return (await identity.workspaceInfo(id)).name;
    } catch {
      return id;
    }
  }

  const pageLimit = rateLimit({
    perMinute: config.rateLimitConsent,
    clock: deps.clock,
    store: deps.store,
    key: (req) => `consent-page|${req.ip}`,
  });

  r.get(CONSENT_PATH, pageLimit, async (req, res) => {
    let authReq: AuthRequest;
    try {
      authReq = await oauth.validate(checked(CONSENT_QUERY, { ...req.query }, 'The query'));
    } catch (e) {
      return sendError(res, e);
    }
    const { session, visitor } = await browserOf(req, res);
    if (!session) {
      const csrf = await webSessions.loginToken(visitor, req.originalUrl.split('?')[1] ?? '');
      return sendPage(res, 200, loginPage({ appName: authReq.app.manifest.displayName, appId: authReq.app.id, csrf }));
    }
    const users = await memberships(session.accountId);
    if (!users.length)
      return sendPage(res, 403, errorPage('Not allowed', 'Your account is not a member of any workspace.'));
    try {
      for (const u of users) await oauth.assertMayAuthorize(authReq.app, u);
    } catch (e) {
      return sendError(res, e);
    }
    await renderConsent(res, session.id, authReq, users);
  });

  r.post(`${CONSENT_PATH}/login`, form, ...loginLimit, async (req, res) => {
    const token = cookieValue(req);
    const query = await webSessions.checkLoginToken(stringOr(req.body?.csrf), token);
    if (query === undefined)
      return sendPage(
        res,
        403,
        errorPage(
          'This form has expired',
          'The sign-in form is no longer valid (or was not sent from this browser). Open the authorization link again.',
        ),
      );
    const params = Object.fromEntries(new URLSearchParams(query));
    let authReq: AuthRequest;
    try {
      authReq = await oauth.validate(params);
    } catch (e) {
      return sendError(res, e);
    }
    const users = await identity.checkPassword(req.body?.email, req.body?.password);
    if (!users || !users.length) {
      const csrf = await webSessions.loginToken(must(token), query);
      const email = typeof req.body?.email === 'string' ? req.body.email.slice(0, 254) : '';
      return sendPage(
        res,
        401,
        loginPage({
          appName: authReq.app.manifest.displayName,
          appId: authReq.app.id,
          csrf,
          email,
          error: 'Email or password is wrong.',
        }),
      );
    }
    const next = await webSessions.login(token, must(users[0]).accountId);
    setSessionCookie(req, res, next.token);
    logger.info('consent screen sign-in', { workspaceUserIds: users.map((u) => u.id) }); // ids, not the email address
    redirect303(res, `${CONSENT_PATH}?${query}`);
  });

  r.post(`${CONSENT_PATH}/decision`, form, async (req, res) => {
    const session = await webSessions.get(cookieValue(req));
    const purpose = await webSessions.takeCsrf(stringOr(req.body?.csrf), session?.id, 'consent');
    if (!session?.accountId || !purpose)
      return sendPage(
        res,
        403,
        errorPage(
          'This form has expired',
          'The authorization form is no longer valid (or was not sent from this browser). Open the authorization link again.',
        ),
      );
    let authReq: AuthRequest;
    try {
      // validated again against the app as it is now; the app, scopes and redirect URL come from the server-side record
      authReq = await oauth.validate(purpose.params);
    } catch (e) {
      return sendError(res, e);
    }
    const decision = req.body?.decision;
    if (decision === 'cancel') return redirect303(res, await oauth.denyLocation(authReq));
    if (decision !== 'allow')
      return sendPage(res, 400, errorPage('Choose Allow or Cancel', 'The form did not say whether you allow the app.'));
    const wsId = req.body?.workspaceId;
    const user = purpose.workspaceIds.includes(wsId)
      ? (await memberships(session.accountId)).find((u) => u.workspaceId === wsId)
      : undefined;
    if (!user) return sendPage(res, 400, errorPage('Choose a workspace', 'Pick one of your workspaces.'));
    try {
      const { redirectUrl } = await oauth.grant(authReq, user);
      redirect303(res, redirectUrl);
    } catch (e) {
      sendError(res, e);
    }
  });
  // what the limits and parsers above refuse is a page too, not JSON
  r.use(CONSENT_PATH, (err: unknown, _req: Request, res: Response, _next: NextFunction) => sendError(res, err));
  return r;
}
