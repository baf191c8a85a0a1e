/** appreg channels list|create, messages list|tail, react and users login-code against a real daemon. */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { runMain, startMain } from '../helpers/cli.js';
import { until } from '../helpers/until.js';

t.test('channels, messages, reactions and login codes', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];
  const cli = (...args: string[]) => runMain([...g, ...args]);

  t.test('channels list and create', async (t) => {
    const list = await cli('channels', 'list', '--json');
    t.equal(list.code, 0, list.stderr);
    t.same(
      JSON.parse(list.stdout)
        .map((c: { channel: { name: string } }) => c.channel.name)
        .sort(),
      ['general', 'random'],
    );
    const made = await cli('channels', 'create', 'team-only', '--private', '--description', 'just us', '--json');
    t.equal(made.code, 0, made.stderr);
    t.match(JSON.parse(made.stdout), {
      channel: { name: 'team-only', channelType: 'PRIVATE', description: 'just us' },
    });
    const human = await cli('channels', 'list', '--types', 'private');
    t.match(human.stdout, /ID\s+NAME\s+TYPE/);
    t.match(human.stdout, /#team-only\s+PRIVATE\s+1\s+member\s+just us/);
    t.notMatch(human.stdout, /#general/);
    t.equal((await cli('channels', 'create', 'bad/name')).code, 4, 'the daemon refuses the name');
    t.equal((await cli('channels', 'list', '--types', 'NOPE')).code, 4);
  });

  t.test('messages list by name, #name and id; react', async (t) => {
    for (const text of ['one', 'two', 'three']) t.equal((await cli('say', 'general', text)).code, 0);
    const j = await cli('messages', 'list', '#general', '--limit', '2', '--json');
    t.equal(j.code, 0, j.stderr);
    const page = JSON.parse(j.stdout);
    t.same(
      page.messages.map((m: { text: string }) => m.text),
      ['two', 'three'],
      'the latest, oldest first',
    );
    t.equal(page.hasMoreBefore, true);
    const id = page.messages[0].channelId as string;
    const byId = await cli('messages', 'list', id);
    t.match(byId.stdout, /^\d\d:\d\d:\d\d \S.*: one msg_/m, 'time, author name, text, id');
    t.match(byId.stdout, /: three msg_/);
    const r = await cli('react', page.messages[1].id, 'tada');
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /reacted :tada: to msg_/);
    t.equal((await cli('react', page.messages[1].id, ':tada:', '--json')).code, 0, 'again: nothing changes');
    const after = await cli('messages', 'list', 'general', '--limit', '1');
    t.match(after.stdout, /: three \(:tada: 1\) msg_/);
    t.match(after.stdout, /older messages not shown/);
    t.equal((await cli('react', 'msg_nope', 'tada')).code, 4);
    t.equal((await cli('messages', 'list', 'nowhere')).code, 4);
    t.equal((await cli('messages', 'list', 'general', '--limit', '0')).code, 2);
  });

  t.test('messages tail: the latest, then what is posted meanwhile, until stopped', async (t) => {
    let stop: (s: string) => void = () => {};
    const stopped = new Promise<string>((r) => (stop = r));
    t.equal((await cli('say', 'random', 'before')).code, 0);
    const tail = startMain([...g, 'messages', 'tail', 'random', '--limit', '2', '--interval-ms', '50', '--json'], {
      stop: stopped,
    });
    await until(() => /"before"/.test(tail.out.stdout)); // the latest shown: it follows from here
    for (const text of ['live 1', 'live 2']) t.equal((await cli('say', 'random', text)).code, 0);
    await until(() => /"live 2"/.test(tail.out.stdout));
    t.equal((await cli('say', 'random', 'live 3')).code, 0);
    await until(() => /"live 3"/.test(tail.out.stdout));
    stop('SIGINT');
    const r = await tail.done;
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { text: string });
    t.same(
      lines.map((m) => m.text),
      ['before', 'live 1', 'live 2', 'live 3'],
      'each message once, in order',
    );
    let stopHuman: (s: string) => void = () => {};
    const human = startMain([...g, 'messages', 'tail', 'random', '--limit', '1', '--interval-ms', '50'], {
      stop: new Promise((r) => (stopHuman = r)),
    });
    await until(() => /following/.test(human.out.stderr) && /: live 3 msg_/.test(human.out.stdout));
    stopHuman('SIGINT');
    const h = await human.done;
    t.equal(h.code, 0);
    t.match(h.stdout, /: live 3 msg_/);
    t.match(h.stderr, /following random \(Ctrl-C to stop\)/);
  });

  t.test('users login-code: the pending code of an official-CLI login', async (t) => {
    const me = (await (await d.api('/auth/whoami')).json()) as { email: string };
    t.equal((await cli('users', 'login-code', '--email', me.email)).code, 4, 'no pending code yet');
    const lead = await d.api('/lead', { method: 'POST', noAuth: true, json: { email: me.email } });
    t.equal(lead.status, 200);
    const r = await cli('users', 'login-code', '--email', me.email, '--json');
    t.equal(r.code, 0, r.stderr);
    const code = JSON.parse(r.stdout);
    t.match(code, { email: me.email, code: /^\d{6}$/, attemptsLeft: 5 });
    const human = await cli('users', 'login-code', '--email', me.email);
    t.match(human.stdout, new RegExp(`code\\s+${code.code}`));
    t.match(human.stdout, /tries left\s+5/);
    const activated = await d.api('/lead/activate', {
      method: 'POST',
      noAuth: true,
      json: { email: me.email, code: code.code, leadId: ((await lead.json()) as { id: string }).id },
    });
    t.equal(activated.status, 200, 'the code shown is the one the login takes');
    t.equal((await cli('users', 'login-code')).code, 2, '--email is required');
  });
});
