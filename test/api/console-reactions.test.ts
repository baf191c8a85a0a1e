/**
 * Reactions from the console over HTTP: the emoji's button adds the person's reaction, the same
 * button takes it back; a code that is not an emoji code, a message of an archived channel, a
 * message of another channel and a form without its token are refused, and change nothing.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';
import { signIn } from '../helpers/console.js';

const form = (fields: Record<string, string>) => new URLSearchParams(fields);

t.test('reacting from the channel page', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const { cookie, csrf } = await signIn(d);
  const say = async (channel: string, text: string) =>
    (
      (await (await d.api(`${d.mgmt}/channels/${channel}/messages`, { method: 'POST', json: { text } })).json()) as {
        message: { id: string; channelId: string };
      }
    ).message;
  const m = await say('general', 'react to me');
  const codes = async (channel = 'general') => {
    const list = (await (await d.api(`${d.mgmt}/channels/${channel}/messages?limit=5`)).json()) as {
      messages: Array<{ id: string; reactions: Array<{ code: string }> }>;
    };
    return list.messages.flatMap((x) => x.reactions.map((r) => r.code));
  };
  const react = (channelId: string, messageId: string, fields: Record<string, string>) =>
    fetch(`${d.url}/console/channels/${channelId}/messages/${messageId}/reactions`, {
      method: 'POST',
      headers: { cookie },
      body: form(fields),
      redirect: 'manual',
    });

  const added = await react(m.channelId, m.id, { csrf, code: ':tada:' });
  t.equal(added.status, 303);
  t.equal(added.headers.get('location'), `/console/channels/${m.channelId}`);
  t.same(await codes(), [':tada:'], 'added');
  const page = await (await fetch(`${d.url}/console/channels/${m.channelId}`, { headers: { cookie } })).text();
  t.match(page, /title="Owner reacted with :tada:" aria-pressed="true">🎉 1<\/button>/, 'shown, pressed');
  t.equal((await react(m.channelId, m.id, { csrf, code: ':tada:' })).status, 303);
  t.same(await codes(), [], 'the same button takes it back');

  const bad = await react(m.channelId, m.id, { csrf, code: 'tada' });
  t.equal(bad.status, 400);
  t.match(await bad.text(), /code must be an emoji code/);
  t.equal((await react(m.channelId, m.id, { code: ':tada:' })).status, 403, 'no token: refused');
  const random = (await (await d.api(`${d.mgmt}/channels`)).json()) as Array<{
    channel: { id: string; name?: string };
  }>;
  const other = random.find((c) => c.channel.name === 'random')?.channel.id ?? '';
  t.equal((await react(other, m.id, { csrf, code: ':tada:' })).status, 404, 'a message of another channel');
  t.same(await codes(), [], 'none of them changed anything');

  await d.api(`${d.mgmt}/channels`, { method: 'POST', json: { name: 'old-plans' } });
  const old = await say('old-plans', 'before the archive');
  await d.api(`${d.mgmt}/channels/old-plans/archive`, { method: 'POST' });
  const archived = await react(old.channelId, old.id, { csrf, code: ':tada:' });
  t.equal(archived.status, 400);
  t.match(await archived.text(), /archived/);
  t.same(await codes('old-plans'), [], 'an archived channel’s message takes none');
});
