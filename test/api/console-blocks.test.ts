/**
 * Every interactive element of the SDK's docs/blocks.md in the console, over HTTP: checkboxes,
 * a date picker, a date-range picker and a text input in an app's message, its ephemeral message
 * and its attachment (whose button works), in a modal (input blocks, a section's input accessory,
 * dispatchAction, an actions block) and in a home view. Each reaches the app as the SDK's apps
 * read it: BLOCK_INTERACTION's `payload` `{value}` or `{values}`, VIEW_ACTION's
 * `state.values[blockId][onAction]` `{type, value}` or `{type, values}` (an empty date range left
 * out, never `values: [""]`). What the person chose stays shown.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { signIn } from '../helpers/console.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];
const plain = (text: string) => ({ type: 'plain_text', text });
const opt = (text: string, value: string) => ({ text: plain(text), value });
const unescape = (s: string) =>
  s.replace(/&#34;/g, '"').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'");

/** The `act` of the element `onAction` on the page, as the page has it. */
function actOf(html: string, onAction: string): Record<string, string> {
  const m = new RegExp(`name="act" value="([^"]*&#34;onAction&#34;:&#34;${onAction}&#34;[^"]*)"`).exec(html);
  if (!m) throw new Error(`no element ${onAction} on the page`);
  return JSON.parse(unescape(must(m[1]))) as Record<string, string>;
}

/** A form body: repeated fields for arrays (ticked boxes, the two dates of a range). */
function body(fields: Record<string, string | string[]>): URLSearchParams {
  const f = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) f.append(k, one);
  return f;
}

async function setup(t: TapTest) {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app, bot } = await installPlatformApp(d, {
    name: 'blocks',
    manifest: {
      displayName: 'Blocks',
      slashCommands: [{ command: '/form', url: `${rx.url}/slash` }],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
    },
  });
  rx.secret = app.signingSecret;
  const { cookie, csrf } = await signIn(d);
  const get = async (path: string) => (await fetch(d.url + path, { headers: { cookie } })).text();
  const post = (path: string, fields: Record<string, string | string[]>) =>
    fetch(d.url + path, { method: 'POST', headers: { cookie }, body: body({ csrf, ...fields }), redirect: 'manual' });
  const channelPath = must(
    (await fetch(`${d.url}/console/channels`, { headers: { cookie }, redirect: 'manual' })).headers.get('location'),
  );
  const channelId = decodeURIComponent(must(channelPath.split('/').pop()));
  const me = must(
    ((await bot.listWorkspaceUsers()).body as Array<{ id: string; name: string }>).find((u) => u.name === 'Owner'),
  ).id;
  /** The next BLOCK_INTERACTION or VIEW_ACTION the app receives after `fn`. */
  const sent = async (fn: () => Promise<Response>, status = 303) => {
    const before = rx.received.length;
    const res = await fn();
    t.equal(res.status, status, `answered ${status}`);
    return status === 303 ? must((await rx.waitFor(before + 1))[before]) : undefined;
  };
  return { d, rx, app, bot, get, post, channelPath, channelId, me, sent };
}

