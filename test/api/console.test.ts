/** The web console over HTTP: sign-in, headers, CSRF, and each action. */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/cli.js';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { signIn } from '../helpers/console.js';
import { createTestClock, type TestClock } from '../helpers/test-clock.js';
import { CONDITION_MS, until as untilHolds } from '../helpers/until.js';
import { must } from '../../src/must.js';

/**
 * `reading`, while the live stream's 200 ms gathering window passes on the test clock, again and again until it
 * settles: a new delivery can reach the stream after one window has passed already (on PostgreSQL it comes by
 * LISTEN/NOTIFY, late on a busy machine), and a single advance would leave the reader waiting for ever.
 */
async function whileWindowsPass<T>(clock: TestClock, reading: Promise<T>): Promise<T> {
  let settled = false;
  void reading.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) {
    await clock.advance(200);
    await Promise.race([reading.catch(() => undefined), new Promise((r) => setTimeout(r, 25))]);
  }
  return reading;
}

function rxManifest(rx: Receiver, extra: Record<string, unknown> = {}) {
  return manifest({
    name: 'console-app',
    displayName: 'Console App',
    slashCommands: [
      { command: '/standup', url: `${rx.url}/slash`, usageHint: '[start]', description: 'Start a standup' },
    ],
    shortcuts: [{ shortcutType: 'GLOBAL', url: `${rx.url}/shortcut`, name: 'start', displayName: 'Start it' }],
    eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
    redirectUrls: ['http://localhost:9/redirect'],
    ...extra,
  });
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields);

t.test('the console needs a signed-in browser; its pages carry the strict headers', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  for (const path of ['/', '/console/apps/new', '/console/deliveries', '/console/events']) {
    const res = await fetch(d.url + path);
    t.equal(res.status, 401, path);
    t.match(await res.text(), /appreg open/);
  }
  const refused = await fetch(`${d.url}/console/apps`, {
    method: 'POST',
    body: form({ manifest: '{}' }),
    redirect: 'manual',
  });
  t.equal(refused.status, 403, 'a POST without a session is refused');

  const { cookie } = await signIn(d);
  const res = await fetch(`${d.url}/`, { headers: { cookie } });
  t.equal(res.status, 200);
  const csp = must(res.headers.get('content-security-policy'));
  for (const part of [
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "form-action 'self'",
    "base-uri 'none'",
    "img-src 'none'",
  ])
    t.match(csp, part);
  t.notMatch(csp, /unsafe/);
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.equal(res.headers.get('x-frame-options'), 'DENY');
  t.match(await res.text(), /Signed in as Owner/);

  const js = await fetch(`${d.url}/console/console.js`);
  t.equal(js.status, 200);
  t.match(js.headers.get('content-type'), /javascript/);
  t.equal(js.headers.get('x-content-type-options'), 'nosniff');
  t.equal(js.headers.get('cache-control'), 'no-cache', 'revalidated at each use, so a new version is never missed');
  t.equal(
    await js.text(),
    fs.readFileSync(path.join(ROOT, 'public/console/console.js'), 'utf8'),
    'the file public/console/console.js, as it is',
  );
  // as a browser revalidates (fetch() would add `cache-control: no-cache`, an end-to-end reload, without one)
  const again = await fetch(`${d.url}/console/console.js`, {
    headers: { 'if-none-match': must(js.headers.get('etag')), 'cache-control': 'max-age=0' },
  });
  t.equal(again.status, 304, 'the script revalidates by its ETag');
});

