/**
 * What every console route shares: the signed-in browser (the appreg_session cookie), the
 * workspace user it acts as (first membership, or the one the switcher chose), the page
 * headers and CSP, the CSRF check of every POST, and the one error path for pages.
 *
 * CSRF: every POST carries the session's console token in its form (a hidden field), an HMAC
 * of the session id checked on the server; SameSite=Lax alone is not relied on. A POST whose
 * Origin header names another origin is refused as well.
 *
 * The console takes forms only: a POST whose body is not a form (JSON, anything else) is 415
 * before its token is looked at, and a form the parser cannot read is a 400 page, so a handler
 * always gets the fields of a form as strings.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError, forbidden, invalidRequest, unsupportedMediaType } from '../../../errors.js';
import type { Config } from '../../../config.js';
import type { Logger } from '../../../logger.js';
import type { IdentityService, Principal } from '../../../services/identity.js';
import type { WebSessions } from '../../../services/oauth/web-sessions.js';
import { signedOutPage } from '../../pages/sign-in.js';
import { CONSOLE_CSP, plainPage, type Shell } from '../../pages/console/layout.js';
import { clearSessionCookie, cookieValue, pageHeaders } from '../../pages/send.js';
import { asAppError, sendErrorPage } from '../../respond.js';
import { must } from '../../../must.js';
import { recorderBar, type RecorderShell } from '../../pages/console/recorder.js';
import { isRecord, stringOr } from '../../../unknown-values.js';

const WORKSPACE_COOKIE = 'appreg_console_ws';
/** The one body type of the console's forms (the manifest form may also be multipart, for a file). */
export const FORM_TYPE = 'application/x-www-form-urlencoded';

export interface ConsoleBaseDeps {
  /** Where browsers reach the daemon when it is behind a proxy: a POST's Origin may be these too. */
  config: Pick<Config, 'appUrl' | 'publicUrl'>;
  identity: IdentityService;
  webSessions: WebSessions;
  logger: Logger;
  /** The recorder: who the person acts as while recording (the owner only), and its bar over the workspace. */
  recorder?: {
    actingAs(userId: string): { id: string; name: string } | undefined;
    shell(me: { id: string; workspaceId: string; name: string }, returnTo: string): Promise<RecorderShell>;
  };
}

export interface Signed {
  sessionId: string;
  /** When the session ends by itself (epoch ms). */
  sessionExpiresAt: number;
  /** The account signed in (sign-out everywhere ends all its sessions). */
  accountId: string;
  /** Who acts: the person, or the member they act as while recording (docs/testing.md). */
  principal: Principal;
  /** The signed-in person's own workspace user, whoever they act as. */
  personId: string;
  shell: Shell;
}

/**
 * The console's headers: those of every page (no-store, no framing), its own CSP, and a
 * same-origin referrer policy so that the browser sends the Origin of a form's POST (with
 * no-referrer it sends "null", and the origin check below could not tell).
 */
export function consoleHeaders(res: Response): void {
  pageHeaders(res);
  res.setHeader('content-security-policy', CONSOLE_CSP);
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('x-content-type-options', 'nosniff');
}

/** A page in the consent screen's shell (errors, signed out), under that shell's CSP. */
function sendPlain(res: Response, status: number, html: string): void {
  pageHeaders(res);
  res.setHeader('x-content-type-options', 'nosniff');
  res.status(status).type('html').send(html);
}

export function sendConsolePage(res: Response, status: number, html: string): void {
  consoleHeaders(res);
  res.status(status).type('html').send(html);
}

export function seeOther(res: Response, location: string): void {
  consoleHeaders(res);
  res.status(303).setHeader('location', location);
  res.end();
}

/** The signed-in browser of a request signedIn let through, by its response (typed, unlike res.locals). */
const signedIns = new WeakMap<Response, Signed>();
const signedOf = (res: Response): Signed => must(signedIns.get(res), 'the signed-in browser of a console request');

