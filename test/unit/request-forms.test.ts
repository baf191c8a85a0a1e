/**
 * The paths served ahead of express (the token endpoint, the app get: start.ts) take exactly the
 * request targets express routes to a route of their path, by the one table of
 * fixtures/request-forms.ts: run against the fast paths' matchers and against express, its routes
 * declared as the daemon declares them (app.ts, routes/apps.ts, routes/auth.ts).
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import express, { Router } from 'express';
import { isTokenRequest, TOKEN_PATH } from '../../src/server/routes/oauth-token.js';
import { matchAppGet } from '../../src/server/routes/apps.js';
import { MGMT_BASE } from '../../src/server/routes/auth.js';
import { namesRoute, routedPath } from '../../src/server/request-target.js';
import { appGetPath, REQUEST_FORMS, tokenPath, type PathOf } from '../fixtures/request-forms.js';
import { requestTarget } from '../helpers/raw-target.js';

const ROUTES: Array<{ name: string; method: string; path: PathOf; fastPath(method: string, url: string): boolean }> = [
  {
    name: 'the token endpoint',
    method: 'POST',
    path: tokenPath,
    fastPath: (method, url) => isTokenRequest({ method, url }),
  },
  {
    name: 'the app get',
    method: 'GET',
    path: appGetPath('ws_1', 'wu_1', 'app_1'),
    fastPath: (method, url) => matchAppGet({ method, url }) !== null,
  },
];

t.test('one table of request targets, run against the fast paths and against express', async (t) => {
  const app = express();
  app.post(TOKEN_PATH, (_req, res) => void res.send('routed'));
  app.use(
    MGMT_BASE,
    Router({ mergeParams: true }).get('/apps/mine/:appId', (_req, res) => void res.send('routed')),
  );
  app.use((_req, res) => void res.status(404).send('not routed'));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const port = (server.address() as AddressInfo).port;

  for (const route of ROUTES) {
    for (const form of REQUEST_FORMS) {
      const target = form.target(route.path);
      const viaExpress = (await requestTarget(port, route.method, target)).body === 'routed';
      t.equal(viaExpress, form.routed, `${route.name}, ${form.name} (${target}): express`);
      t.equal(route.fastPath(route.method, target), form.routed, `${route.name}, ${form.name}: the fast path`);
    }
    const other = route.method === 'GET' ? 'POST' : 'GET';
    t.notOk(
      route.fastPath(
        other,
        route.path((s) => s),
      ),
      `${route.name}: not for ${other}`,
    );
  }
});

t.test('the path express reads, and a route named in any case with one trailing slash', async (t) => {
  t.equal(routedPath('/oauth2/access?x'), '/oauth2/access');
  t.equal(routedPath('/oauth2/access#f?x'), '/oauth2/access', 'a fragment, as url.parse reads it');
  t.equal(routedPath('http://h:1/a/b?c'), '/a/b');
  t.equal(routedPath('http://h'), '/', 'no path: the root, as url.parse reads it');
  t.equal(
    routedPath('http://[::1/oauth2/access'),
    undefined,
    'a target url.parse refuses names no path (express: no route)',
  );
  t.ok(namesRoute('/OAuth2/Access/', '/oauth2/access'));
  t.notOk(namesRoute('/oauth2/access//', '/oauth2/access'));
  t.notOk(namesRoute('/oauth2/accesses', '/oauth2/access'));
  t.notOk(namesRoute('/oauth2/acces', '/oauth2/access'));
});
