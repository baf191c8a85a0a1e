/**
 * Issue 22 §4: `authorize --follow` says whether the app exchanged the code, from the daemon, so
 * an app whose redirect page never answers (or drops the connection) after exchanging it is not
 * reported as a failure; and an app that answers without exchanging is told so.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { createApp } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

t.test('authorize --follow and the code exchange', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];

  // The app's redirect page: exchanges the code (or not), then answers as the test says.
  let behaviour: 'hang' | 'reset' | 'no-exchange' = 'hang';
  let app: Awaited<ReturnType<typeof createApp>>;
  const hanging = new Set<http.ServerResponse>();
  const page = http.createServer(
    (req, res) =>
      void (async () => {
        if (behaviour === 'no-exchange') return void res.end('hello');
        const form = new FormData();
        form.append('client-id', app.id);
        form.append('client-secret', app.clientSecret);
        form.append('code', new URL(must(req.url), 'http://x').searchParams.get('code') ?? '');
        await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: form });
        if (behaviour === 'reset') return void req.socket.destroy();
        hanging.add(res); // never answers
      })().catch((e: unknown) =>
        setImmediate(() => {
          throw e;
        }),
      ),
  );
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const res of hanging) res.destroy();
    page.closeAllConnections();
    return new Promise<void>((r) => page.close(() => r()));
  });
  app = await createApp(d, { redirectUrls: [`http://127.0.0.1:${(page.address() as AddressInfo).port}/redirect`] });

  await t.test('a page that drops the connection after the exchange: exchanged, exit 0, with a warning', async (t) => {
    behaviour = 'reset';
    const r = await runMain([...g, 'authorize', app.id, '--follow']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /app answered\s+nothing \(the app at http:\/\/127\.0\.0\.1:\d+ did not answer: \S+/);
    t.match(r.stdout, /code\s+exchanged by the app/);
    t.match(r.stderr, /warning: the app exchanged the code, but its redirect page did not answer/);
  });

  await t.test('a page that never answers: the CLI stops waiting once the code is exchanged', async (t) => {
    behaviour = 'hang';
    const r = await runMain([...g, 'authorize', app.id, '--follow', '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(JSON.parse(r.stdout), { status: null, codeExchanged: true, error: /within 2 s of the exchange/ });
  });

  await t.test(
    "a page that answers without exchanging: said on stderr; the daemon tells the code's state",
    async (t) => {
      behaviour = 'no-exchange';
      const r = await runMain([...g, 'authorize', app.id, '--follow', '--json']);
      t.equal(r.code, 0, r.stderr);
      t.match(JSON.parse(r.stdout), { status: 200, body: 'hello', codeExchanged: false });
      t.match(r.stderr, /the app answered, but has not exchanged the code/);
      const state = async (code: string) =>
        (
          (await (await d.api(`${d.mgmt}/oauth2/code-state`, { method: 'POST', json: { code } })).json()) as {
            state: string;
          }
        ).state;
      t.equal(await state('acd_not_a_code'), 'unknown');
      const granted = JSON.parse((await runMain([...g, 'authorize', app.id, '--json'])).stdout) as { code: string };
      t.equal(await state(granted.code), 'waiting');
    },
  );
});
