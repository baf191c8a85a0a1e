/**
 * Issue 22 §4 (small items): `users list`, `messages list --thread <id>`, and an ephemeral message
 * marked in the CLI as the console marks it ("only visible to you"), never for the platform API.
 */
import t from 'tap';
import { startTestDaemon, manifest } from '../helpers/daemon.js';
import { runMain } from '../helpers/cli.js';

t.test('what a person reads of the workspace from the CLI', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const g = ['--url', d.url, '--token', d.token];
  const cli = (...args: string[]) => runMain([...g, ...args]);

  await t.test("users list: the people and the apps' bots of the workspace", async (t) => {
    t.equal(
      (await cli('users', 'create', '--workspace', d.workspaceId, '--email', 'dev@example.com', '--name', 'Dev')).code,
      0,
    );
    const r = await cli('users', 'list');
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^ID\s+NAME\s+EMAIL\s+KIND\n/);
    t.match(r.stdout, /wu_\S+\s+Owner\s+owner@appreg.test\s+person/);
    t.match(r.stdout, /wu_\S+\s+Dev\s+dev@example\.com\s+person/);
    const j = JSON.parse((await cli('users', 'list', '--json')).stdout) as Array<{ email: string }>;
    t.same(j.map((u) => u.email).sort(), ['dev@example.com', 'owner@appreg.test']);
  });

  await t.test('messages list --thread: the replies of a thread, oldest first', async (t) => {
    const root = JSON.parse((await cli('say', 'general', 'the root', '--json')).stdout).message.id as string;
    for (const text of ['first reply', 'second reply'])
      t.equal((await cli('say', 'general', text, '--thread', root)).code, 0);
    const r = await cli('messages', 'list', 'general', '--thread', root);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /Owner: first reply \(reply in thread msg_\S+\) msg_\S+\n.*Owner: second reply/);
    const j = JSON.parse(
      (await cli('messages', 'list', 'general', '--thread', root, '--limit', '1', '--json')).stdout,
    ) as Array<{ text: string }>;
    t.same(
      j.map((m) => m.text),
      ['first reply'],
    );
    const none = await cli(
      'messages',
      'list',
      'general',
      '--thread',
      JSON.parse((await cli('say', 'general', 'alone', '--json')).stdout).message.id,
    );
    t.match(none.stdout, /^\(no replies\)\n$/);
    t.equal(
      (await cli('messages', 'list', 'general', '--thread', 'msg_nope')).code,
      4,
      'an unknown message is refused',
    );
  });

  await t.test(
    'an app\'s ephemeral message is marked "only visible to you"; the platform API shape stays V1.Message',
    async (t) => {
      const res = await d.api(`${d.mgmt}/apps`, { method: 'POST', json: manifest() });
      const { id } = (await res.json()) as { id: string };
      const tokens = JSON.parse((await cli('authorize', id, '--exchange', '--json')).stdout) as { botToken: string };
      const { appKey } = (await (await d.api(`${d.mgmt}/apps/mine/${id}`)).json()) as { appKey: string };
      const general = JSON.parse((await cli('channels', 'list', '--json')).stdout).find(
        (c: { channel: { name: string } }) => c.channel.name === 'general',
      ).channel.id as string;
      const posted = await fetch(`${d.url}/v1/channels/${general}/messages`, {
        method: 'POST',
        headers: { token: tokens.botToken, 'x-app-token': appKey, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'just for you', ephemeral: { sendToUsers: [d.workspaceUserId] } }),
      });
      t.equal(posted.status, 200);
      t.notOk('ephemeral' in ((await posted.json()) as object), 'the platform API answers the V1.Message, unmarked');
      const r = await cli('messages', 'list', 'general');
      t.match(r.stdout, /Test App: just for you \(only visible to you\) msg_/);
      t.match(r.stdout, /Owner: the root (?!.*only visible)/, 'other messages are not marked');
    },
  );
});