/**
 * A console form as its parser read it: each field a string, or the strings of a field sent more than once.
 * Only text fields are kept (multer reads a part named like `a[b]` as an object; no console form has one).
 */
export type Form = Readonly<Record<string, string | string[]>>;

const isField = (entry: [string, unknown]): entry is [string, string | string[]] => {
  const v = entry[1];
  return typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
};

/** The fields of a parsed form (an empty form when there is none: a GET). */
function formOf(body: unknown): Form {
  return isRecord(body) ? Object.fromEntries(Object.entries(body).filter(isField)) : {};
}

/** A console handler: the request, the signed-in browser and its form (empty for a GET). */
export type ConsoleHandler = (req: Request, res: Response, s: Signed, form: Form) => unknown;

export function consoleBase(deps: ConsoleBaseDeps) {
  const { identity, webSessions, logger } = deps;
  const originOf = (u: string | undefined) => {
    try {
      return u ? new URL(u).origin : undefined;
    } catch {
      return undefined;
    }
  };
  const publicOrigins = [originOf(deps.config.appUrl), originOf(deps.config.publicUrl)].filter((o): o is string => !!o);

  /** The error path of console pages: an AppError's status and message, 5xx logged once by sendErrorPage. */
  function sendError(res: Response, e: unknown): void {
    pageHeaders(res);
    res.setHeader('x-content-type-options', 'nosniff');
    const req = res.req;
    const title = (status: number) =>
      status === 404
        ? 'Not found'
        : status === 403
          ? 'Not allowed'
          : status >= 500
            ? 'Something went wrong'
            : 'That did not work';
    sendErrorPage(res, e, logger, { reqId: req.id, method: req.method, path: req.path }, (status, message) =>
      plainPage(title(status), message),
    );
  }

  /** Resolve the signed-in browser; a page for one that is not (401 signed-out page, or 403 for a POST). */
  async function signedIn(req: Request, res: Response, next: NextFunction): Promise<void> {
    let signed: Signed;
    try {
      const session = await webSessions.get(cookieValue(req));
      if (!session)
        return req.method === 'GET'
          ? sendPlain(res, 401, signedOutPage())
          : sendError(res, forbidden('This browser is not signed in (any more). Run appreg open to sign in again.'));
      const members = (await identity.membershipsOf(session.accountId)).filter((u) => !u.isBot);
      const chosen = cookieValue(req, WORKSPACE_COOKIE);
      const me = members.find((m) => m.workspaceId === chosen) ?? members[0];
      if (!me) return sendError(res, forbidden('Your account is not a member of any workspace.'));
      const csrf = await webSessions.consoleToken(session.id);
      const names = await Promise.all(members.map((m) => workspaceName(m.workspaceId)));
      const workspaces = members.map((m, i) => ({ id: m.workspaceId, name: must(names[i]), selected: m === me }));
      const acting = deps.recorder?.actingAs(me.id);
      const bar =
        deps.recorder && req.method === 'GET' && req.accepts('html')
          ? recorderBar(await deps.recorder.shell(me, req.originalUrl), csrf)
          : undefined;
      signed = {
        sessionId: session.id,
        sessionExpiresAt: session.expiresAt,
        accountId: session.accountId,
        principal: { workspaceId: me.workspaceId, workspaceUserId: acting?.id ?? me.id, jti: '' },
        personId: me.id,
        shell: {
          section: 'apps',
          userName: acting ? `${me.name}, acting as ${acting.name}` : me.name,
          csrf,
          workspaces,
          ...(bar ? { recorderBar: bar } : {}),
        },
      };
    } catch (e) {
      return sendError(res, e); // the store could not be read: a page, like every other console error
    }
    signedIns.set(res, signed);
    next();
  }

  async function workspaceName(id: string): Promise<string> {
    try {
      return (await identity.workspaceInfo(id)).name;
    } catch {
      return id;
    }
  }

  /** After signedIn and the body parser: the session's token in the form, and no foreign Origin. */
  async function csrf(req: Request, res: Response, next: NextFunction): Promise<void> {
    const s = signedOf(res);
    const given = formOf(req.body).csrf;
    const origin = req.get('origin');
    const sameOrigin = !origin || origin === `${req.protocol}://${req.get('host')}` || publicOrigins.includes(origin);
    if (!sameOrigin || !(await webSessions.checkConsoleToken(stringOr(given), s.sessionId)))
      return sendError(
        res,
        forbidden(
          'The form was not sent from this console, or your session changed. Go back, reload the page and try again.',
        ),
      );
    next();
  }

  /** The workspace switcher: remember the choice (one of the account's workspaces) in a cookie. */
  function chooseWorkspace(req: Request, res: Response): void {
    const s = signedOf(res);
    const id = formOf(req.body).workspaceId;
    if (!s.shell.workspaces.some((w) => w.id === id))
      return sendError(res, invalidRequest('Choose one of your workspaces.'));
    res.cookie(WORKSPACE_COOKIE, String(id), {
      httpOnly: true,
      sameSite: 'lax',
      secure: req.secure || publicOrigins.some((o) => o.startsWith('https:')),
      path: '/',
    });
    seeOther(res, '/');
  }

  /**
   * Sign out: the session ends on every daemon (a copy of its cookie is refused from now), and the
   * cookie goes; with `everywhere`, every session of the account ends (other browsers too).
   */
  const signOut =
    (everywhere: boolean) =>
    async (req: Request, res: Response): Promise<void> => {
      const s = signedOf(res);
      try {
        if (everywhere) await webSessions.endAll(s.accountId);
        else await webSessions.end({ id: s.sessionId, expiresAt: s.sessionExpiresAt });
      } catch (e) {
        return sendError(res, e); // not recorded: the cookie stays, and the page says so
      }
      clearSessionCookie(res, req.secure || publicOrigins.some((o) => o.startsWith('https:')));
      seeOther(res, '/');
    };

  /** Whether the browser that made `req` is still signed in (a live stream asks before each write). */
  async function stillSignedIn(req: Request): Promise<boolean> {
    return (await webSessions.get(cookieValue(req))) !== undefined;
  }

  /**
   * A form body, read by `parser` when its type is one of `types` (415 page otherwise); what the
   * parser refuses (too large, malformed) is a page through the one error path: a parser's own
   * error that is not classified as the client's is still a malformed form (400), never a 500.
   * The handler gets an object of fields (an empty one for an empty form).
   */
  const parsedBy = (types: string[], parser: RequestHandler) => (req: Request, res: Response, next: NextFunction) => {
    if (!req.is(types))
      return sendError(
        res,
        unsupportedMediaType('The console takes forms only: send the page’s form (application/x-www-form-urlencoded).'),
      );
    parser(req, res, (err?: unknown) => {
      if (err)
        return sendError(
          res,
          asAppError(err) instanceof AppError ? err : invalidRequest('The form could not be read.'),
        );
      if (!req.body || typeof req.body !== 'object') req.body = {};
      next();
    });
  };
  /** A urlencoded form of at most `limit` and `parameterLimit` fields. */
  const form = (limit: string | number, parameterLimit: number) =>
    parsedBy([FORM_TYPE], express.urlencoded({ extended: false, limit, parameterLimit }));

  return { signedIn, csrf, sendError, chooseWorkspace, signOut, stillSignedIn, parsedBy, form };
}

export type ConsoleBase = ReturnType<typeof consoleBase>;

/** Run an async page handler and send what it throws through the error path. */
export function handled(base: ConsoleBase, fn: ConsoleHandler) {
  return async (req: Request, res: Response) => {
    try {
      await fn(req, res, signedOf(res), formOf(req.body));
    } catch (e) {
      base.sendError(res, e);
    }
  };
}