t.test(
  'a message: checkboxes, a date, a date range, a text input and an attachment’s button reach the app in the SDK’s shapes',
  async (t) => {
    const { rx, bot, get, post, channelPath, channelId, me, sent } = await setup(t);
    const checks = {
      type: 'checkboxes',
      onAction: 'cb',
      options: [opt('One', '1'), opt('Two', '2'), opt('Three', '3')],
      initial_options: [opt('One', '1')],
    };
    const posted = await bot.postMessageToChannel(channelId, 'fallback', {
      blocks: [
        {
          type: 'actions',
          elements: [
            checks,
            { type: 'date_picker', onAction: 'dp', initial_date: '2026-01-01', placeholder: plain('Due') },
            { type: 'date_range_picker', onAction: 'dr', placeholder: plain('Trip') },
            {
              type: 'plain_text_input',
              onAction: 'pt',
              placeholder: plain('Say'),
              interaction_triggers: ['on_enter_pressed'],
            },
          ],
        },
      ],
      attachments: [
        {
          color: '#36a64f',
          blocks: [
            {
              type: 'rich_text',
              elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'In the attachment' }] }],
            },
            {
              type: 'actions',
              elements: [{ type: 'button', onAction: 'att_btn', value: 'a1', text: plain('Attached button') }],
            },
          ],
        },
      ],
    });
    t.equal(posted.status, 200);
    const messageId = posted.body.id as string;
    const actions = `${channelPath}/messages/${messageId}/actions`;
    let html = await get(channelPath);
    t.notMatch(html, /\((checkboxes|date_picker|date_range_picker|plain_text_input)\)/, 'no element is a placeholder');
    t.match(html, /<input type="checkbox" name="v" value="1" id="[^"]+" checked/, 'the initial option is ticked');
    t.match(
      html,
      /<input type="date" id="[^"]+" name="v" value="2026-01-01">/,
      'the date picker with its initial date',
    );
    t.match(html, /In the attachment[^]*>Attached button<\/button>/, 'the attachment’s blocks, its button included');

    const ticked = await sent(() => post(actions, { act: JSON.stringify(actOf(html, 'cb')), v: ['1', '3'] }));
    t.ok(must(ticked).signatureValid);
    t.match(must(ticked).body, {
      messageType: 'BLOCK_INTERACTION',
      sourceType: 'MESSAGE',
      sourceId: messageId,
      channelId,
      onAction: 'cb',
      actionType: 'CHECKBOXES',
    });
    t.same(
      JSON.parse(must(ticked).body.payload),
      { values: ['1', '3'] },
      'every box ticked, as the SDK’s example reads it',
    );
    html = await get(channelPath);
    t.match(
      html,
      /value="1" id="[^"]+" checked[^]*value="2" id="[^"]+" data-submit[^]*value="3" id="[^"]+" checked/,
      'the boxes stay as the person ticked them',
    );
    const none = await sent(() => post(actions, { act: JSON.stringify(actOf(html, 'cb')) }));
    t.same(JSON.parse(must(none).body.payload), { values: [] }, 'no box ticked: an empty list');

    const day = await sent(() => post(actions, { act: JSON.stringify(actOf(html, 'dp')), v: '2026-03-15' }));
    t.match(must(day).body, { onAction: 'dp', actionType: 'DATE_PICKER' });
    t.same(JSON.parse(must(day).body.payload), { value: '2026-03-15' });
    t.match(
      await get(channelPath),
      /<input type="date" id="[^"]+" name="v" value="2026-03-15">/,
      'the date chosen stays shown',
    );

    const range = await sent(() =>
      post(actions, { act: JSON.stringify(actOf(html, 'dr')), v: ['2026-03-01', '2026-03-09'] }),
    );
    t.match(must(range).body, { onAction: 'dr', actionType: 'DATE_RANGE_PICKER' });
    t.same(JSON.parse(must(range).body.payload), { values: ['2026-03-01', '2026-03-09'] }, 'a range is [start, end]');

    const text = await sent(() => post(actions, { act: JSON.stringify(actOf(html, 'pt')), v: 'hello there' }));
    t.match(must(text).body, { onAction: 'pt', actionType: 'PLAIN_TEXT_INPUT' });
    t.same(JSON.parse(must(text).body.payload), { value: 'hello there' });

    const attached = await sent(() => post(actions, { act: JSON.stringify(actOf(html, 'att_btn')) }));
    t.match(must(attached).body, {
      onAction: 'att_btn',
      actionType: 'BUTTON',
      sourceType: 'MESSAGE',
      sourceId: messageId,
    });
    t.same(JSON.parse(must(attached).body.payload), { value: 'a1' }, 'the attachment’s button works');

    // a choice not made is the page again with the reason, and nothing is sent
    const count = rx.received.length;
    for (const [name, fields, reason] of [
      ['a date picker left empty', { act: JSON.stringify(actOf(html, 'dp')), v: '' }, /Choose a date first/],
      [
        'a range with one date',
        { act: JSON.stringify(actOf(html, 'dr')), v: ['2026-03-01', ''] },
        /Choose both dates of the range/,
      ],
      [
        'a range that ends before it starts',
        { act: JSON.stringify(actOf(html, 'dr')), v: ['2026-03-09', '2026-03-01'] },
        /The range ends before it starts/,
      ],
      ['an act that is not JSON', { act: '{nope' }, /not one of this message/],
    ] as const) {
      const res = await post(actions, fields as Record<string, string | string[]>);
      t.equal(res.status, 400, name);
      t.match(await res.text(), reason);
    }
    t.equal(rx.received.length, count, 'nothing reached the app');

    // the app replaces its message with other boxes: what was ticked in the old ones is not shown in them
    const replaced = await bot.call('PUT', `/v1/channels/${channelId}/messages/${messageId}`, {
      data: {
        text: 'new',
        blocks: [{ type: 'actions', elements: [{ ...checks, options: [...checks.options, opt('Four', '4')] }] }],
      },
    });
    t.equal(replaced.status, 200);
    html = await get(channelPath);
    t.match(html, /value="1" id="[^"]+" checked/, 'the new element starts from its initial options');

    // an ephemeral message's elements: sourceType EPHEMERAL_MESSAGE
    const eph = await bot.call('POST', `/v1/channels/${channelId}/messages`, {
      data: {
        text: 'only you',
        ephemeral: { sendToUsers: [me] },
        blocks: [
          {
            type: 'actions',
            elements: [
              { type: 'checkboxes', onAction: 'eph_cb', options: [opt('Yes', 'y')] },
              { type: 'date_picker', onAction: 'eph_dp' },
            ],
          },
        ],
      },
    });
    t.equal(eph.status, 200);
    html = await get(channelPath);
    const ephActions = `${channelPath}/messages/${eph.body.id}/actions`;
    const ephTick = await sent(() => post(ephActions, { act: JSON.stringify(actOf(html, 'eph_cb')), v: 'y' }));
    t.match(must(ephTick).body, { sourceType: 'EPHEMERAL_MESSAGE', sourceId: eph.body.id, actionType: 'CHECKBOXES' });
    t.same(JSON.parse(must(ephTick).body.payload), { values: ['y'] });
    const ephDay = await sent(() => post(ephActions, { act: JSON.stringify(actOf(html, 'eph_dp')), v: '2026-05-05' }));
    t.same(JSON.parse(must(ephDay).body.payload), { value: '2026-05-05' });
  },
);

