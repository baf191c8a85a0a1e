/**
 * The workspace in the console over HTTP: channels and messages, the composer
 * (a message, a /command and what the person sees of the answer), an app's blocks and their
 * actions (BLOCK_INTERACTION), a modal opened in the app's answer and submitted (VIEW_ACTION
 * with its state), and the live stream of a channel.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { startReceiver } from '../helpers/receiver.js';
import { signIn } from '../helpers/console.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { must } from '../../src/must.js';

const form = (fields: Record<string, string>) => new URLSearchParams(fields);

const VIEW = {
  type: 'MODAL',
  callbackId: 'new_task',
  title: { type: 'plain_text', text: 'New task' },
  submit: { type: 'plain_text', text: 'Create' },
  blocks: [
    {
      type: 'input',
      blockId: 'title',
      label: { type: 'plain_text', text: 'Title' },
      element: { type: 'plain_text_input', onAction: 'title_input' },
    },
    {
      type: 'input',
      blockId: 'prio',
      label: { type: 'plain_text', text: 'Priority' },
      element: {
        type: 'static_select_menu',
        onAction: 'prio_pick',
        placeholder: { type: 'plain_text', text: 'Pick one' },
        options: [
          { text: { type: 'plain_text', text: 'High' }, value: 'high' },
          { text: { type: 'plain_text', text: 'Low' }, value: 'low' },
        ],
      },
    },
  ],
};

t.test('channels, the composer, an app’s blocks, a click, a modal and the live stream', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app, bot } = await installPlatformApp(d, {
    name: 'tasks',
    manifest: {
      slashCommands: [{ command: '/task', url: `${rx.url}/slash`, usageHint: '[title]', description: 'Make a task' }],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
    },
  });
  rx.secret = app.signingSecret;
  const { cookie, csrf } = await signIn(d);
  const get = (path: string) => fetch(d.url + path, { headers: { cookie }, redirect: 'manual' });
  const post = (path: string, fields: Record<string, string>) =>
    fetch(d.url + path, { method: 'POST', headers: { cookie }, body: form({ csrf, ...fields }), redirect: 'manual' });

  const start = await get('/console/channels');
  t.equal(start.status, 303);
  const channelPath = must(start.headers.get('location'));
  const channelId = decodeURIComponent(must(channelPath.split('/').pop()));
  let html = await (await get(channelPath)).text();
  t.match(html, /<h1 id="channel-title">#general<\/h1>/);
  t.match(html, /#random/, 'the channels the person sees');
  t.match(html, /<label for="message" class="sr">Message<\/label>/, 'the composer is a textbox named Message');
  t.match(
    html,
    /<button type="button" data-command="\/task">\/task <span class="muted">\[title\] — Make a task<\/span><\/button>/,
    'the installed app’s command completes',
  );

  // the live stream of the channel, open while things happen
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const live = await fetch(`${d.url}${channelPath}/events`, { headers: { cookie }, signal: ac.signal });
  t.equal(live.status, 200);
  const reader = must(live.body).getReader();
  let streamed = '';
  const waitStream = async (re: RegExp) => {
    while (!re.test(streamed)) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended');
      streamed += new TextDecoder().decode(value);
    }
  };

  t.equal((await post(`${channelPath}/messages`, { text: 'hello team' })).status, 303, 'a message is posted');
  await waitStream(/hello team/);
  t.pass('the stream sent the new message');
  const forged = await fetch(`${d.url}${channelPath}/messages`, {
    method: 'POST',
    headers: { cookie },
    body: form({ text: 'forged' }),
    redirect: 'manual',
  });
  t.equal(forged.status, 403, 'a POST without the token is refused');

  // /task: the app acks with a message, shown only to the person
  rx.on('/slash', { json: { message: 'Task noted.' } });
  const said = await post(`${channelPath}/messages`, { text: '/task write tests' });
  t.equal(said.status, 303);
  const [slash] = await rx.waitFor(1);
  t.ok(must(slash).signatureValid);
  t.match(must(slash).body, { messageType: 'SLASH_COMMAND', slashCommand: '/task', text: 'write tests', channelId });
  html = await (await get(channelPath)).text();
  t.match(html, /Task noted\.<\/p><\/li>/);
  t.match(html, /class="msg eph"[^]*Only visible to you[^]*Task noted/, 'marked as seen only by the person');
  const unknown = await post(`${channelPath}/messages`, { text: '/nothing here' });
  t.equal(unknown.status, 404, 'an unknown command is the page with the reason');
  t.match(await unknown.text(), /role="alert"[^]*\/nothing/);

  // an app's message with blocks; a click goes to the app, which answers with a modal
  const posted = await bot.postMessageToChannel(channelId, 'fallback', {
    blocks: [
      {
        type: 'rich_text',
        elements: [
          {
            type: 'rich_text_section',
            elements: [
              { type: 'text', text: 'Ready to ', style: { bold: true } },
              { type: 'link', url: 'https://example.com/x', text: 'go' },
            ],
          },
        ],
      },
      { type: 'divider' },
      {
        type: 'actions',
        elements: [
          { type: 'button', onAction: 'open_form', value: 'v1', text: { type: 'plain_text', text: 'New task' } },
          {
            type: 'static_select_menu',
            onAction: 'pick',
            placeholder: { type: 'plain_text', text: 'Size' },
            options: [{ text: { type: 'plain_text', text: 'Small' }, value: 's' }],
          },
        ],
      },
    ],
    attachments: [{ title: 'Attached', text: 'details', color: '#00ff00' }],
  });
  t.equal(posted.status, 200);
  await waitStream(/New task/);
  html = await (await get(channelPath)).text();
  t.match(html, /<strong>Ready to <\/strong><a href="https:\/\/example.com\/x"[^>]*>go<\/a>/, 'rich text');
  t.match(html, /<hr>/);
  t.match(html, /Attached[^]*details/, 'the attachment');
  t.notMatch(html, /fallback/, 'blocks replace the text');
  const actionPath = `${channelPath}/messages/${posted.body.id}/actions`;
  t.match(html, new RegExp(`action="${actionPath.replace(/\//g, '\\/')}"`));

  rx.on('/block', (r) =>
    r.body.onAction === 'open_form' ? { json: { triggerId: r.body.triggerId, view: VIEW, action: 'OPEN' } } : {},
  );
  const clicked = await post(actionPath, {
    act: JSON.stringify({ onAction: 'open_form', type: 'BUTTON', value: 'v1' }),
  });
  t.equal(clicked.status, 303);
  const block = must((await rx.waitFor(2))[1]);
  t.ok(block.signatureValid);
  t.match(block.body, {
    messageType: 'BLOCK_INTERACTION',
    sourceType: 'MESSAGE',
    sourceId: posted.body.id,
    channelId,
    onAction: 'open_form',
    actionType: 'BUTTON',
  });
  t.same(JSON.parse(block.body.payload), { value: 'v1' });
  const chose = await post(actionPath, {
    act: JSON.stringify({ onAction: 'pick', type: 'STATIC_SELECT_MENU', from: 'sel.pick' }),
    'sel.pick': 's',
  });
  t.equal(chose.status, 303);
  const pick = must((await rx.waitFor(3))[2]);
  t.same(JSON.parse(pick.body.payload), { value: 's' }, 'the chosen option');

  html = await (await get(channelPath)).text();
  t.match(
    html,
    /role="dialog" aria-modal="true"[^]*New task[^]*<label for="[^"]+">Title<\/label>[^]*Priority/,
    'the modal with its inputs',
  );
  const viewId = must(must(/action="\/console\/views\/([^"]+)"/.exec(html))[1]);

  rx.on('/view', {});
  const submitted = await post(`/console/views/${viewId}`, {
    do: 'submit',
    's.title.title_input': 'Ship it',
    's.prio.prio_pick': 'high',
  });
  t.equal(submitted.status, 303);
  const va = must((await rx.waitFor(4))[3]);
  t.ok(va.signatureValid);
  t.match(va.body, {
    messageType: 'VIEW_ACTION',
    viewActionType: 'SUBMIT',
    channelId,
    view: { callbackId: 'new_task' },
  });
  t.same(
    va.body.view.state,
    {
      values: {
        title: { title_input: { type: 'plain_text_input', value: 'Ship it' } },
        prio: { prio_pick: { type: 'static_select_menu', value: 'high' } },
      },
    },
    'the state in the shape the SDK reads',
  );
  html = await (await get(channelPath)).text();
  t.notMatch(html, /role="dialog"/, 'an acknowledged submit closes the modal');

  // threads: the reply count, the thread's page, a reply from its composer
  await bot.reply(posted.body.id, channelId, 'first reply');
  html = await (await get(channelPath)).text();
  const threadPath = `${channelPath}/threads/${posted.body.id}`;
  t.match(
    html,
    new RegExp(`<a href="${threadPath.replace(/\//g, '\\/')}">1 reply</a>`),
    'the reply count links to the thread',
  );
  t.notMatch(html, /first reply/, 'replies stay in the thread');
  t.equal(
    (await post(`${channelPath}/messages`, { text: 'second reply', threadRootId: posted.body.id })).headers.get(
      'location',
    ),
    threadPath,
  );
  html = await (await get(threadPath)).text();
  t.match(html, /Thread in #general[^]*Ready to[^]*first reply[^]*second reply/, 'the root, then its replies');
  t.match(html, /name="threadRootId" value="[^"]+"/, 'the thread’s composer replies in it');
  const inThread = await post(`${channelPath}/messages`, {
    text: '/task from the thread',
    threadRootId: posted.body.id,
  });
  t.equal(inThread.headers.get('location'), threadPath, 'a command typed in a thread comes back to it');
  t.match(must(rx.received.at(-1)).body, { messageType: 'SLASH_COMMAND', threadRootId: posted.body.id });
  t.match(
    await (await get(threadPath)).text(),
    /Only visible to you[^]*Task noted\./,
    'with the answer shown in the thread',
  );

  // the app's update of its message appears in the stream
  streamed = '';
  await bot.editMessage(posted.body.id, channelId, 'Done: Ship it');
  await waitStream(/Done: Ship it/);
  t.pass('the edit was streamed');
});

t.test('shortcuts from the menus, a dynamic menu’s options, and the app’s home view', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app, bot } = await installPlatformApp(d, {
    name: 'helper',
    manifest: {
      displayName: 'Helper',
      shortcuts: [
        { shortcutType: 'GLOBAL', url: `${rx.url}/global`, name: 'new_note', displayName: 'New note' },
        { shortcutType: 'ON_MESSAGE', url: `${rx.url}/onmsg`, name: 'save_it', displayName: 'Save message' },
      ],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
      dynamicMenus: [{ url: `${rx.url}/menu`, onAction: 'who' }],
    },
  });
  rx.secret = app.signingSecret;
  const { cookie, csrf } = await signIn(d);
  const get = (path: string) => fetch(d.url + path, { headers: { cookie }, redirect: 'manual' });
  const post = (path: string, fields: Record<string, string>) =>
    fetch(d.url + path, { method: 'POST', headers: { cookie }, body: form({ csrf, ...fields }), redirect: 'manual' });
  const channelPath = must((await get('/console/channels')).headers.get('location'));
  const channelId = decodeURIComponent(must(channelPath.split('/').pop()));

  let html = await (await get(channelPath)).text();
  t.match(html, /<summary>Shortcuts<\/summary>[^]*New note \(Helper\)/, 'the global shortcuts menu');
  rx.on('/global', (r) => ({
    json: {
      triggerId: r.body.triggerId,
      view: { type: 'MODAL', callbackId: 'note', title: { type: 'plain_text', text: 'Note' }, blocks: [] },
      action: 'OPEN',
    },
  }));
  const value = JSON.stringify({ appId: app.id, name: 'new_note' });
  t.equal((await post(`${channelPath}/shortcuts`, { shortcut: value })).status, 303);
  const [global] = await rx.waitFor(1);
  t.ok(must(global).signatureValid);
  t.match(must(global).body, { messageType: 'SHORTCUT', type: 'GLOBAL', shortcut: 'new_note', channelId });
  html = await (await get(channelPath)).text();
  t.match(html, /role="dialog"[^]*>Note</, 'the shortcut’s modal');
  const viewId = must(must(/action="\/console\/views\/([^"]+)"/.exec(html))[1]);
  t.equal((await post(`/console/views/${viewId}`, { do: 'close' })).status, 303);
  t.notMatch(await (await get(channelPath)).text(), /role="dialog"/, 'Close closes it');

  // a message's menu: the message shortcut
  const posted = await bot.postMessageToChannel(channelId, 'pick someone', {
    blocks: [
      {
        type: 'actions',
        elements: [
          { type: 'dynamic_select_menu', onAction: 'who', placeholder: { type: 'plain_text', text: 'Person' } },
        ],
      },
    ],
  });
  html = await (await get(channelPath)).text();
  t.match(html, /<span class="sr">Message actions<\/span>[^]*Save message \(Helper\)/, 'the message’s menu');
  t.equal(
    (
      await post(`${channelPath}/messages/${posted.body.id}/shortcuts`, {
        shortcut: JSON.stringify({ appId: app.id, name: 'save_it' }),
      })
    ).status,
    303,
  );
  const onMsg = must((await rx.waitFor(2))[1]);
  t.match(onMsg.body, {
    messageType: 'SHORTCUT',
    type: 'ON_MESSAGE',
    shortcut: 'save_it',
    messageId: posted.body.id,
    channelId,
  });

  // the dynamic select: the app's options
  t.match(html, /data-menu="who"/);
  rx.on('/menu', (r) => ({
    json: {
      onAction: 'who',
      triggerId: r.body.triggerId,
      options: [
        { text: { type: 'plain_text', text: 'Ana' }, value: 'u1' },
        { text: { type: 'plain_text', text: 'Bo' }, value: 'u2' },
      ],
    },
  }));
  const menu = await post(`${channelPath}/messages/${posted.body.id}/menu`, { onAction: 'who', query: '' });
  t.equal(menu.status, 200);
  t.same(await menu.json(), {
    options: [
      { label: 'Ana', value: 'u1' },
      { label: 'Bo', value: 'u2' },
    ],
  });
  const dyn = must((await rx.waitFor(3))[2]);
  t.match(dyn.body, { messageType: 'DYNAMIC_MENU', onAction: 'who', sourceType: 'MESSAGE', sourceId: posted.body.id });

  const me = must(
    ((await bot.listWorkspaceUsers()).body as Array<{ id: string; name: string }>).find((u) => u.name === 'Owner'),
  );
  // an app's ephemeral messages: shown, marked, to their recipients only
  const other = await secondUser(d);
  await bot.postEphemeral(channelId, 'just for you', me.id);
  await bot.postEphemeral(channelId, 'for someone else', other.id);
  html = await (await get(channelPath)).text();
  t.match(html, /class="msg eph"[^]*Only visible to you[^]*just for you/, 'an ephemeral message to me is marked');
  t.notMatch(html, /for someone else/, 'one to another person is not shown');

  // the home view the app published for the person; its button goes to the app from a VIEW
  const published = await bot.call('POST', `/v1/app/homeView/workspaceUsers/${me.id}`, {
    data: {
      blocks: [
        {
          type: 'rich_text',
          elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'Welcome home' }] }],
        },
        {
          type: 'actions',
          elements: [
            { type: 'button', onAction: 'refresh', value: 'r', text: { type: 'plain_text', text: 'Refresh' } },
          ],
        },
      ],
    },
  });
  t.equal(published.status, 200);
  html = await (await get(channelPath)).text();
  t.match(html, new RegExp(`<a href="/console/home/${app.id}">Helper</a>`), 'the app’s home in the navigation');
  html = await (await get(`/console/home/${app.id}`)).text();
  t.match(html, /Welcome home/);
  t.equal(
    (
      await post(`/console/home/${app.id}/actions`, {
        act: JSON.stringify({ onAction: 'refresh', type: 'BUTTON', value: 'r' }),
      })
    ).status,
    303,
  );
  const home = must((await rx.waitFor(4))[3]);
  t.match(home.body, {
    messageType: 'BLOCK_INTERACTION',
    sourceType: 'VIEW',
    onAction: 'refresh',
    view: { type: 'HOME' },
  });

  // option groups: a group that is no object, or whose options are no list, offers nothing (each was a 500)
  const label = (text: string) => ({ type: 'plain_text', text });
  rx.on('/menu', (r) => ({
    json: {
      onAction: 'who',
      triggerId: r.body.triggerId,
      optionGroups: [
        null,
        { label: label('Team'), options: 'none' },
        { label: label('Crew'), options: [{ text: label('Cy'), value: 'u3' }] },
      ],
    },
  }));
  const grouped = await post(`${channelPath}/messages/${posted.body.id}/menu`, { onAction: 'who', query: '' });
  t.equal(grouped.status, 200, 'a menu answer with odd groups still answers');
  t.same(await grouped.json(), { options: [{ label: 'Crew: Cy', value: 'u3' }] }, 'with the options of its good group');
});

t.test('views follow the app’s answers: PUSH, a button in the view, UPDATE, CLOSE', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const { app } = await installPlatformApp(d, {
    name: 'wizard',
    manifest: {
      slashCommands: [{ command: '/wiz', url: `${rx.url}/slash` }],
      blockInteraction: { url: `${rx.url}/block` },
      viewAction: { url: `${rx.url}/view` },
      dynamicMenus: [{ url: `${rx.url}/menu`, onAction: 'x' }],
    },
  });
  rx.secret = app.signingSecret;
  const { cookie, csrf } = await signIn(d);
  const get = (path: string) => fetch(d.url + path, { headers: { cookie }, redirect: 'manual' });
  const post = (path: string, fields: Record<string, string>) =>
    fetch(d.url + path, { method: 'POST', headers: { cookie }, body: form({ csrf, ...fields }), redirect: 'manual' });
  const channelPath = must((await get('/console/channels')).headers.get('location'));
  const modal = async () => {
    const html = await (await get(channelPath)).text();
    const m =
      /aria-labelledby="modal-title" id="modal"><form method="post" action="\/console\/views\/([^"]+)"[^]*?<h2 id="modal-title">([^<]*)<\/h2>/.exec(
        html,
      );
    return m ? { id: must(m[1]), title: must(m[2]), html } : undefined;
  };
  const step = (title: string, blocks: unknown[] = []) => ({
    type: 'MODAL',
    callbackId: title,
    title: { type: 'plain_text', text: title },
    blocks,
  });

  rx.on('/slash', {
    json: {
      view: step('Step 1', [
        {
          type: 'input',
          blockId: 'name',
          label: { type: 'plain_text', text: 'Name' },
          element: { type: 'plain_text_input', onAction: 'name_in' },
        },
      ]),
      action: 'OPEN',
    },
  });
  await post(`${channelPath}/messages`, { text: '/wiz' });
  const one = must(await modal());
  t.equal(one.title, 'Step 1');

  rx.on('/view', () => ({
    json: {
      view: step('Step 2', [
        {
          type: 'actions',
          elements: [{ type: 'button', onAction: 'more', value: 'm', text: { type: 'plain_text', text: 'More' } }],
        },
      ]),
      action: 'PUSH',
    },
  }));
  await post(`/console/views/${one.id}`, { do: 'submit', 's.name.name_in': 'Ada' });
  const two = must(await modal());
  t.equal(two.title, 'Step 2', 'the pushed view is on top');
  t.match(
    two.html,
    /<button type="submit" id="[^"]+" name="act" value="[^"]*more[^"]*" formnovalidate>More<\/button>/,
    'a button of the view, sent even when a required field is empty',
  );

  rx.on('/block', (r) => ({
    json: { view: { ...r.body.view, title: { type: 'plain_text', text: 'Step 2, updated' } }, action: 'UPDATE' },
  }));
  await post(`/console/views/${two.id}`, { act: JSON.stringify({ onAction: 'more', type: 'BUTTON', value: 'm' }) });
  const block = must(rx.received.find((r) => r.body?.messageType === 'BLOCK_INTERACTION'));
  t.match(block.body, {
    sourceType: 'VIEW',
    sourceId: two.id,
    onAction: 'more',
    view: { id: two.id, callbackId: 'Step 2' },
  });
  const updated = must(await modal());
  t.equal(updated.title, 'Step 2, updated', 'the view updated in place');
  t.equal(updated.id, two.id);

  await post(`/console/views/${updated.id}`, { do: 'close' });
  t.equal(
    (await post(`/console/views/${updated.id}/menu`, { onAction: 'x' })).status,
    404,
    'a closed view has no menus',
  );
  const back = must(await modal());
  t.equal(back.title, 'Step 1', 'Close goes back to the view under it');
  t.match(back.html, /value="Ada"/, 'with what was typed in it');
  t.equal(
    (await post(`/console/views/${back.id}/menu`, { onAction: 'x' })).status,
    200,
    'the view on top asks its app for a menu’s options',
  );
  t.match(must(rx.received.at(-1)).body, {
    messageType: 'DYNAMIC_MENU',
    onAction: 'x',
    sourceType: 'VIEW',
    sourceId: back.id,
  });
  rx.on('/view', { json: { action: 'CLOSE' } });
  await post(`/console/views/${back.id}`, { do: 'submit', 's.name.name_in': 'Ada' });
  t.equal(await modal(), undefined, 'the app’s CLOSE closes the last view');
});