t.test("CSRF: a POST needs the session's token, from this origin", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const a = await signIn(d);
  const b = await signIn(d);
  t.not(a.csrf, b.csrf, 'each session has its own token');
  const create = (cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${d.url}/console/apps`, {
      method: 'POST',
      body: form({ manifest: JSON.stringify(manifest()), ...fields }),
      headers: { cookie, ...headers },
      redirect: 'manual',
    });
  t.equal((await create(a.cookie, {})).status, 403, 'no token');
  t.equal((await create(a.cookie, { csrf: 'x' + a.csrf })).status, 403, 'a wrong token');
  t.equal((await create(a.cookie, { csrf: b.csrf })).status, 403, "another session's token");
  t.equal(
    (await create(a.cookie, { csrf: a.csrf }, { origin: 'https://evil.example' })).status,
    403,
    'a foreign origin',
  );
  const list = (await (await d.api(`${d.mgmt}/apps/mine`)).json()) as unknown[];
  t.equal(list.length, 0, 'nothing was created by the refused forms');
  const ok = await create(a.cookie, { csrf: a.csrf }, { origin: d.url });
  t.equal(ok.status, 201);
  t.match(await ok.text(), /App created/);
  for (const path of [
    '/console/workspace',
    '/console/deliveries',
    '/console/apps/app_x/delete',
    '/console/deliveries/dlv_x/replay',
  ]) {
    const res = await fetch(d.url + path, {
      method: 'POST',
      body: form({}),
      headers: { cookie: a.cookie },
      redirect: 'manual',
    });
    t.equal(res.status, 403, `${path} without a token`);
  }
});

t.test(
  'the console takes forms only: another body is 415, an unreadable form or a bad field is a 400 page, never a 500',
  async (t) => {
    const { installPlatformApp } = await import('../helpers/platform-client.js');
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const { cookie, csrf } = await signIn(d);
    const home = {
      enabled: true,
      blocks: [
        { type: 'rich_text', elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'Home' }] }] },
      ],
    };
    const { app, bot } = await installPlatformApp(d, { manifest: { defaultHomeView: home } });
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id as string;
    const appMessage = (await bot.postMessageToChannel(general, 'from the app')).body.id as string;
    const channel = `/console/channels/${general}`;
    const post = (path: string, body: BodyInit, type?: string) =>
      fetch(d.url + path, {
        method: 'POST',
        body,
        headers: { cookie, 'x-csrf-token': csrf, ...(type ? { 'content-type': type } : {}) },
        redirect: 'manual',
      });
    const json = (v: unknown) => [JSON.stringify(v), 'application/json'] as const;
    // what answered 500 (the CSRF token was taken from the header, and the handler found no form)
    for (const [path, body] of [
      [`${channel}/messages`, { text: 'hello', csrf }],
      ['/console/deliveries', { csrf }],
      [`${channel}/messages/${appMessage}/menu`, { onAction: 'x', csrf }],
      ['/console/workspace', {}],
    ] as const) {
      const res = await post(path, ...json(body));
      t.equal(res.status, 415, `${path} with JSON: 415`);
      t.match(res.headers.get('content-type'), /text\/html/, 'a page');
      t.match(await res.text(), /forms only/);
    }
    t.equal((await post(`${channel}/messages`, 'text=hi', 'text/plain')).status, 415, 'text/plain is not a form');
    const broken = await post(
      '/console/apps',
      '--b\r\nContent-Disposition: form-data; name="csrf"\r\n\r\nx',
      'multipart/form-data; boundary=b',
    );
    t.equal(broken.status, 400, 'a multipart body cut short is a 400 page');
    t.match(await broken.text(), /could not be read|not acceptable/);
    const nullAct = await post(`${channel}/messages/${appMessage}/actions`, form({ csrf, act: 'null' }));
    t.equal(nullAct.status, 400, 'act=null: the page with the error');
    t.match(await nullAct.text(), /The action is not one of this message/);
    const emptyTrigger = await post('/console/deliveries', form({ csrf }));
    t.equal(emptyTrigger.status, 400, 'a trigger form without its fields: the page with the error');
    const homeAct = await post(`/console/home/${app.id}/actions`, form({ csrf, act: 'null' }));
    t.equal(homeAct.status, 400, 'a home view action with act=null: the page with the error');
    t.match(await homeAct.text(), /The action is not one of this view/);
    const messages = (await bot.fetchMessages(general)).body.messages as unknown[];
    t.equal(messages.length, 1, 'nothing was posted by the refused requests');
  },
);

t.test('sign-out ends the session: a copy of its cookie is refused from then on', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { cookie, csrf } = await signIn(d);
  const copy = cookie; // what someone who copied the cookie holds
  const home = await (await fetch(`${d.url}/`, { headers: { cookie } })).text();
  t.match(
    home,
    /<form method="post" action="\/console\/sign-out"><input type="hidden" name="csrf"/,
    'every page offers sign-out',
  );
  const signOut = (fields: Record<string, string>) =>
    fetch(`${d.url}/console/sign-out`, { method: 'POST', body: form(fields), headers: { cookie }, redirect: 'manual' });
  t.equal((await signOut({})).status, 403, "without the session's token: refused");
  t.equal((await signOut({ csrf: 'x' + csrf })).status, 403, 'with a wrong one too');
  t.equal((await fetch(`${d.url}/`, { headers: { cookie } })).status, 200, 'and the session goes on');

  const out = await signOut({ csrf });
  t.equal(out.status, 303);
  t.equal(out.headers.get('location'), '/');
  t.match(
    out.headers.getSetCookie().find((c) => c.startsWith('appreg_session=')) ?? '',
    /^appreg_session=;.*Expires=Thu, 01 Jan 1970/,
    'the cookie is dropped',
  );
  const page = await fetch(`${d.url}/`, { headers: { cookie: copy } });
  t.equal(page.status, 401, 'the copied cookie: signed out');
  t.match(await page.text(), /appreg open/);
  const create = await fetch(`${d.url}/console/apps`, {
    method: 'POST',
    body: form({ csrf, manifest: JSON.stringify(manifest()) }),
    headers: { cookie: copy },
    redirect: 'manual',
  });
  t.equal(create.status, 403, 'a POST with it and its token: refused');
  const again = await signIn(d);
  t.equal((await fetch(`${d.url}/`, { headers: { cookie: again.cookie } })).status, 200, 'signing in again works');
});

t.test("sign-out everywhere ends every session of the account, other browsers' too", async (t) => {
  const clock = createTestClock();
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const here = await signIn(d);
  const there = await signIn(d); // the same account in another browser
  const home = await (await fetch(`${d.url}/`, { headers: { cookie: here.cookie } })).text();
  t.match(home, /<button type="submit" formaction="\/console\/sign-out-everywhere"/, 'every page offers it');
  const everywhere = (cookie: string, fields: Record<string, string>) =>
    fetch(`${d.url}/console/sign-out-everywhere`, {
      method: 'POST',
      body: form(fields),
      headers: { cookie },
      redirect: 'manual',
    });
  t.equal((await everywhere(here.cookie, {})).status, 403, "without the session's token: refused");
  t.equal((await everywhere(here.cookie, { csrf: there.csrf })).status, 403, "with another session's token too");
  t.equal((await fetch(`${d.url}/`, { headers: { cookie: there.cookie } })).status, 200, 'and both sessions go on');
  const out = await everywhere(here.cookie, { csrf: here.csrf });
  t.equal(out.status, 303);
  t.match(
    out.headers.getSetCookie().find((c) => c.startsWith('appreg_session=')) ?? '',
    /^appreg_session=;/,
    'the cookie is dropped',
  );
  t.equal((await fetch(`${d.url}/`, { headers: { cookie: here.cookie } })).status, 401, 'this browser: signed out');
  t.equal(
    (await fetch(`${d.url}/`, { headers: { cookie: there.cookie } })).status,
    401,
    'the other browser: signed out',
  );
  clock.set(clock.now() + 1); // a new session is issued after the sign-out's moment
  const again = await signIn(d);
  t.equal((await fetch(`${d.url}/`, { headers: { cookie: again.cookie } })).status, 200, 'signing in again works');
});

t.test('a live page of a session signed out elsewhere ends at its next update, sending nothing', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = createTestClock(); // the live page's updates are gathered for 200 ms of it
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const app = (await (await d.api(`${d.mgmt}/apps`, { method: 'POST', json: rxManifest(rx) })).json()) as Record<
    string,
    string
  >;
  rx.secret = must(app.signingSecret);
  rx.on('/slash', { json: { message: 'ok' } });
  const { cookie, csrf } = await signIn(d);
  const trigger = () =>
    d.api(`${d.mgmt}/deliveries`, {
      method: 'POST',
      json: { appId: app.id, kind: 'slash-command', command: '/standup', text: 'x' },
    });
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const stream = await fetch(`${d.url}/console/events`, { headers: { cookie }, signal: ac.signal });
  t.equal(stream.status, 200);
  const reader = must(stream.body).getReader();
  let streamed = '';
  const read = async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return 'ended';
      streamed += new TextDecoder().decode(value);
      if (/event: row/.test(streamed)) return 'row';
    }
  };
  t.equal((await trigger()).status, 201);
  t.equal(await whileWindowsPass(clock, read()), 'row', 'signed in: the page gets the new delivery');
  // the copied cookie signs out (another browser, or another daemon: the check reads the store)
  t.equal(
    (
      await fetch(`${d.url}/console/sign-out`, {
        method: 'POST',
        body: form({ csrf }),
        headers: { cookie },
        redirect: 'manual',
      })
    ).status,
    303,
  );
  streamed = '';
  t.equal((await trigger()).status, 201);
  t.equal(await whileWindowsPass(clock, read()), 'ended', 'signed out: the stream ends');
  t.notMatch(streamed, /event: row/, 'without the update');
});

t.test('behind a proxy: a POST from the configured appUrl origin is accepted, others are not', async (t) => {
  const d = await startTestDaemon({ config: { appUrl: 'https://console.example' } });
  t.teardown(() => d.stop());
  const { cookie, csrf } = await signIn(d);
  const create = (origin: string) =>
    fetch(`${d.url}/console/apps`, {
      method: 'POST',
      body: form({ csrf, manifest: JSON.stringify(manifest()) }),
      headers: { cookie, origin },
      redirect: 'manual',
    });
  t.equal((await create('https://console.example')).status, 201);
  t.equal((await create('https://other.example')).status, 403);
});

t.test('apps: create with problems shown at their pointers, then every action', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { cookie, csrf } = await signIn(d);
  const post = (path: string, fields: Record<string, string> | FormData) =>
    fetch(d.url + path, {
      method: 'POST',
      body: fields instanceof FormData ? fields : form({ csrf, ...fields }),
      headers: { cookie },
      redirect: 'manual',
    });
  const page = async (path: string) => {
    const res = await fetch(d.url + path, { headers: { cookie } });
    return { status: res.status, html: await res.text() };
  };

  let res = await post('/console/apps', { manifest: '{"name": "x",' });
  t.equal(res.status, 400);
  t.match(await res.text(), /The manifest is not JSON/);

  const bad = rxManifest(rx, { slashCommands: [{ command: 'standup', url: `${rx.url}/slash` }] });
  res = await post('/console/apps', { manifest: JSON.stringify(bad) });
  t.equal(res.status, 400);
  let html = await res.text();
  t.match(html, /The manifest has 1 problem/);
  t.match(
    html,
    /<li class="msg" role="note">Error at <code>\/slashCommands\/0\/command<\/code>/,
    'the error sits under its line',
  );
  t.match(html, /&#34;command&#34;: &#34;standup&#34;/, 'the manifest is shown back');

  // uploaded as a file (multipart), with a warning
  const fd = new FormData();
  fd.append('csrf', csrf);
  fd.append(
    'file',
    new Blob(
      [JSON.stringify(rxManifest(rx, { redirectUrls: ['http://localhost:9/redirect', 'https://example.com/'] }))],
      { type: 'application/json' },
    ),
    'manifest.json',
  );
  res = await post('/console/apps', fd);
  t.equal(res.status, 201);
  html = await res.text();
  t.match(html, /App created/);
  t.match(
    html,
    /<strong>Warnings<\/strong><ul><li><code>\/redirectUrls\/1<\/code> a path of \/ matches every page/,
    'the warnings are shown',
  );
  const appId = must(must(/<dt>Id<\/dt><dd><code>([^<]+)<\/code>/.exec(html))[1]);
  for (const s of ['/standup', 'Start it', `${rx.url}/events`, 'http://localhost:9/redirect', 'messages:write'])
    t.ok(html.includes(s), `the app page shows ${s}`);
  t.notMatch(html, /ssk_|sign_|Signing secret<\/dt>/, 'secrets are not on the page until asked for');
  t.match(html, /href="\/access-request\?clientId&#61;app_/, 'an install link through the consent screen');

  const list = await page('/');
  t.match(list.html, /Console App/);
  t.match(list.html, /HTTP/);

  const api = (await (await d.api(`${d.mgmt}/apps/mine/${appId}`)).json()) as Record<string, string>;
  html = await (await post(`/console/apps/${appId}/secrets`, {})).text();
  t.ok(
    html.includes(must(api.signingSecret)) && html.includes(must(api.clientSecret)) && html.includes(must(api.appKey)),
    'Show secrets reveals the current ones',
  );

  t.match((await page(`/console/apps/${appId}/rotate`)).html, /Rotate the secrets of Console App\?/);
  html = await (await post(`/console/apps/${appId}/rotate`, {})).text();
  const after = (await (await d.api(`${d.mgmt}/apps/mine/${appId}`)).json()) as Record<string, string>;
  t.not(after.signingSecret, api.signingSecret);
  t.ok(html.includes(must(after.signingSecret)), 'the new secrets are shown once rotated');

  res = await post(`/console/apps/${appId}/publish`, {});
  t.equal(res.status, 303);
  t.equal(res.headers.get('location'), `/console/apps/${appId}`);
  t.match((await page(`/console/apps/${appId}`)).html, /<dt>Published<\/dt><dd>yes/);
  res = await post(`/console/apps/${appId}/delete`, {});
  t.equal(res.status, 409, 'a published app cannot be deleted');
  t.match(await res.text(), /unpublish it first/);
  await post(`/console/apps/${appId}/unpublish`, {});

  const edit = await page(`/console/apps/${appId}/edit`);
  t.match(edit.html, /&#34;displayName&#34;: &#34;Console App&#34;/);
  t.notMatch(edit.html, /signingSecret/);
  res = await post(`/console/apps/${appId}/edit`, {
    manifest: JSON.stringify(rxManifest(rx, { displayName: 'Renamed App' })),
  });
  t.equal(res.status, 200);
  t.match(await res.text(), /Manifest saved/);
  t.match((await page('/')).html, /Renamed App/);

  t.match((await page(`/console/apps/${appId}/delete`)).html, /Delete Renamed App\?/);
  res = await post(`/console/apps/${appId}/delete`, {});
  t.equal(res.status, 303);
  t.equal((await page(`/console/apps/${appId}`)).status, 404);
});

t.test('deliveries: trigger, the request as sent, replay, cancel, filters and the live stream', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const clock = createTestClock(); // the live streams gather 200 ms of it
  const d = await startTestDaemon({ clock, config: { deliveryRetrySchedule: '600' } });
  t.teardown(() => d.stop());
  const created = (await (await d.api(`${d.mgmt}/apps`, { method: 'POST', json: rxManifest(rx) })).json()) as Record<
    string,
    string
  >;
  rx.secret = must(created.signingSecret);
  rx.on('/slash', { json: { message: 'Standup started' } });
  rx.on('/events', { status: 500, text: 'down' });
  const { cookie, csrf } = await signIn(d);
  const post = (path: string, fields: Record<string, string>) =>
    fetch(d.url + path, { method: 'POST', body: form({ csrf, ...fields }), headers: { cookie }, redirect: 'manual' });
  const page = async (path: string) => (await fetch(d.url + path, { headers: { cookie } })).text();

  // the live stream, open before anything happens
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const stream = await fetch(`${d.url}/console/events?kind=slash-command`, { headers: { cookie }, signal: ac.signal });
  t.equal(stream.status, 200);
  t.match(stream.headers.get('content-type'), /text\/event-stream/);
  const reader = must(stream.body).getReader();
  let streamed = '';
  const until = async (re: RegExp) => {
    while (!re.test(streamed)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended');
      streamed += new TextDecoder().decode(value);
    }
  };

  let res = await post('/console/deliveries', {
    appId: must(created.id),
    kind: 'slash-command',
    command: '/standup',
    text: 'now',
  });
  t.equal(res.status, 303);
  const location = must(res.headers.get('location'));
  const id = must(must(/\/console\/deliveries\/([^?]+)/.exec(location))[1]);
  let html = await page(location);
  t.match(html, /Trigger sent/);
  t.match(html, /Standup started/, 'the message the user saw');
  const sent = must(rx.received[0]);
  t.ok(sent.signatureValid);
  t.ok(
    html.includes(`x-pumble-request-signature: ${sent.headers['x-pumble-request-signature']}`),
    'the signature that was sent',
  );
  t.ok(
    html.includes(`x-pumble-request-timestamp: ${sent.headers['x-pumble-request-timestamp']}`),
    'the timestamp that was sent',
  );
  t.match(html, /&#34;text&#34;: &#34;now&#34;/, 'the body, pretty-printed');
  await whileWindowsPass(clock, until(new RegExp(`event: row\\ndata: .*${id}`)));
  t.pass('the new delivery came down the live stream');

  const detail = new AbortController();
  t.teardown(() => detail.abort());
  const one = await fetch(`${d.url}/console/events?delivery=${id}`, { headers: { cookie }, signal: detail.signal });
  res = await post(`/console/deliveries/${id}/replay`, {});
  t.equal(res.status, 303);
  html = await page(must(res.headers.get('location')));
  t.match(html, /Attempts \(2\)/);
  t.match(html, /<span class="badge">replay<\/span>/);
  const oneReader = must(one.body).getReader();
  let oneText = '';
  await whileWindowsPass(
    clock,
    (async () => {
      while (!/event: delivery/.test(oneText)) oneText += new TextDecoder().decode((await oneReader.read()).value);
    })(),
  );
  t.match(oneText, /Attempts \(2\)/, "the delivery's page hears of the replay");

  res = await post(`/console/deliveries/${id}/cancel`, {});
  t.equal(res.status, 409, 'a delivered trigger cannot be cancelled');

  res = await post('/console/deliveries', { appId: must(created.id), kind: 'event', event: 'NEW_MESSAGE' });
  const eventId = /\/console\/deliveries\/([^?]+)/.exec(must(res.headers.get('location')))?.[1];
  html = await untilHolds(
    () => page(`/console/deliveries/${eventId}`),
    (h) => /retrying/.test(h),
  );
  t.match(html, />Cancel<\/button>/, 'a retrying event can be cancelled');
  res = await post(`/console/deliveries/${eventId}/cancel`, {});
  t.equal(res.status, 303);
  t.match(await page(must(res.headers.get('location'))), /s-cancelled/);

  const filtered = await page('/console/deliveries?kind=event');
  t.ok(filtered.includes(`id="d-${eventId}"`) && !filtered.includes(`id="d-${id}"`), 'filtered by kind');
  const byState = await page('/console/deliveries?state=delivered');
  t.ok(byState.includes(`id="d-${id}"`) && !byState.includes(`id="d-${eventId}"`), 'filtered by state');

  res = await post('/console/deliveries', { appId: must(created.id), kind: 'message-shortcut', shortcut: 'nope' });
  t.equal(res.status, 400);
  t.match(await res.text(), /The trigger was not sent/);
  // the form's selects offer these only: a form made elsewhere gets the service's words for them
  res = await post('/console/deliveries', {
    appId: must(created.id),
    kind: 'dynamic-menu',
    onAction: 'pick',
    sourceType: 'NOWHERE',
  });
  t.equal(res.status, 400, 'a source the form does not offer is refused');
  t.match(await res.text(), /The trigger was not sent: sourceType must be VIEW, MESSAGE or EPHEMERAL_MESSAGE\./);
  res = await post('/console/deliveries', { appId: must(created.id), kind: 'view-action', viewActionType: 'OPEN' });
  t.equal(res.status, 400, 'and a view action it does not offer');
  t.match(await res.text(), /The trigger was not sent: viewActionType must be SUBMIT or CLOSE\./);
  res = await post('/console/deliveries', { appId: must(created.id), kind: 'teleport' });
  t.equal(res.status, 400, 'a kind it does not offer, in the words of the JSON route');
  t.match(await res.text(), /The trigger was not sent: kind must be one of slash-command, /);
});

t.test("another user's app and deliveries are not found; the workspace switcher", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const created = (await (await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() })).json()) as {
    id: string;
  };
  const ws = (await (await d.api('/workspaces', { method: 'POST', json: { name: 'Second Space' } })).json()) as {
    id: string;
  };
  const { cookie, csrf } = await signIn(d);
  let html = await (await fetch(`${d.url}/`, { headers: { cookie } })).text();
  t.match(html, /<option value="[^"]+">Second Space<\/option>/, 'a switcher with both workspaces');
  const res = await fetch(`${d.url}/console/workspace`, {
    method: 'POST',
    body: form({ csrf, workspaceId: ws.id }),
    headers: { cookie },
    redirect: 'manual',
  });
  t.equal(res.status, 303);
  const chosen = must(must(res.headers.getSetCookie().find((c) => c.startsWith('appreg_console_ws='))).split(';')[0]);
  html = await (await fetch(`${d.url}/`, { headers: { cookie: `${cookie}; ${chosen}` } })).text();
  t.match(html, /selected>Second Space/);
  t.match(html, /No apps yet/, 'the apps of the workspace user chosen');
  const other = await fetch(`${d.url}/console/apps/${created.id}`, { headers: { cookie: `${cookie}; ${chosen}` } });
  t.equal(other.status, 404);
  const bad = await fetch(`${d.url}/console/workspace`, {
    method: 'POST',
    body: form({ csrf, workspaceId: 'ws_nope' }),
    headers: { cookie },
    redirect: 'manual',
  });
  t.equal(bad.status, 400);
});

t.test("install through the consent screen's link, uninstall behind a confirmation", async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { createApp, authorize } = await import('../fixtures/redirects-flow.js');
  const app = await createApp(d, { displayName: 'Installed App' });
  const { cookie, csrf } = await signIn(d);
  const page = async (path: string) => (await fetch(d.url + path, { headers: { cookie } })).text();
  let html = await page(`/console/apps/${app.id}`);
  t.match(html, /no workspace yet/);
  const href = must(must(/href="(\/access-request\?[^"]+)">Install in a workspace/.exec(html))[1]).replace(
    /&#(\d+);/g,
    (_m, n: string) => String.fromCharCode(Number(n)),
  );
  const consent = await fetch(d.url + href, { headers: { cookie } });
  t.equal(consent.status, 200, 'the install link is a valid consent link');
  t.match(await consent.text(), /Installed App wants access/);

  await authorize(d, app);
  html = await page(`/console/apps/${app.id}`);
  t.match(html, /Uninstall from Local workspace/);
  t.match(await page('/'), /<td class="wide">Local workspace<\/td>/, 'the list says where it is installed');
  const confirm = await page(`/console/apps/${app.id}/installations/${d.workspaceId}/uninstall`);
  t.match(confirm, /Uninstall Installed App from Local workspace\?/);
  const res = await fetch(`${d.url}/console/apps/${app.id}/installations/${d.workspaceId}/uninstall`, {
    method: 'POST',
    body: form({ csrf }),
    headers: { cookie },
  });
  t.equal(res.status, 200);
  html = await res.text();
  t.match(html, /Uninstalled\./);
  t.match(html, /no workspace yet/);
  t.equal(
    (await fetch(`${d.url}/console/apps/${app.id}/installations/${d.workspaceId}/uninstall`, { headers: { cookie } }))
      .status,
    404,
    'nothing left to uninstall',
  );
});

t.test("an open live page does not hold the daemon's stop", async (t) => {
  // requests in flight are waited for up to a minute here: a stream the stop did not end would hold it that long
  const d = await startTestDaemon({ stopWaitMs: 60_000 });
  const { cookie } = await signIn(d);
  const stream = await fetch(`${d.url}/console/events`, { headers: { cookie } });
  t.equal(stream.status, 200);
  const reader = must(stream.body).getReader();
  await reader.read(); // the stream's first bytes (retry:)
  const t0 = Date.now();
  await d.stop();
  t.ok(
    Date.now() - t0 < CONDITION_MS,
    `stopped in ${Date.now() - t0} ms, not after the minute in-flight requests are waited for`,
  );
  const end = await reader.read().catch(() => ({ done: true }));
  t.ok(end.done, 'the stream was ended');
});

t.test('the trigger form sends every kind, as deliver-test does', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const created = (await (
    await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: rxManifest(rx, {
        shortcuts: [
          { shortcutType: 'GLOBAL', url: `${rx.url}/shortcut`, name: 'start', displayName: 'Start it' },
          { shortcutType: 'ON_MESSAGE', url: `${rx.url}/msg-shortcut`, name: 'remind', displayName: 'Remind' },
        ],
        blockInteraction: { url: `${rx.url}/blocks` },
        viewAction: { url: `${rx.url}/views` },
        dynamicMenus: [{ url: `${rx.url}/menus`, onAction: 'pick' }],
      }),
    })
  ).json()) as Record<string, string>;
  rx.secret = must(created.signingSecret);
  const { cookie, csrf } = await signIn(d);
  const formHtml = await (await fetch(`${d.url}/console/deliveries`, { headers: { cookie } })).text();
  const kinds = must(
    must(must([...formHtml.matchAll(/<select id="t-kind" name="kind">(.*?)<\/select>/g)][0])[1]).match(
      /value="[^"]+"/g,
    ),
  ).map((v) => v.slice(7, -1));
  t.same(
    kinds,
    [
      'slash-command',
      'global-shortcut',
      'message-shortcut',
      'block-interaction',
      'view-action',
      'dynamic-menu',
      'event',
    ],
    'every kind is offered',
  );
  const fields: Record<string, Record<string, string>> = {
    'message-shortcut': { shortcut: 'remind' },
    'block-interaction': { onAction: 'go', value: 'v1', sourceType: 'EPHEMERAL_MESSAGE' },
    'view-action': { viewActionType: 'CLOSE' },
    'dynamic-menu': { onAction: 'pick', query: 'gen' },
  };
  for (const kind of kinds) {
    const res = await fetch(`${d.url}/console/deliveries`, {
      method: 'POST',
      body: form({ csrf, appId: must(created.id), kind, ...(fields[kind] ?? {}) }),
      headers: { cookie },
      redirect: 'manual',
    });
    t.equal(res.status, 303, kind);
  }
  const got = await rx.waitFor(kinds.length);
  const byPath = (p: string) => got.find((r) => r.path === p)?.body as Record<string, unknown> | undefined;
  t.equal(byPath('/msg-shortcut')?.shortcut, 'remind');
  t.equal(byPath('/blocks')?.sourceType, 'EPHEMERAL_MESSAGE');
  t.equal(byPath('/menus')?.query, 'gen');
  t.equal(byPath('/views')?.viewActionType, 'CLOSE');
  t.ok(
    got.every((r) => r.signatureValid),
    'every one signed',
  );
});
