/**
 * A live page misses nothing: a console page renders the cursor its stream resumes from, so a
 * change made between the page's render and the stream's subscription (a message posted while the
 * page loads, a delivery made or retried meanwhile) is sent as soon as the stream opens, and a
 * stream that reconnects (Last-Event-ID) gets what it missed while it was down. Whatever a stream
 * sends before its `retry:` line is its catch-up.
 */
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { signIn } from '../helpers/console.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { startReceiver } from '../helpers/receiver.js';
import { must } from '../../src/must.js';

type Tap = { teardown(fn: () => unknown): void };

/** The stream URL a page rendered (data-stream, HTML-decoded). */
const streamOf = (html: string) =>
  must(must(/data-stream="([^"]+)"/.exec(html))[1])
    .replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)))
    .replace(/&amp;/g, '&');

/** Open a stream and read its catch-up: every event up to its `retry:` line, parsed. */
async function catchUp(t: Tap, d: TestDaemon, cookie: string, url: string, headers: Record<string, string> = {}) {
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const res = await fetch(d.url + url, { headers: { cookie, ...headers }, signal: ac.signal });
  if (res.status !== 200) throw new Error(`stream ${url}: ${res.status}`);
  const reader = must(res.body).getReader();
  let text = '';
  while (!/^retry: /m.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the stream ended before its retry: line');
    text += new TextDecoder().decode(value);
  }
  ac.abort();
  const before = text.slice(0, text.search(/^retry: /m));
  return before
    .split('\n\n')
    .filter((b) => /^event: /m.test(b))
    .map((b) => ({
      id: /^id: (.*)$/m.exec(b)?.[1],
      event: must(must(/^event: (.*)$/m.exec(b))[1]),
      data: JSON.parse(must(must(/^data: (.*)$/m.exec(b))[1])) as { id?: string; html: string },
    }));
}

t.test(
  'a channel page: a message posted while the page loads is sent as the stream opens; a reconnection resumes',
  async (t) => {
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const { bot } = await installPlatformApp(d);
    const { cookie } = await signIn(d);
    const general = (await bot.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id as string;
    await bot.postMessageToChannel(general, 'before the page');
    const html = await (await fetch(`${d.url}/console/channels/${general}`, { headers: { cookie } })).text();
    const url = streamOf(html);
    t.match(url, /\?since=/, 'the page renders the cursor its stream resumes from');
    t.same(await catchUp(t, d, cookie, url), [], 'nothing changed since the render: nothing is sent again');

    await bot.postMessageToChannel(general, 'posted while the page loads'); // after the render, before the stream
    const got = await catchUp(t, d, cookie, url);
    t.equal(got.length, 1, 'the timeline is sent as soon as the stream opens');
    t.equal(must(got[0]).event, 'timeline');
    t.match(must(got[0]).data.html, /posted while the page loads/);
    t.ok(must(got[0]).id, 'with the cursor it brings the page to');

    // the browser reconnects with the last event's id: what was posted while it was away comes first
    await bot.postMessageToChannel(general, 'posted while the stream was down');
    const again = await catchUp(t, d, cookie, url, { 'last-event-id': must(must(got[0]).id) });
    t.equal(again.length, 1);
    t.match(must(again[0]).data.html, /posted while the stream was down/);
    t.same(await catchUp(t, d, cookie, url, { 'last-event-id': must(must(again[0]).id) }), [], 'up to date: nothing');
  },
);

t.test(
  'the delivery list and a delivery’s page: what changed after the render is sent as the stream opens',
  async (t) => {
    const rx = await startReceiver();
    t.teardown(() => rx.close());
    const d = await startTestDaemon();
    t.teardown(() => d.stop());
    const { app } = await installPlatformApp(d, {
      manifest: { slashCommands: [{ command: '/live', url: `${rx.url}/slash`, description: 'Live' }] },
    });
    rx.secret = app.signingSecret;
    const { cookie } = await signIn(d);
    const trigger = async () => {
      const r = await d.api(`${d.mgmt}/deliveries`, {
        method: 'POST',
        json: { appId: app.id, kind: 'slash-command', command: '/live', text: 'x' },
      });
      t.equal(r.status, 201, 'a trigger');
      return ((await r.json()) as { id: string }).id;
    };

    const list = streamOf(await (await fetch(`${d.url}/console/deliveries`, { headers: { cookie } })).text());
    t.match(list, /since=\d+/);
    const made = await trigger(); // after the list's render, before its stream
    const rows = await catchUp(t, d, cookie, list);
    t.ok(
      rows.some((r) => r.event === 'row' && r.data.id === made),
      'the delivery made while the list loaded is sent as the stream opens',
    );

    const one = streamOf(await (await fetch(`${d.url}/console/deliveries/${made}`, { headers: { cookie } })).text());
    t.match(one, /delivery=.*&since=/);
    t.same(await catchUp(t, d, cookie, one), [], 'unchanged since the render: nothing sent');
    t.equal(
      (await d.api(`${d.mgmt}/deliveries/${made}/replay`, { method: 'POST' })).status,
      200,
      'replayed after the page was rendered',
    );
    const after = await catchUp(t, d, cookie, one);
    t.equal(after.length, 1, 'the delivery as it is now is sent as the stream opens');
    t.equal(must(after[0]).event, 'delivery');
    t.match(must(after[0]).data.html, /Attempts \(2\)/);
  },
);
