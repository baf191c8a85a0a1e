/**
 * Console paths that are no page. `/console` and `/console/apps` (where one expects the app list)
 * lead to it, at `/`. Any other GET under `/console` that a browser makes (HTML before JSON in its
 * Accept) is a not-found page with a link home, saying which pages there are; an API client (JSON,
 * `*\/*` or no Accept) and every other method fall through to the daemon's JSON 404.
 * Neither needs a session: the answer says nothing about the daemon's data.
 */
import { Router, type Request, type Response } from 'express';
import { whyNotAPage } from '../../../console-pages.js';
import { plainPage } from '../../pages/console/layout.js';
import { pageHeaders } from '../../pages/send.js';
import { seeOther } from './common.js';

export function consoleNotFound(): Router {
  const r = Router({ strict: false });
  const home = (_req: Request, res: Response) => seeOther(res, '/');
  r.get('/console', home);
  r.get('/console/apps', home);
  // `/console` itself and every path under it (path-to-regexp's optional wildcard)
  r.get('/console{/*rest}', (req, res, next) => {
    if (req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
    pageHeaders(res);
    res.setHeader('x-content-type-options', 'nosniff');
    res
      .status(404)
      .type('html')
      .send(plainPage('Not found', whyNotAPage(req.path) ?? `${req.path} is not a page.`));
  });
  return r;
}
