/**
 * deliver-test and the channel: what the app posted within the wait, --expect-message, --channel
 * by name, --source-type, --view-action, and the real shapes of the made-up APP_UNAUTHORIZED and
 * APP_UNINSTALLED bodies.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { installPlatformApp } from '../helpers/platform-client.js';
import { until } from '../helpers/until.js';
import { must } from '../../src/must.js';

t.test('deliver-test watches the channel the trigger names', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const g = ['--url', d.url, '--token', d.token];
  const installed = await installPlatformApp(d, {
    name: 'poster',
    events: ['APP_UNAUTHORIZED', 'APP_UNINSTALLED'],
    eventsUrl: `${rx.url}/events`,
    manifest: {
      slashCommands: [{ command: '/post', url: `${rx.url}/slash` }],
      blockInteraction: { url: `${rx.url}/blocks` },
      viewAction: { url: `${rx.url}/views` },
    },
  });
  const app = installed.app;
  rx.secret = app.signingSecret;
  // the app posts where the command was typed: before its ack for "now"; otherwise after it, when the
  // test lets it (so a run that takes one look, however slow the machine, has looked before)
  const later: Array<() => Promise<unknown>> = [];
  rx.on('/slash', async (req) => {
    const b = req.body as { channelId: string; text: string };
    const post = () => installed.bot.postMessageToChannel(b.channelId, `posted: ${b.text}`);
    if (b.text === 'now') {
      await post();
      return { json: {} };
    }
    later.push(post);
    return { json: { message: 'ok' } };
  });
  const dt = (...args: string[]) => runMain([...g, 'deliver-test', app.id, ...args]);
  const made = await runMain([...g, 'channels', 'create', 'standups', '--json']);
  const standups = JSON.parse(made.stdout).channel.id as string;

  t.test("--channel by name; the app's message within the wait; --expect-message", async (t) => {
    const watching = dt(
      '--kind',
      'slash-command',
      '--text',
      'later',
      '--channel',
      '#standups',
      '--expect-message',
      '^posted: later$',
      '--wait-ms',
      '30000',
      '--json',
    );
    await until(() => later.length === 1);
    await must(later.shift())(); // posted while the run watches the channel
    const r = await watching;
    t.equal(r.code, 0, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout);
    t.equal(out.delivery.payload.channelId, standups, 'the name is sent as the channel id');
    t.same(
      out.messages.map((m: { text: string }) => m.text),
      ['posted: later'],
    );
    const human = await dt('--kind', 'slash-command', '--text', 'now');
    t.equal(human.code, 0, human.stderr);
    t.match(
      human.stdout,
      /the app posted\n\s+\d\d:\d\d:\d\d \S.*: posted: now msg_/,
      'one look right after the answer, into #general by default',
    );
    const quiet = await dt('--kind', 'slash-command', '--text', 'later', '--channel', standups);
    t.match(quiet.stdout, /no message posted in ch_\S+\)/, 'with no wait, a message made after the answer is not seen');
    await must(later.shift())(); // made after the run's one look
    const miss = await dt(
      '--kind',
      'slash-command',
      '--text',
      'x',
      '--expect-message',
      'standup started',
      '--wait-ms',
      '0',
      '--json',
    );
    t.equal(miss.code, 6, 'acked but said nothing matching');
    t.match(JSON.parse(miss.stdout), { passed: false, delivery: { outcome: 'acked' } });
    t.equal((await dt('--kind', 'slash-command', '--channel', 'nowhere')).code, 4);
    t.equal((await dt('--kind', 'slash-command', '--expect-message', '(')).code, 2);
  });

  t.test('--source-type and --view-action', async (t) => {
    const clicked = (await installed.bot.postEphemeral(standups, 'approve?', d.workspaceUserId)).body.id as string;
    const e = await dt(
      '--kind',
      'block-interaction',
      '--source-type',
      'ephemeral',
      '--message-id',
      clicked,
      '--on-action',
      'approve',
      '--json',
    );
    t.equal(e.code, 0, e.stderr);
    t.match(JSON.parse(e.stdout).delivery.payload, {
      messageType: 'BLOCK_INTERACTION',
      sourceType: 'EPHEMERAL_MESSAGE',
      sourceId: clicked,
      channelId: standups,
      onAction: 'approve',
    });
    const v = await dt('--kind', 'block-interaction', '--source-type', 'view', '--json');
    t.match(JSON.parse(v.stdout).delivery.payload, { sourceType: 'VIEW', view: { type: 'MODAL' } });
    const close = await dt('--kind', 'view-action', '--view-action', 'close', '--json');
    t.equal(close.code, 0, close.stderr);
    t.match(JSON.parse(close.stdout).delivery.payload, { messageType: 'VIEW_ACTION', viewActionType: 'CLOSE' });
    t.equal((await dt('--kind', 'block-interaction', '--source-type', 'modal')).code, 2);
    t.equal((await dt('--kind', 'slash-command', '--source-type', 'message')).code, 2);
    t.equal((await dt('--kind', 'view-action', '--view-action', 'open')).code, 2);
    t.equal((await dt('--kind', 'block-interaction', '--view-action', 'submit')).code, 2);
  });

  t.test('APP_UNAUTHORIZED and APP_UNINSTALLED test bodies have the shapes the daemon sends for real', async (t) => {
    rx.on('/events', { text: 'ok' });
    t.equal((await dt('--kind', 'event', '--event', 'APP_UNAUTHORIZED')).code, 0);
    const unauth = must(rx.received.at(-1)).body;
    t.equal(unauth.messageType, 'APP_EVENT');
    const ub = JSON.parse(unauth.body);
    t.same(Object.keys(ub).sort(), [
      'accessGranted',
      'app',
      'appInstallation',
      'grantedScopes',
      'id',
      'workspace',
      'workspaceUser',
    ]);
    t.match(ub, {
      app: app.id,
      workspace: d.workspaceId,
      workspaceUser: d.workspaceUserId,
      grantedScopes: [],
      accessGranted: false,
    });
    t.equal((await dt('--kind', 'event', '--event', 'APP_UNINSTALLED')).code, 0);
    const ib = JSON.parse(must(rx.received.at(-1)).body.body);
    t.same(Object.keys(ib).sort(), ['app', 'botUser', 'id', 'installedBy', 'uninstalledAt', 'workspace']);
    t.match(ib, {
      app: app.id,
      workspace: d.workspaceId,
      installedBy: d.workspaceUserId,
      botUser: /^bot_/,
      uninstalledAt: /^\d{4}-\d\d-\d\dT/,
    });
    t.equal(ib.id, ub.appInstallation, 'one installation id in both');
  });
});
