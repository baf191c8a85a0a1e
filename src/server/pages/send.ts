/**
 * Sending the daemon's browser pages (the consent screen, sign-in links, the home page): the
 * headers every page and redirect carries (docs/security.md §3) and the session cookie.
 */
import type { Request, Response } from 'express';
import { SESSION_TTL_MS } from '../../services/oauth/web-sessions.js';
import { contentSecurityPolicy } from './layout.js';

/** The browser session's cookie: signed-in sessions and visitor tokens alike, for every page of the daemon. */
const SESSION_COOKIE = 'appreg_session';

export function cookieValue(req: Request, name = SESSION_COOKIE): string | undefined {
  const raw = req.headers.cookie;
  if (!raw) return undefined;
  for (const part of raw.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

export function setSessionCookie(res: Response, token: string, secure: boolean): void {
  res.cookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure, path: '/', maxAge: SESSION_TTL_MS });
}

/** Drop the session cookie (sign-out: the session itself is ended in the store). */
export function clearSessionCookie(res: Response, secure: boolean): void {
  res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure, path: '/' });
}

/** Headers on every page and redirect: strict CSP, no framing, no referrer, no caching. */
export function pageHeaders(res: Response, formTargets: string[] = []): void {
  res.setHeader('content-security-policy', contentSecurityPolicy(formTargets));
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
}

export function sendPage(res: Response, status: number, html: string, formTargets: string[] = []): void {
  pageHeaders(res, formTargets);
  res.status(status).type('html').send(html);
}

export function redirect303(res: Response, location: string): void {
  pageHeaders(res);
  res.status(303).setHeader('location', location);
  res.end();
}