t.test(
  'a modal: checkboxes, a date, a date range and a section’s input accessory make the state the SDK reads; dispatchAction and an actions block send at once',
  async (t) => {
    const { rx, get, post, channelPath, sent } = await setup(t);
    const blocks = [
      {
        type: 'input',
        blockId: 'cb',
        label: plain('Pick'),
        optional: true,
        dispatchAction: true,
        element: { type: 'checkboxes', onAction: 'cbx', options: [opt('A', 'a'), opt('B', 'b'), opt('C', 'c')] },
      },
      { type: 'input', blockId: 'day', label: plain('Day'), element: { type: 'date_picker', onAction: 'd' } },
      {
        type: 'input',
        blockId: 'span',
        label: plain('Span'),
        optional: true,
        element: { type: 'date_range_picker', onAction: 'r' },
      },
      {
        type: 'section',
        text: plain('A note beside it'),
        accessory: {
          type: 'input',
          blockId: 'note',
          label: plain('Note'),
          element: { type: 'plain_text_input', onAction: 'n' },
        },
      },
      {
        type: 'actions',
        elements: [{ type: 'checkboxes', onAction: 'tags', options: [opt('X', 'x'), opt('Y', 'y')] }],
      },
    ];
    const view = { type: 'MODAL', callbackId: 'cb_form', title: plain('Form'), submit: plain('Save'), blocks };
    rx.on('/slash', { json: { view, action: 'OPEN' } });
    rx.on('/block', { json: {} });
    t.equal((await post(`${channelPath}/messages`, { text: '/form' })).status, 303);
    let html = await get(channelPath);
    const viewId = must(must(/action="\/console\/views\/([^"]+)"/.exec(html))[1]);
    t.match(html, /<legend>Pick <span class="muted">\(optional\)<\/span><\/legend>/, 'the checkboxes, labelled');
    t.match(html, /<input type="date" id="[^"]+" name="s\.day\.d" value="" required>/, 'the date picker, required');
    t.equal((html.match(/name="s\.span\.r"/g) ?? []).length, 2, 'the range: two dates');
    t.match(
      html,
      /A note beside it[^]*<label for="[^"]+">Note<\/label><span class="pick text"><input type="text" id="[^"]+" name="s\.note\.n"/,
      'the section’s accessory is an input of the state',
    );

    // dispatchAction: ticking sends BLOCK_INTERACTION from the VIEW, with the view's state as it is
    const dispatched = await sent(() =>
      post(`/console/views/${viewId}`, {
        act: JSON.stringify(actOf(html, 'cbx')),
        's.cb.cbx': ['a', 'c'],
        's.day.d': '2026-04-01',
        's.span.r': ['', ''],
        's.note.n': '',
      }),
    );
    t.match(must(dispatched).body, {
      messageType: 'BLOCK_INTERACTION',
      sourceType: 'VIEW',
      sourceId: viewId,
      onAction: 'cbx',
      actionType: 'CHECKBOXES',
      view: { callbackId: 'cb_form' },
    });
    t.same(JSON.parse(must(dispatched).body.payload), { values: ['a', 'c'] });
    t.same(
      must(dispatched).body.view.state,
      {
        values: {
          cb: { cbx: { type: 'checkboxes', values: ['a', 'c'] } },
          day: { d: { type: 'date_picker', value: '2026-04-01' } },
        },
      },
      'the state: no empty range, no empty note',
    );
    html = await get(channelPath);
    t.match(
      html,
      /name="s\.cb\.cbx" value="a" id="[^"]+" checked[^]*name="s\.cb\.cbx" value="c" id="[^"]+" checked/,
      'the modal keeps what was ticked',
    );
    t.match(html, /name="s\.day\.d" value="2026-04-01"/, 'and the date');

    // an actions block in the modal: its own field, sent at once, shown again
    const tags = actOf(html, 'tags');
    const tagged = await sent(() =>
      post(`/console/views/${viewId}`, { act: JSON.stringify(tags), [must(tags.from)]: 'y', 's.day.d': '2026-04-01' }),
    );
    t.match(must(tagged).body, { sourceType: 'VIEW', onAction: 'tags', actionType: 'CHECKBOXES' });
    t.same(JSON.parse(must(tagged).body.payload), { values: ['y'] });
    t.notOk('tags' in must(tagged).body.view.state.values, 'an actions block is not part of the state');
    t.match(await get(channelPath), /value="y" id="[^"]+" checked/, 'the tick stays shown');

    // submit with one date of the optional range: left out; the app answers with an error at it
    rx.on('/view', (r) => ({
      json: {
        view: {
          ...r.body.view,
          blocks: r.body.view.blocks.map((b: Record<string, unknown>) =>
            b.blockId === 'span' ? { ...b, validationError: 'Give both dates' } : b,
          ),
        },
        action: 'UPDATE',
      },
    }));
    const first = await sent(() =>
      post(`/console/views/${viewId}`, {
        do: 'submit',
        's.cb.cbx': 'b',
        's.day.d': '2026-04-02',
        's.span.r': ['2026-04-03', ''],
        's.note.n': 'hi',
      }),
    );
    t.match(must(first).body, { messageType: 'VIEW_ACTION', viewActionType: 'SUBMIT' });
    t.same(
      must(first).body.view.state,
      {
        values: {
          cb: { cbx: { type: 'checkboxes', values: ['b'] } },
          day: { d: { type: 'date_picker', value: '2026-04-02' } },
          note: { n: { type: 'plain_text_input', value: 'hi' } },
        },
      },
      'a range with one date is left out, never values: [""]',
    );
    html = await get(channelPath);
    t.match(
      html,
      /name="s\.span\.r" value="" aria-describedby="([^"]+)" aria-invalid="true"[^]*<p class="error" id="\1">Give both dates<\/p>/,
      'the app’s validation error at its field',
    );

    rx.on('/view', { json: {} });
    const second = await sent(() =>
      post(`/console/views/${viewId}`, {
        do: 'submit',
        's.day.d': '2026-04-02',
        's.span.r': ['2026-04-03', '2026-04-05'],
        's.note.n': 'hi',
      }),
    );
    t.same(
      must(second).body.view.state.values.span,
      { r: { type: 'date_range_picker', values: ['2026-04-03', '2026-04-05'] } },
      'both dates: the range',
    );
    t.same(
      must(second).body.view.state.values.cb,
      { cbx: { type: 'checkboxes', values: [] } },
      'no box ticked: an empty list',
    );
    t.notMatch(await get(channelPath), /role="dialog"/, 'the acknowledged submit closed the modal');
  },
);

