/**
 * A daemon takes every form of a request target that express routes, on the paths it serves ahead
 * of express too (start.ts: the token endpoint, the app get): the table of fixtures/request-forms.ts,
 * sent as written (absolute-form, any case, a trailing slash), answered as the origin-form is; and
 * the app get's answer to each form is the express route's own (the same form with a
 * percent-encoded id, which the fast path leaves to express).
 */
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createApp, grant } from '../fixtures/redirects-flow.js';
import { appGetPath, encodeFirst, REQUEST_FORMS, tokenPath } from '../fixtures/request-forms.js';
import { requestTarget, type RawAnswer } from '../helpers/raw-target.js';

/** What an answer is, apart from what differs by request (its id, date) or by connection. */
const shown = (a: RawAnswer) => ({
  status: a.status,
  headers: Object.entries(a.headers).filter(([k]) => !['date', 'x-request-id', 'connection', 'keep-alive'].includes(k)),
  body: a.body,
});

t.test('request forms', async (t) => {
  const d: TestDaemon = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = await createApp(d);
  const form = (fields: Record<string, string>) => ({
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });

  t.test('the token endpoint: every form express routes exchanges a code; no other form reaches it', async (t) => {
    for (const f of REQUEST_FORMS) {
      const target = f.target(tokenPath);
      const { body: granted } = await grant(d, app);
      const res = await requestTarget(
        d.port,
        'POST',
        target,
        form({ 'client-id': app.id, 'client-secret': app.clientSecret, code: granted.code }),
      );
      if (f.routed) {
        t.equal(res.status, 200, `${f.name} (${target}): exchanged`);
        t.match(JSON.parse(res.body), { accessToken: /^aut_/, botToken: /^abt_/ }, `${f.name}: the tokens`);
        t.equal(res.headers['cache-control'], 'no-store', `${f.name}: the endpoint's headers`);
      } else {
        t.equal(res.status, 404, `${f.name} (${target}): no such route`);
        const again = await requestTarget(
          d.port,
          'POST',
          tokenPath((s) => s),
          form({ 'client-id': app.id, 'client-secret': app.clientSecret, code: granted.code }),
        );
        t.equal(again.status, 200, `${f.name}: the code was not consumed`);
      }
    }
    const wrong = await requestTarget(
      d.port,
      'POST',
      `http://127.0.0.1${tokenPath((s) => s.toUpperCase())}/`,
      form({ 'client-id': app.id, 'client-secret': 'acs_wrong', code: 'acd_wrong' }),
    );
    t.equal(wrong.status, 401, 'absolute-form, upper case: refused as the origin-form is');
    t.match(JSON.parse(wrong.body), { code: 'invalid_client' });
  });

  t.test('the app get: every form express routes gets the app, answered as the express route answers', async (t) => {
    const plain = await requestTarget(
      d.port,
      'GET',
      appGetPath(d.workspaceId, d.workspaceUserId, app.id)((s) => s),
      {
        headers: { authtoken: d.token },
      },
    );
    t.equal(plain.status, 200);
    t.match(JSON.parse(plain.body), { id: app.id, clientSecret: app.clientSecret });
    for (const f of REQUEST_FORMS) {
      const target = f.target(appGetPath(d.workspaceId, d.workspaceUserId, app.id));
      const viaExpress = f.target(appGetPath(d.workspaceId, d.workspaceUserId, encodeFirst(app.id)));
      const res = await requestTarget(d.port, 'GET', target, { headers: { authtoken: d.token } });
      const expressRes = await requestTarget(d.port, 'GET', viaExpress, { headers: { authtoken: d.token } });
      if (f.routed) {
        t.same(shown(res), shown(expressRes), `${f.name} (${target}): as the express route answers`);
        t.same(shown(res), shown(plain), `${f.name}: the app, as for the origin-form`);
      } else {
        t.equal(res.status, 404, `${f.name} (${target}): no such route`);
        t.equal(expressRes.status, 404, `${f.name}: nor for express`);
      }
    }
  });
});
