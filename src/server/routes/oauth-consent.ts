/**
 * The consent screen (interface.md endpoint 7, security.md §1 and §3), served by the daemon
 * at /access-request: validate clientId, redirectUrl and scopes first (an error page, never a
 * redirect), then a login form or the consent form; Allow/Cancel → 303 to the app.
 */
import express, { Router, type Request, type Response } from 'express';
import { AppError } from '../../errors.js';
import { rateLimit } from '../middleware.js';
import type { ServerDeps } from '../deps.js';
import type { AuthRequest, OAuthService } from '../../services/oauth.js';
import type { WebSessions } from '../../services/oauth-sessions.js';
import type { WorkspaceUserRecord } from '../../services/records.js';
import { SESSION_TTL_MS } from '../../services/oauth-sessions.js';
import { contentSecurityPolicy } from '../pages/layout.js';
import { errorPage } from '../pages/error.js';
import { loginPage } from '../pages/login.js';
import { consentPage } from '../pages/consent.js';

export const SESSION_COOKIE = 'appreg_session';
export const CONSENT_PATH = '/access-request';

function cookieValue(req: Request, name: string): string | undefined {
  const raw = req.headers.cookie;
  if (!raw) return undefined;
  for (const part of raw.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** Headers on every page and redirect of the consent screen (security.md §3). */
function pageHeaders(res: Response, formTargets: string[] = []) {
  res.setHeader('content-security-policy', contentSecurityPolicy(formTargets));
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
}

function sendPage(res: Response, status: number, html: string, formTargets: string[] = []) {
  pageHeaders(res, formTargets);
  res.status(status).type('html').send(html);
}

function sendError(res: Response, e: unknown) {
  if (e instanceof AppError && e.expose) {
    const title = e.status === 429 ? 'Too many attempts' : e.status === 403 ? 'Not allowed' : 'This authorization link is not valid';
    if (e.headers) for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
    return sendPage(res, e.status, errorPage(title, e.message));
  }
  throw e;
}

function redirect303(res: Response, location: string) {
  pageHeaders(res);
  res.status(303).setHeader('location', location);
  res.end();
}

export function oauthConsentRoutes(deps: ServerDeps, oauth: OAuthService, sessions: WebSessions): Router {
  const { ctx, identity } = deps;
  const r = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });
  const loginLimit = rateLimit({ perMinute: ctx.config.rateLimitLogin, clock: ctx.clock, key: (req) => `consent-login|${req.ip}|${String(req.body?.email ?? '').toLowerCase().slice(0, 254)}` });
  const secureCookie = (req: Request) => req.secure || /^https:/i.test(ctx.config.appUrl ?? ctx.config.publicUrl ?? '');

  function setSessionCookie(req: Request, res: Response, token: string) {
    res.cookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure: secureCookie(req), path: CONSENT_PATH, maxAge: SESSION_TTL_MS });
  }

  /** The browser's session, creating an anonymous one so the login form's CSRF token has something to bind to. */
  function ensureSession(req: Request, res: Response) {
    const token = cookieValue(req, SESSION_COOKIE);
    const s = sessions.get(token);
    if (s) return { ...s, token: token! };
    const created = sessions.create();
    setSessionCookie(req, res, created.token);
    return { id: created.id, token: created.token, accountId: undefined as string | undefined };
  }

  function memberships(accountId: string): WorkspaceUserRecord[] {
    return identity.membershipsOf(accountId).filter((u) => !u.isBot);
  }

  function renderConsent(res: Response, sessionId: string, req: AuthRequest, users: WorkspaceUserRecord[]) {
    const preselect = users.find((u) => u.workspaceId === req.defaultWorkspaceId) ?? users[0]!;
    const context = oauth.consentContext(req, preselect.workspaceId);
    const csrf = sessions.issueCsrf(sessionId, { kind: 'consent', params: req.params, workspaceIds: users.map((u) => u.workspaceId) });
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
        workspaces: users.map((u) => ({ id: u.workspaceId, name: safeWorkspaceName(u.workspaceId), selected: u === preselect })),
        userName: preselect.name,
        csrf,
      }),
      [origin],
    );
  }

  function safeWorkspaceName(id: string): string {
    try {
      return identity.workspaceInfo(id).name;
    } catch {
      return id;
    }
  }

  r.get(CONSENT_PATH, (req, res) => {
    let authReq: AuthRequest;
    try {
      authReq = oauth.validateRequest(req.query as Record<string, unknown>);
    } catch (e) {
      return sendError(res, e);
    }
    const session = ensureSession(req, res);
    if (!session.accountId) {
      const query = req.originalUrl.split('?')[1] ?? '';
      const csrf = sessions.issueCsrf(session.id, { kind: 'login', query });
      return sendPage(res, 200, loginPage({ appName: authReq.app.manifest.displayName, appId: authReq.app.id, csrf }));
    }
    const users = memberships(session.accountId);
    if (!users.length) return sendPage(res, 403, errorPage('Not allowed', 'Your account is not a member of any workspace.'));
    try {
      for (const u of users) oauth.assertMayAuthorize(authReq.app, u);
    } catch (e) {
      return sendError(res, e);
    }
    renderConsent(res, session.id, authReq, users);
  });

  r.post(`${CONSENT_PATH}/login`, form, loginLimit, async (req, res) => {
    const token = cookieValue(req, SESSION_COOKIE);
    const session = sessions.get(token);
    const purpose = sessions.takeCsrf(req.body?.csrf, session?.id, 'login');
    if (!session || !purpose) return sendPage(res, 403, errorPage('This form has expired', 'The sign-in form is no longer valid (or was not sent from this browser). Open the authorization link again.'));
    const params = Object.fromEntries(new URLSearchParams(purpose.query));
    let authReq: AuthRequest;
    try {
      authReq = oauth.validateRequest(params);
    } catch (e) {
      return sendError(res, e);
    }
    const users = await identity.checkPassword(req.body?.email, req.body?.password);
    if (!users || !users.length) {
      const csrf = sessions.issueCsrf(session.id, purpose);
      const email = typeof req.body?.email === 'string' ? req.body.email.slice(0, 254) : '';
      return sendPage(res, 401, loginPage({ appName: authReq.app.manifest.displayName, appId: authReq.app.id, csrf, email, error: 'Email or password is wrong.' }));
    }
    const next = sessions.login(token, users[0]!.accountId);
    setSessionCookie(req, res, next.token);
    ctx.logger.info('consent screen sign-in', { workspaceUserIds: users.map((u) => u.id) }); // ids, not the email address
    redirect303(res, `${CONSENT_PATH}?${purpose.query}`);
  });

  r.post(`${CONSENT_PATH}/decision`, form, async (req, res) => {
    const session = sessions.get(cookieValue(req, SESSION_COOKIE));
    const purpose = sessions.takeCsrf(req.body?.csrf, session?.id, 'consent');
    if (!session?.accountId || !purpose) return sendPage(res, 403, errorPage('This form has expired', 'The authorization form is no longer valid (or was not sent from this browser). Open the authorization link again.'));
    let authReq: AuthRequest;
    try {
      // validated again against the app as it is now; the app, scopes and redirect URL come from the server-side record
      authReq = oauth.validateRequest(purpose.params);
    } catch (e) {
      return sendError(res, e);
    }
    const decision = req.body?.decision;
    if (decision === 'cancel') return redirect303(res, oauth.denyLocation(authReq));
    if (decision !== 'allow') return sendPage(res, 400, errorPage('Choose Allow or Cancel', 'The form did not say whether you allow the app.'));
    const wsId = req.body?.workspaceId;
    const user = purpose.workspaceIds.includes(wsId) ? memberships(session.accountId).find((u) => u.workspaceId === wsId) : undefined;
    if (!user) return sendPage(res, 400, errorPage('Choose a workspace', 'Pick one of your workspaces.'));
    try {
      const { redirectUrl } = await oauth.grant(authReq, user);
      redirect303(res, redirectUrl);
    } catch (e) {
      sendError(res, e);
    }
  });
  return r;
}
