/**
 * deliver-test --kind block-interaction is about a real source: the message named by
 * --message-id (in its own channel), else a message carrying the clicked button posted first (as
 * the app's bot), ephemeral to the caller with --source-type ephemeral; on a view, the view's own
 * id. An SDK-like app that fetches the message (ctx.fetchMessage) finds it, so the test passes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { installPlatformApp, type platformClient } from '../helpers/platform-client.js';
import { must } from '../../src/must.js';

t.test('a block interaction the app can fetch', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const app = { bot: undefined as ReturnType<typeof platformClient> | undefined };
  const seen: any[] = [];
  // as an app on the SDK does in its handler: fetch the message the click came from, fail when it is not there
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on(
      'end',
      () =>
        void (async () => {
          const body = JSON.parse(raw);
          seen.push(body);
          res.setHeader('content-type', 'application/json');
          if (body.sourceType === 'VIEW') return res.end('{}');
          const got = await must(app.bot).fetchMessage(body.sourceId, body.channelId);
          seen.at(-1).fetched = got;
          if (got.status !== 200) res.statusCode = 500;
          res.end(JSON.stringify(got.status === 200 ? {} : { message: `fetchMessage: ${got.status}` }));
        })().catch((e: unknown) =>
          setImmediate(() => {
            throw e;
          }),
        ),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/blocks`;
  const installed = await installPlatformApp(d, { name: 'approver', manifest: { blockInteraction: { url } } });
  app.bot = installed.bot;
  const g = ['--url', d.url, '--token', d.token];
  const dt = async (...args: string[]) => {
    const r = await runMain([...g, 'deliver-test', installed.app.id, '--kind', 'block-interaction', ...args, '--json']);
    return { ...r, out: r.stdout ? JSON.parse(r.stdout) : undefined };
  };

  t.test("without --message-id: a real message carrying the button, posted by the app's bot", async (t) => {
    const r = await dt('--on-action', 'approve', '--value', 'yes');
    t.equal(r.code, 0, r.stdout + r.stderr);
    const p = r.out.delivery.payload;
    t.match(p, {
      messageType: 'BLOCK_INTERACTION',
      sourceType: 'MESSAGE',
      sourceId: /^msg_/,
      onAction: 'approve',
      payload: '{"value":"yes"}',
    });
    const fetched = seen.at(-1).fetched;
    t.equal(fetched.status, 200, 'the app fetched it');
    t.match(fetched.body, {
      id: p.sourceId,
      channelId: p.channelId,
      author: installed.tokens.botId,
      blocks: [{ type: 'actions', elements: [{ type: 'button', onAction: 'approve', value: 'yes' }] }],
    });
    const general = (await installed.bot.listChannels()).body.find((c: any) => c.channel.name === 'general').channel.id;
    t.equal(p.channelId, general, 'in #general by default');
  });

  t.test(
    'issue 33: --values, checkboxes without a hand-written payload; a date range with --action-type',
    async (t) => {
      const r = await dt('--on-action', 'toppings', '--values', 'cheese,ham,a\\,b');
      t.equal(r.code, 0, r.stdout + r.stderr);
      const p = r.out.delivery.payload;
      t.match(p, { actionType: 'CHECKBOXES', onAction: 'toppings' });
      t.same(JSON.parse(p.payload), { values: ['cheese', 'ham', 'a,b'] }, 'as checkboxes send it; \\, inside a value');
      t.match(seen.at(-1).fetched.body, {
        id: p.sourceId,
        blocks: [
          {
            type: 'actions',
            elements: [
              { type: 'checkboxes', onAction: 'toppings', options: [{ value: 'cheese' }, { value: 'ham' }, {}] },
            ],
          },
        ],
      });
      const none = await dt('--on-action', 'toppings', '--values', '');
      t.equal(none.code, 0, none.stdout + none.stderr);
      t.equal(none.out.delivery.payload.payload, '{"values":[]}', "'' is every box unticked");
      const range = await dt(
        '--on-action',
        'dates',
        '--values',
        '2026-01-05,2026-01-09',
        '--action-type',
        'date_range_picker',
      );
      t.equal(range.code, 0, range.stdout + range.stderr);
      t.match(range.out.delivery.payload, {
        actionType: 'DATE_RANGE_PICKER',
        payload: '{"values":["2026-01-05","2026-01-09"]}',
      });

      for (const [args, why] of [
        [['--values', 'a', '--value', 'b'], /--value and --values: give one/],
        [['--action-type', 'lever'], /--action-type must be one of BUTTON, /],
      ] as const) {
        const bad = await runMain([...g, 'deliver-test', installed.app.id, '--kind', 'block-interaction', ...args]);
        t.equal(bad.code, 2, `${args.join(' ')}: a usage error`);
        t.match(bad.stderr, why);
      }
      const notBlock = await runMain([
        ...g,
        'deliver-test',
        installed.app.id,
        '--kind',
        'slash-command',
        '--values',
        'a',
      ]);
      t.match(notBlock, { code: 2, stderr: /--values is for --kind block-interaction/ });
      const help = (await runMain(['deliver-test', '--help'])).stdout;
      t.match(help, /--values <a,b>/);
      t.match(help, /--on-action toppings --values cheese,ham/, 'an example');
    },
  );

  t.test('--source-type ephemeral: a real ephemeral message to the caller', async (t) => {
    const r = await dt('--source-type', 'ephemeral', '--on-action', 'approve');
    t.equal(r.code, 0, r.stdout + r.stderr);
    const p = r.out.delivery.payload;
    t.equal(p.sourceType, 'EPHEMERAL_MESSAGE');
    t.equal(seen.at(-1).fetched.status, 200);
    const others = await installPlatformApp(d);
    t.equal(
      (await others.bot.fetchMessage(p.sourceId, p.channelId)).status,
      404,
      'seen by the caller (and its author) only',
    );
  });

  t.test('--message-id: that message, in its own channel', async (t) => {
    const made = JSON.parse((await runMain([...g, 'channels', 'create', 'approvals', '--json'])).stdout).channel
      .id as string;
    await installed.user.addUsersToChannel(made, [must(installed.tokens.botId)]);
    const m = (
      await installed.bot.postMessageToChannel(made, 'Approve the release?', {
        blocks: [
          {
            type: 'actions',
            elements: [{ type: 'button', onAction: 'approve', text: { type: 'plain_text', text: 'Approve' } }],
          },
        ],
      })
    ).body;
    const r = await dt('--message-id', m.id, '--on-action', 'approve');
    t.equal(r.code, 0, r.stdout + r.stderr);
    t.match(
      r.out.delivery.payload,
      { sourceType: 'MESSAGE', sourceId: m.id, channelId: made },
      "the channel is the message's",
    );
    t.equal(seen.at(-1).fetched.body.text, 'Approve the release?');
    const missing = await dt('--message-id', 'msg_nope');
    t.equal(missing.code, 4, 'a message that is not there');
    t.match(missing.out, { error: { code: 'not_found' } });
    const elsewhere = await dt('--message-id', m.id, '--channel', 'general');
    t.equal(elsewhere.code, 4, 'a message of another channel than --channel');
    t.match(elsewhere.out, { error: { code: 'invalid_request', details: [{ pointer: '/channelId' }] } });
  });

  t.test("--source-type view: the view's own id; the home view the app published when no view is given", async (t) => {
    const bare = await dt('--source-type', 'view');
    t.equal(bare.code, 0, bare.stderr);
    const p = bare.out.delivery.payload;
    t.match(p, { sourceType: 'VIEW', sourceId: /^view_/, view: { type: 'MODAL' } });
    t.equal(p.sourceId, p.view.id, 'the source is the view');
    const home = await installed.bot.publishHomeView(d.workspaceUserId, {
      blocks: [
        {
          type: 'actions',
          elements: [{ type: 'button', onAction: 'refresh', text: { type: 'plain_text', text: 'Refresh' } }],
        },
      ],
    });
    const onHome = await dt('--source-type', 'view', '--on-action', 'refresh');
    t.match(onHome.out.delivery.payload, {
      sourceType: 'VIEW',
      sourceId: home.body.id,
      view: { id: home.body.id, type: 'HOME' },
    });
    t.equal((await dt('--source-type', 'view', '--message-id', 'msg_x')).code, 2, '--message-id is not for a view');
  });
});
