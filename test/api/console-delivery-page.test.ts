/**
 * A delivery's page in the console, over HTTP: an event's `body` (and an interaction's
 * `payload`) shown decoded and pretty-printed, the exact bytes under it; the headers the app
 * answered with beside those sent; the list naming what each delivery is about and its target;
 * Replay with an edited body (a new delivery marked as an edited replay, signed afresh over the
 * edited bytes); and Copy as curl (the exact body, signed at the daemon's clock now, never the
 * secret), whose command is parsed by the system's shell and then sent to the app, which checks
 * its signature.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { startReceiver, verify } from '../helpers/receiver.js';
import { signIn } from '../helpers/console.js';
import { createTestClock } from '../helpers/test-clock.js';
import { must } from '../../src/must.js';

const unescape = (s: string) =>
  s.replace(/&#34;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

async function setup(t: TapTest, clock = createTestClock()) {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon({ clock });
  t.teardown(() => d.stop());
  const app = (await (
    await d.api(`${d.mgmt}/apps`, {
      method: 'POST',
      json: manifest({
        name: 'inspect-me',
        slashCommands: [{ command: '/standup', url: `${rx.url}/slash` }],
        shortcuts: [{ shortcutType: 'GLOBAL', url: `${rx.url}/shortcut`, name: 'start_it', displayName: 'Start it' }],
        blockInteraction: { url: `${rx.url}/block` },
        viewAction: { url: `${rx.url}/view` },
        eventSubscriptions: { url: `${rx.url}/events`, events: ['NEW_MESSAGE'] },
        scopes: { botScopes: ['messages:read'], userScopes: [] },
        redirectUrls: ['http://localhost:9/redirect'],
      }),
    })
  ).json()) as Record<string, string>;
  rx.secret = must(app.signingSecret);
  const { cookie, csrf } = await signIn(d);
  const page = async (path: string) => (await fetch(d.url + path, { headers: { cookie } })).text();
  const post = (path: string, fields: Record<string, string>) =>
    fetch(d.url + path, {
      method: 'POST',
      body: new URLSearchParams({ csrf, ...fields }),
      headers: { cookie },
      redirect: 'manual',
    });
  const trigger = async (json: Record<string, unknown>) =>
    (await (
      await d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: { appId: app.id, ...json } })
    ).json()) as Record<string, any>;
  const record = async (id: string) =>
    (await (await d.api(`${d.mgmt}/deliveries/${id}`)).json()) as Record<string, any>;
  return { rx, d, app, page, post, trigger, record };
}

t.test('an event’s body decoded and pretty-printed; the answer’s headers beside the request’s', async (t) => {
  const { rx, page, trigger, record } = await setup(t);
  rx.checkEvents = false; // a body of the test's own making, not the daemon's
  rx.on('/events', { text: 'ok', headers: { 'x-app-trace': 'trace-7' } });
  const ev = await trigger({ kind: 'event', event: 'NEW_MESSAGE', body: { tx: 'He said "hi"', cId: 'c_1' } });
  await rx.waitFor(1);
  let html = await page(`/console/deliveries/${ev.id}`);
  const shown = unescape(must(must(/<pre aria-label="Body">([^<]*)<\/pre>/.exec(html))[1]));
  t.same(JSON.parse(shown).body, { tx: 'He said "hi"', cId: 'c_1' }, 'the body shown is the decoded object');
  t.match(shown, /\n {2}"body": \{\n {4}"tx": "He said \\"hi\\"",/, 'pretty-printed, one field a line');
  t.match(html, /<code>body<\/code> is sent as a JSON-encoded string; it is shown decoded\./);
  const exact = unescape(must(must(/<pre class="wrap" aria-label="Body as sent">([^<]*)<\/pre>/.exec(html))[1]));
  t.same(JSON.parse(exact), JSON.parse(must(rx.received[0]).raw), 'the JSON sent, under it');
  t.notMatch(exact, /\n/, 'on one line, its body still a JSON-encoded string');

  // the answer's headers, kept on the attempt and shown beside the ones sent
  const answered = unescape(/<pre class="wrap" aria-label="Headers answered">([^<]*)<\/pre>/.exec(html)?.[1] ?? '');
  t.match(answered, /^x-app-trace: trace-7$/m, 'the app’s own header');
  t.match(answered, /^content-type: text\/plain$/m);
  t.match(
    unescape(must(must(/<pre class="wrap" aria-label="Headers sent">([^<]*)<\/pre>/.exec(html))[1])),
    new RegExp(`^x-pumble-request-signature: ${must(rx.received[0]).headers['x-pumble-request-signature']}$`, 'm'),
  );
  const rec = await record(ev.id);
  t.ok(
    (rec.attempts[0].answerHeaders as Array<[string, string]>).some(([k, v]) => k === 'x-app-trace' && v === 'trace-7'),
    'the delivery record has them (answerHeaders)',
  );

  // a block interaction's payload is decoded as well
  const bi = await trigger({ kind: 'block-interaction', onAction: 'pick', values: ['a', 'b'] });
  html = await page(`/console/deliveries/${bi.id}`);
  t.same(
    JSON.parse(unescape(must(must(/<pre aria-label="Body">([^<]*)<\/pre>/.exec(html))[1]))).payload,
    { values: ['a', 'b'] },
    'payload decoded',
  );
  t.match(html, /<code>payload<\/code> is sent as a JSON-encoded string/);
});

t.test('the list names the command, shortcut, element, view or event type, and the target', async (t) => {
  const { rx, page, trigger, record } = await setup(t);
  const slash = await trigger({ kind: 'slash-command', command: '/standup' });
  const shortcut = await trigger({ kind: 'global-shortcut', shortcut: 'start_it' });
  const click = await trigger({ kind: 'block-interaction', onAction: 'approve', sourceType: 'EPHEMERAL_MESSAGE' });
  const view = await trigger({ kind: 'view-action', view: { callbackId: 'new_task' } });
  const ev = await trigger({ kind: 'event', event: 'NEW_MESSAGE' });
  await rx.waitFor(5);
  const html = await page('/console/deliveries');
  const row = (id: string) => new RegExp(`<tr id="d-${id}">.*?</tr>`).exec(html)?.[0] ?? '';
  t.match(
    row(slash.id),
    new RegExp(`slash-command<br><code>/standup</code>.*<code>${rx.url}/slash</code>`),
    'the command and its URL',
  );
  t.match(row(shortcut.id), new RegExp(`<code>start_it</code>.*<code>${rx.url}/shortcut</code>`), 'the shortcut');
  t.match(row(click.id), /<code>approve \(EPHEMERAL_MESSAGE\)<\/code>/, 'the element and where it was');
  t.match(row(view.id), /<code>SUBMIT new_task<\/code>/, 'the view action and the view');
  t.match(row(ev.id), new RegExp(`<code>NEW_MESSAGE</code>.*<code>${rx.url}/events</code>`), 'the event type');
  t.equal((await record(slash.id)).subject, '/standup', 'the record says it too (subject)');
  t.match(await page(`/console/deliveries/${slash.id}`), /<h1>slash-command \/standup to inspect-me<\/h1>/);
});

t.test(
  'Replay with an edited body: a new delivery marked as an edited replay, signed afresh over the edited bytes',
  async (t) => {
    const clock = createTestClock();
    const { rx, app, page, post, trigger, record } = await setup(t, clock);
    rx.on('/slash', { json: { message: 'ok' } });
    const original = await trigger({ kind: 'slash-command', command: '/standup', text: 'as sent' });
    await rx.waitFor(1);
    let html = await page(`/console/deliveries/${original.id}`);
    const prefilled = unescape(
      must(must(/<textarea id="edit-body" name="body"[^>]*>([^<]*)<\/textarea>/.exec(html))[1]),
    );
    t.same(JSON.parse(prefilled), original.payload, 'the editor starts from the body sent');

    clock.set(clock.now() + 60_000);
    const edited = { ...original.payload, text: "it's edited" };
    let res = await post(`/console/deliveries/${original.id}/replay`, { body: JSON.stringify(edited, null, 2) });
    t.equal(res.status, 303);
    const location = must(res.headers.get('location'));
    const copyId = /\/console\/deliveries\/([^?]+)\?done=edited$/.exec(location)?.[1];
    t.ok(copyId && copyId !== original.id, 'a new delivery');
    const sent = must((await rx.waitFor(2))[1]);
    t.equal(sent.raw, JSON.stringify(edited), 'the app got the edited body');
    t.ok(sent.signatureValid, 'signed over the edited bytes with the app’s secret');
    t.equal(sent.headers['x-pumble-request-timestamp'], String(clock.now()), 'at the clock’s now: signed afresh');
    t.equal(sent.headers['x-appreg-delivery-id'], copyId);
    const copy = await record(must(copyId));
    t.match(
      copy,
      {
        editedFrom: original.id,
        kind: 'slash-command',
        url: `${rx.url}/slash`,
        state: 'delivered',
        attempts: [{ replay: true }],
      },
      'marked in the log',
    );
    t.equal((await record(original.id)).attempts.length, 1, 'the original is as it was');
    html = await page(location);
    t.match(html, /Edited replay sent/);
    t.match(
      html,
      /<h1>slash-command \/standup to inspect-me <span class="badge">edited replay<\/span><\/h1>/,
      'marked on its page',
    );
    t.match(
      html,
      new RegExp(`<dt>Edited replay of</dt><dd><a href="/console/deliveries/${original.id}">`),
      'with the way back to the original',
    );
    t.match(await page('/console/deliveries'), new RegExp(`<tr id="d-${copyId}">.*?edited replay`), 'and in the list');

    // the body as it was: an ordinary replay (a new attempt on the same delivery)
    res = await post(`/console/deliveries/${original.id}/replay`, { body: prefilled });
    t.equal(res.headers.get('location'), `/console/deliveries/${original.id}?done=replayed`);
    t.equal((await record(original.id)).attempts.length, 2);

    // what is not a JSON object is the page again with the reason and the text as typed; nothing is sent
    const before = rx.received.length;
    for (const [text, reason] of [
      ['{"text": ', /not valid JSON/],
      ['[1, 2]', /must be a JSON object/],
      [`${'['.repeat(100)}${']'.repeat(100)}`, /nests too deeply/],
    ] as const) {
      res = await post(`/console/deliveries/${original.id}/replay`, { body: text });
      t.equal(res.status, 400, reason.source);
      const again = await res.text();
      t.match(again, reason);
      t.ok(
        again.includes(`<details class="edit" open>`) && again.includes(`>${text.replace(/"/g, '&#34;')}</textarea>`),
        'the editor open, with the text as typed',
      );
    }
    t.equal(rx.received.length, before, 'nothing was sent');
    t.equal(
      (await post(`/console/deliveries/${original.id}/replay`, { body: 'x'.repeat(1024 * 1024 + 1) })).status,
      413,
      'over 1 MiB: too large',
    );

    // an event edited with its body as an object: encoded again, tried once (no retry schedule)
    rx.checkEvents = false; // bodies of the test's own making, not the daemon's
    rx.on('/events', { status: 500, text: 'down' });
    const ev = await trigger({ kind: 'event', event: 'NEW_MESSAGE', body: { tx: 'first' } });
    await rx.waitFor(before + 1);
    const evPayload = (await record(ev.id)).payload;
    res = await post(`/console/deliveries/${ev.id}/replay`, {
      body: JSON.stringify({ ...evPayload, body: { tx: 'second' } }),
    });
    t.equal(res.status, 303);
    const evCopy = must(
      must(/\/console\/deliveries\/([^?]+)\?done=edited$/.exec(must(res.headers.get('location'))))[1],
    );
    const got = must(rx.received.at(-1));
    t.equal(
      got.body.body,
      JSON.stringify({ tx: 'second' }),
      'the event’s body went JSON-encoded, as the platform sends it',
    );
    t.match(await record(evCopy), { editedFrom: ev.id, state: 'failed', attempts: [{ replay: true, status: 500 }] });
    t.notOk((await record(evCopy)).nextAttemptAt, 'an edited replay is not retried');
    t.ok(app.id);
  },
);

t.test(
  'Copy as curl: the exact body, signed at the clock’s now, never the secret; the shell’s reading of it reaches the app signed',
  async (t) => {
    const clock = createTestClock();
    const { rx, app, d, page, post, trigger } = await setup(t, clock);
    rx.on('/slash', { json: {} });
    const original = await trigger({ kind: 'slash-command', command: '/standup', text: "it's a 'quoted' test" });
    await rx.waitFor(1);
    t.match(
      await page(`/console/deliveries/${original.id}`),
      /<button type="submit">Copy as curl<\/button>/,
      'offered on the page',
    );

    /** The command on the page, read by /bin/sh with `curl` a function that prints its arguments. */
    const argsOf = (html: string): string[] => {
      const command = unescape(
        must(must(/<pre class="wrap" id="curl" aria-label="curl command">([^<]*)<\/pre>/.exec(html))[1]),
      );
      const out = execFileSync('/bin/sh', ['-c', `curl() { printf '%s\\0' "$@"; }\n${command}`]);
      return out.toString('utf8').split('\0').slice(0, -1);
    };
    const send = async (args: string[]) => {
      t.same(args.slice(0, 3), ['-X', 'POST', `${rx.url}/slash`]);
      const headers: Record<string, string> = {};
      for (let i = 3; i < args.length - 2; i += 2) {
        t.equal(args[i], '-H');
        const [k, ...v] = must(args[i + 1]).split(': ');
        headers[must(k)] = v.join(': ');
      }
      t.equal(args.at(-2), '--data-binary');
      return { headers, body: must(args.at(-1)) };
    };

    clock.set(clock.now() + 5 * 60_000);
    let res = await post(`/console/deliveries/${original.id}/curl`, {});
    t.equal(res.status, 200);
    let html = await res.text();
    t.notOk(html.includes(must(app.signingSecret)), 'the signing secret is not on the page');
    t.match(html, /the secret is not in it/);
    let { headers, body } = await send(argsOf(html));
    // (on PostgreSQL the stored body's keys come back in the database's order: the same JSON, the bytes the command
    // signs)
    t.same(JSON.parse(body), original.payload, 'the body sent');
    t.equal(
      headers['x-pumble-request-timestamp'],
      String(clock.now()),
      'a fresh timestamp (the clock’s now, not the first attempt’s)',
    );
    t.ok(verify(must(app.signingSecret), headers, body), 'a signature for that body and timestamp');
    const before = rx.received.length;
    await fetch(`${rx.url}/slash`, { method: 'POST', headers, body });
    const arrived = must((await rx.waitFor(before + 1))[before]);
    t.ok(arrived.signatureValid, 'sent as the command says, the app accepts the signature');
    t.equal(arrived.raw, body);

    // the body as edited (a quote in it), from the editor's Copy as curl
    const edited = JSON.stringify({ ...original.payload, text: "don't" });
    res = await post(`/console/deliveries/${original.id}/curl`, { body: edited });
    html = await res.text();
    t.match(html, /As a curl command \(the body as edited\)/);
    ({ headers, body } = await send(argsOf(html)));
    t.equal(body, edited);
    t.ok(verify(must(app.signingSecret), headers, body), 'signed over the edited body');
    t.equal(
      (await post(`/console/deliveries/${original.id}/curl`, { body: 'nope' })).status,
      400,
      'an edited body that is not JSON: the reason',
    );
    t.notOk(d.logs().includes(must(app.signingSecret)), 'nor is it in the daemon’s log');
  },
);