t.test('a home view: its input blocks are its state, its checkboxes send at once, and both stay shown', async (t) => {
  const { app, bot, get, post, me, sent } = await setup(t);
  const published = await bot.call('POST', `/v1/app/homeView/workspaceUsers/${me}`, {
    data: {
      blocks: [
        { type: 'input', blockId: 'when', label: plain('When'), element: { type: 'date_picker', onAction: 'w' } },
        {
          type: 'actions',
          elements: [{ type: 'checkboxes', onAction: 'prefs', options: [opt('Mail', 'mail'), opt('Chat', 'chat')] }],
        },
      ],
    },
  });
  t.equal(published.status, 200);
  let html = await get(`/console/home/${app.id}`);
  t.match(
    html,
    /<form method="post" action="\/console\/home\/[^"]+\/actions" class="msg">/,
    'the home view is one form',
  );
  const prefs = actOf(html, 'prefs');
  const ticked = await sent(() =>
    post(`/console/home/${app.id}/actions`, {
      act: JSON.stringify(prefs),
      [must(prefs.from)]: 'chat',
      's.when.w': '2026-06-01',
    }),
  );
  t.match(must(ticked).body, {
    messageType: 'BLOCK_INTERACTION',
    sourceType: 'VIEW',
    onAction: 'prefs',
    actionType: 'CHECKBOXES',
    view: { type: 'HOME' },
  });
  t.same(JSON.parse(must(ticked).body.payload), { values: ['chat'] });
  t.same(
    must(ticked).body.view.state,
    { values: { when: { w: { type: 'date_picker', value: '2026-06-01' } } } },
    'the home view’s state',
  );
  html = await get(`/console/home/${app.id}`);
  t.match(html, /name="s\.when\.w" value="2026-06-01"/, 'the date typed stays');
  t.match(html, /value="chat" id="[^"]+" checked/, 'the box ticked stays');
});
