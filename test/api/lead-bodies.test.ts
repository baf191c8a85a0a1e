/**
 * The official CLI's login: a field of another type in /lead/activate or /login-codes is refused at
 * the edge, in the login service's words (one field at a time, as the service checks them).
 */
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

const badEmail = {
  code: 'invalid_request',
  message: 'A valid email is required.',
  details: [{ pointer: '/email', message: 'must be an email address' }],
};
const required = (name: string) => ({
  code: 'invalid_request',
  message: `${name} is required.`,
  details: [{ pointer: `/${name}`, message: 'is required' }],
});

t.test('lead bodies: refused as the login service words them', async (t) => {
  const d = await startTestDaemon();
  t.teardown(() => d.stop());
  const activate = async (body: unknown) => {
    const r = await fetch(`${d.url}/lead/activate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    t.equal(r.status, 400, JSON.stringify(body));
    return r.json();
  };
  t.same(await activate(['x']), { code: 'invalid_request', message: 'Send the fields as a JSON object.' });
  t.same(await activate({ email: 5, code: 1.5 }), badEmail, 'the first field, as the service checks them');
  t.same(await activate({ email: 'owner@appreg.test', code: 1.5 }), required('code'));
  t.same(await activate({ email: 'owner@appreg.test', code: false }), required('code'));
  t.same(await activate({ email: 'owner@appreg.test', code: '123456', leadId: 5 }), required('leadId'));
  t.same(await activate({ email: 'not an email', code: '123456' }), badEmail);

  const codes = await d.api(`${d.mgmt}/login-codes?email=owner@appreg.test&email=other@appreg.test`);
  t.equal(codes.status, 400);
  t.same(await codes.json(), badEmail, 'a repeated email is not one email');
});
