/**
 * One-time sign-in links (`appreg open`) for the daemon's browser pages (the console, at /).
 * The links are issued to an authenticated management caller, work once, for five minutes,
 * and sign the browser in as that caller. A browser already signed in as someone else is not
 * switched without a word: it is shown who is signed in and who the link is for, and switches
 * only when that page's form is sent (with the current session's token; the link stays unused
 * until then).
 */
import express, { Router, type Request, type Response } from 'express';
import { whyNotAPage } from '../../console-pages.js';
import { invalidRequest } from '../../errors.js';
import type { Config } from '../../config.js';
import type { IdentityService } from '../../services/identity.js';
import type { WebSessions } from '../../services/oauth/web-sessions.js';
import { jsonBody } from '../middleware.js';
import { errorPage } from '../pages/layout.js';
import { cookieValue, redirect303, sendPage, setSessionCookie } from '../pages/send.js';
import { switchAccountPage, type Person } from '../pages/sign-in.js';
import { mountAuthed, route } from './route-table.js';
import { schema } from '../../validation/http-input.js';
import { recordOr, stringOr } from '../../unknown-values.js';

const SIGN_IN_PATH = '/web/sign-in';

/** A console page to land on (the schema made it absolute, not protocol-relative, printable ASCII) that exists. */
function landingPath(v: string | null | undefined): string {
  if (v === undefined || v === null) return '/';
  const why = whyNotAPage(v);
  if (why) throw invalidRequest(`${why}.`, [{ pointer: '/path', message: 'is not a page of the console' }]);
  return v;
}

export interface WebRoutesDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'appUrl' | 'publicUrl'>;
  identity: IdentityService;
  webSessions: WebSessions;
  baseUrl: () => string;
}

/** POST …/web/sign-in-links (relative to MGMT_BASE). */
export const SIGN_IN_LINK_ROUTES = {
  issue: route({
    method: 'post',
    path: '/web/sign-in-links',
    summary: 'A one-time link (five minutes) that signs a browser in to the console as the caller',
    body: schema<{ path?: string | null } | undefined>('management#signInLinkBody'),
    // a path that is not text, or not absolute (today's words: one message whatever is wrong with it)
    refuse: () =>
      invalidRequest('path must be a path on this daemon, such as / or /console/deliveries.', [
        { pointer: '/path', message: 'must start with a single /' },
      ]),
    answers: { 201: '{url, expiresAt}' },
    auth: 'authtoken',
  }),
};

/** POST …/web/sign-in-links {path?} → {url, expiresAt}: mounted at the management base path. */
export function signInLinkRoutes(deps: WebRoutesDeps): Router {
  const r = Router({ mergeParams: true });
  mountAuthed(r, SIGN_IN_LINK_ROUTES.issue, [jsonBody(deps.config.bodyLimitBytes)], async (_req, res, p, { body }) => {
    const path = landingPath(body?.path);
    const me = await deps.identity.userRecord(p.workspaceUserId);
    if (!me) throw invalidRequest('The caller has no workspace user.');
    const link = await deps.webSessions.issueSignInLink(me.accountId, path, p.jti);
    const url = new URL(SIGN_IN_PATH, deps.baseUrl());
    url.searchParams.set('token', link.token);
    res.status(201).json({ url: url.toString(), expiresAt: new Date(link.expiresAt).toISOString() });
  });
  return r;
}

/** GET /web/sign-in?token=…: sign the browser in and land on the link's path. */
export function webRoutes(deps: WebRoutesDeps): Router {
  const { webSessions } = deps;
  const r = Router();
  const secure = (req: Request) => req.secure || /^https:/i.test(deps.config.appUrl ?? deps.config.publicUrl ?? '');

  const invalid = (res: Response) =>
    sendPage(
      res,
      403,
      errorPage(
        'This sign-in link is not valid',
        'It was already used or has expired (links work once, for five minutes). Run appreg open again.',
      ),
    );
  /** The account's name and email as its first membership has them. */
  const personOf = async (accountId: string): Promise<Person> => {
    const m = (await deps.identity.membershipsOf(accountId)).find((u) => !u.isBot);
    return { name: m?.name ?? 'someone else', email: m?.email ?? 'no workspace' };
  };
  /** Use the link: the browser is signed in as its account (a new session) and lands on its path. */
  const signIn = async (req: Request, res: Response, token: string | undefined) => {
    const link = await webSessions.takeSignInLink(token);
    if (!link) return invalid(res);
    const session = await webSessions.login(cookieValue(req), link.accountId, link.tokenId);
    setSessionCookie(res, session.token, secure(req));
    redirect303(res, link.path);
  };

  r.get(SIGN_IN_PATH, async (req, res) => {
    const link = await webSessions.peekSignInLink(stringOr(req.query.token));
    if (!link) return invalid(res);
    const current = await webSessions.get(cookieValue(req));
    if (!current || current.accountId === link.accountId) return signIn(req, res, stringOr(req.query.token));
    // signed in as someone else: say so, and switch only if asked to
    const [me, them] = await Promise.all([personOf(current.accountId), personOf(link.accountId)]);
    sendPage(
      res,
      200,
      switchAccountPage({
        current: me,
        link: them,
        token: String(req.query.token),
        csrf: webSessions.consoleToken(current.id),
      }),
    );
  });

  /** The switch page's form: the current session's token, then the link is used. */
  r.post(SIGN_IN_PATH, express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 4 }), async (req, res) => {
    const b = recordOr(req.body) ?? {};
    const current = await webSessions.get(cookieValue(req));
    if (!current || !webSessions.checkConsoleToken(stringOr(b.csrf), current.id)) {
      return sendPage(
        res,
        403,
        errorPage(
          'This browser did not ask for the switch',
          'The form was not sent from the page this daemon showed, or the session changed. Open the sign-in link again.',
        ),
      );
    }
    await signIn(req, res, stringOr(b.token));
  });

  return r;
}
