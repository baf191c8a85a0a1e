/**
 * Issue 22 §4: `appreg deliveries tail [--app] [--json]`: the latest deliveries, then every new attempt as it happens,
 * until Ctrl-C.
 */
import t from 'tap';
import { until } from '../helpers/until.js';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { BIN, captureIo, runMain } from '../helpers/cli.js';
import { startReceiver } from '../helpers/receiver.js';
import { main } from '../../src/cli/main.js';

/** `appreg …args` running in this process until stop(); `out` fills as it writes. */
function running(args: string[]) {
  let stop: (s: string) => void = () => {};
  const { io, out } = captureIo({ stop: new Promise<string>((r) => (stop = r)) });
  const code = main(['node', BIN, ...args], io);
  return { out, stop: async () => (stop('SIGINT'), await code) };
}

t.test('deliveries tail', async (t) => {
  const rx = await startReceiver();
  t.teardown(() => rx.close());
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];
  const create = async (name: string) =>
    (
      (await (
        await d.api(`${d.mgmt}/apps`, {
          method: 'POST',
          json: manifest({ name, slashCommands: [{ command: `/${name}`, url: `${rx.url}/slash` }] }),
        })
      ).json()) as { id: string }
    ).id;
  const [a, b] = [await create('first'), await create('second')];
  rx.on('/slash', { json: {} });
  await runMain([...g, 'deliver-test', a, '--kind', 'slash-command']);

  await t.test('shows the latest, then each new attempt; --app keeps to one app', async (t) => {
    const all = running([...g, 'deliveries', 'tail', '--interval-ms', '50']);
    const onlyB = running([...g, 'deliveries', 'tail', '--app', b, '--interval-ms', '50']);
    await until(() => all.out.stdout.includes('→ first'));
    t.match(
      all.out.stdout,
      /^\d\d:\d\d:\d\d slash-command \/first → first: 200 acked in [\d.]+ ms {2}dlv_\S+\n/,
      'the latest first',
    );
    t.equal(all.out.stderr, 'following the deliveries (Ctrl-C to stop)\n');

    rx.on('/slash', { status: 500, json: { message: 'down' } });
    await runMain([...g, 'deliver-test', b, '--kind', 'slash-command']);
    await until(() => all.out.stdout.includes('→ second') && onlyB.out.stdout.includes('→ second'));
    t.match(
      all.out.stdout,
      /slash-command \/second → second: 500 nacked in [\d.]+ ms {2}dlv_/,
      'a new attempt as it happens',
    );
    t.equal(await all.stop(), 0, 'Ctrl-C ends it');
    t.equal(await onlyB.stop(), 0);
    t.notMatch(onlyB.out.stdout, /→ first/, '--app: only that app');
  });

  await t.test('--json: one JSON line per attempt', async (t) => {
    const tail = running([...g, 'deliveries', 'tail', '--app', a, '--json', '--interval-ms', '50']);
    await until(() => tail.out.stdout.split('\n').length > 1);
    rx.on('/slash', { json: {} });
    await runMain([...g, 'deliver-test', a, '--kind', 'slash-command']);
    await until(() => tail.out.stdout.trim().split('\n').length >= 2);
    t.equal(await tail.stop(), 0);
    const lines = tail.out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.equal(lines.length, 2);
    t.match(lines, [
      { appId: a, kind: 'slash-command', subject: '/first', attempt: { outcome: 'acked', status: 200 } },
      { appId: a, attempt: { outcome: 'acked' } },
    ]);
    t.equal(tail.out.stderr, '', 'nothing but JSON lines');
  });

  await t.test('--limit 1: the newest delivery, then only what is new, never the older ones again', async (t) => {
    // three deliveries in the log by now: the newest of them is shown, the other two never
    const tail = running([...g, 'deliveries', 'tail', '--limit', '1', '--interval-ms', '50']);
    await until(() => tail.out.stderr.includes('following'));
    t.equal(tail.out.stdout.trim().split('\n').length, 1, 'one line: the newest');
    rx.on('/slash', { json: {} });
    const sent = await runMain([...g, 'deliver-test', b, '--kind', 'slash-command', '--json']);
    const id = JSON.parse(sent.stdout).delivery.id as string;
    // a look that printed the older deliveries again came no later than the one that found the new one
    await until(() => tail.out.stdout.includes(id));
    t.equal(await tail.stop(), 0);
    const lines = tail.out.stdout.trim().split('\n');
    t.equal(lines.length, 2, `the newest, then the new one:\n${tail.out.stdout}`);
    t.match(lines[1], new RegExp(`→ second: 200 acked in [\\d.]+ ms {2}${id}$`));
  });

  await t.test('it listens for Ctrl-C before it prints anything: a stop asked once it printed is heard', async (t) => {
    // (a real process stopped between its first line and its signal handler would die of the signal)
    let listening = false;
    let listeningAtFirstWrite: boolean | undefined;
    let stop: (s: string) => void = () => {};
    const { io } = captureIo();
    io.stopSignal = () => ((listening = true), new Promise<string>((r) => (stop = r)));
    const write = io.stdout.write.bind(io.stdout);
    io.stdout.write = (s: string) => ((listeningAtFirstWrite ??= listening), write(s));
    const code = main(['node', BIN, ...g, 'deliveries', 'tail', '--app', a, '--interval-ms', '50'], io);
    await until(() => listeningAtFirstWrite !== undefined);
    t.equal(listeningAtFirstWrite, true, 'listening when the first line is written');
    stop('SIGTERM');
    t.equal(await code, 0);
  });

  await t.test('--app naming no app of yours is an error', async (t) => {
    const r = await runMain([...g, 'deliveries', 'tail', '--app', 'app_nope']);
    t.equal(r.code, 4);
    t.match(r.stderr, 'App app_nope not found');
  });
});
