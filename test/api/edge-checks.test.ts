/**
 * The schemas at the edge on a running daemon: a request that fails its route's schema gets the
 * JSON error body of docs/protocol.md §1 (today's message and details) before any service runs,
 * and changes nothing.
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

t.test('refused at the edge, answered as before, nothing changed', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());

  const form = new FormData();
  form.set('client-id', 'app_nobody');
  const token = await fetch(`${d.url}/oauth2/access`, { method: 'POST', body: form });
  t.equal(token.status, 400);
  t.same(await token.json(), {
    code: 'invalid_request',
    message: 'The form parts client-secret, code are required.',
    details: [
      { pointer: '/client-secret', message: 'is required' },
      { pointer: '/code', message: 'is required' },
    ],
  });

  const trigger = await d.api(`${d.mgmt}/deliveries`, { method: 'POST', json: { appId: 'app_x' } });
  t.equal(trigger.status, 400);
  t.same(await trigger.json(), {
    code: 'invalid_request',
    message: 'kind is required.',
    details: [{ pointer: '/kind', message: 'is required' }],
  });
  const list = await d.api(`${d.mgmt}/deliveries?limit=1001`);
  t.same(await list.json(), { code: 'invalid_request', message: 'limit must be an integer from 1 to 1000.' });
  t.same(await (await d.api(`${d.mgmt}/deliveries?limit=5`)).json(), [], 'no delivery was recorded');

  const said = await d.api(`${d.mgmt}/channels/general/messages`, { method: 'POST', json: { text: '   ' } });
  t.equal(said.status, 400);
  t.match(await said.json(), {
    code: 'invalid_request',
    message: 'Send {"text"} (and "threadRootId" for a thread reply).',
    details: [{ pointer: '/text' }],
  });
  const messages = (await (await d.api(`${d.mgmt}/channels/general/messages`)).json()) as { messages?: unknown[] };
  t.notOk(JSON.stringify(messages).includes('   '), 'nothing was posted');

  const user = await d.api(`/workspaces/${d.workspaceId}/workspaceUsers`, { method: 'POST', json: { name: 'X' } });
  t.same(await user.json(), {
    code: 'invalid_request',
    message: 'The user is not valid.',
    details: [{ pointer: '/email', message: 'must be an email address' }],
  });
});
