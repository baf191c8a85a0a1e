/**
 * The edge's checks (validation/http-input.ts with the generated validators): a value that fails a
 * route's schema becomes the same invalid_request body the routers' hand checks sent (message and
 * details), a query is coerced from text, and a value that passes comes back as it was.
 */
import t from 'tap';
import { AppError } from '../../src/errors.js';
import { checked } from '../../src/validation/http-input.js';
import { DELIVERY_ROUTES } from '../../src/server/routes/deliveries.js';
import { TOKEN_ROUTE } from '../../src/server/routes/oauth-token.js';
import { MESSAGE_ROUTES } from '../../src/server/routes/platform-messages.js';
import { IDENTITY_ROUTES } from '../../src/server/routes/identity.js';
import { LEAD_ROUTES } from '../../src/server/routes/lead.js';
import { must } from '../../src/must.js';

/** The error body `fn` throws. */
function refusal(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return { status: e.status, ...e.toBody() };
    throw e;
  }
  return undefined;
}

const trigger = DELIVERY_ROUTES.trigger;
const body = (v: unknown) => () => checked(must(trigger.body), v, 'The body', trigger);

t.test("a trigger's body: today's messages, in today's order", async (t) => {
  t.same(refusal(body(undefined)), {
    status: 400,
    code: 'invalid_request',
    message: 'The body must be a JSON object with appId and kind.',
  });
  t.same(refusal(body([])), refusal(body(undefined)), 'an array is not an object either');
  t.match(refusal(body({})), {
    message: 'kind is required.',
    details: [{ pointer: '/kind', message: 'is required' }],
  });
  t.match(refusal(body({ kind: 'nope', appId: 'a' })), { message: /^kind must be one of slash-command, / });
  t.same(refusal(body({ kind: 'event' })), { status: 400, code: 'invalid_request', message: 'appId is required.' });
  t.same(refusal(body({ kind: 'event', appId: 'a', view: [] })), {
    status: 400,
    code: 'invalid_request',
    message: 'view must be an object.',
  });
  t.match(refusal(body({ kind: 'event', appId: 'a', timeoutMs: 0 })), {
    message: 'timeoutMs must be an integer from 1 to 60000.',
  });
  t.match(refusal(body({ kind: 'event', appId: 'a', text: 5 })), { message: 'text must be a string.' });
  const ok = { kind: 'slash-command', appId: 'app_1', command: '/x', text: null };
  t.equal(body(ok)(), ok, 'a valid body comes back as it is, the very object');
});

t.test('a query is text: a number in it is coerced, out of range is refused with its message', async (t) => {
  const list = DELIVERY_ROUTES.list;
  t.same(checked(must(list.query), { limit: '5', appId: 'a' }, 'The query', list), { limit: 5, appId: 'a' });
  t.same(
    refusal(() => checked(must(list.query), { limit: '0' }, 'The query', list)),
    {
      status: 400,
      code: 'invalid_request',
      message: 'limit must be an integer from 1 to 1000.',
    },
  );
  t.match(
    refusal(() => checked(must(list.query), { limit: 'ten' }, 'The query', list)),
    {
      message: 'limit must be an integer from 1 to 1000.',
    },
  );
});

t.test("the token endpoint's form: every missing part named at once, in the form's order", async (t) => {
  const form = (v: unknown) => () => checked(TOKEN_ROUTE.body, v, 'The form', TOKEN_ROUTE);
  t.same(refusal(form({})), {
    status: 400,
    code: 'invalid_request',
    message: 'The form parts client-id, client-secret, code are required.',
    details: [
      { pointer: '/client-id', message: 'is required' },
      { pointer: '/client-secret', message: 'is required' },
      { pointer: '/code', message: 'is required' },
    ],
  });
  t.match(refusal(form({ 'client-id': 'app_1', code: '', 'client-secret': 'x'.repeat(513) })), {
    message: 'The form parts client-secret, code are required.',
  });
  const whole = { 'client-id': 'app_1', 'client-secret': 'acs_x', code: 'c' };
  t.equal(form(whole)(), whole);
});

t.test('without a message of its own, a route says the first problem, and every one in details', async (t) => {
  const post = MESSAGE_ROUTES.post;
  t.same(
    refusal(() => checked(must(post.body), { blocks: 'x', attachments: {} }, 'The body', post)),
    {
      status: 400,
      code: 'invalid_request',
      message: 'blocks must be array.',
      details: [
        { pointer: '/blocks', message: 'must be array' },
        { pointer: '/attachments', message: 'must be array' },
      ],
    },
  );
});

t.test("a new user: the identity service's words, every field at once", async (t) => {
  const create = IDENTITY_ROUTES.createUser;
  t.same(
    refusal(() => checked(must(create.body), { email: 'a@b.c', name: ' ', password: 'short' }, 'The body', create)),
    {
      status: 400,
      code: 'invalid_request',
      message: 'The user is not valid.',
      details: [
        { pointer: '/name', message: 'must be 1 to 80 characters' },
        { pointer: '/password', message: 'must be 8 to 200 characters' },
      ],
    },
  );
  t.match(
    refusal(() => checked(must(create.body), undefined, 'The body', create)),
    {
      details: [{ pointer: '/email' }, { pointer: '/name' }],
    },
  );
});

t.test("the CLI login's tokens: the login service's words, before it runs", async (t) => {
  const login = LEAD_ROUTES.login;
  t.same(
    refusal(() => checked(must(login.body), { leadId: 7 }, 'The body', login)),
    {
      status: 400,
      code: 'invalid_request',
      message: 'leadId is required.',
      details: [{ pointer: '/leadId', message: 'is required' }],
    },
  );
  t.same(
    refusal(() => checked(must(login.body), 'x', 'The body', login)),
    {
      status: 400,
      code: 'invalid_request',
      message: 'Send the fields as a JSON object.',
    },
  );
  const start = LEAD_ROUTES.start;
  t.match(
    refusal(() => checked(must(start.body), {}, 'The body', start)),
    {
      message: 'A valid email is required.',
      details: [{ pointer: '/email', message: 'must be an email address' }],
    },
  );
});
