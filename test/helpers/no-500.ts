/**
 * No input gives a 500 (test/api/no-500-*.test.ts, one per part of the routes so that they run side
 * by side): every route the daemon serves (read from its router, test/helpers/routes.ts, so a route
 * added later is fed too) gets, from fast-check, path parameters that name real records
 * or anything else, query parameters, and bodies of the wrong type, with fields missing and extra
 * fields: JSON for the API, forms (with the session's valid token) and other bodies for the
 * console. A 5xx answer fails the test, naming the route and the (shrunk) input.
 *
 * The inputs act on real records (an app installed, messages, a file, a scheduled message, a
 * delivery, a signed-in browser) of a user made for them. Routes that end what later calls need
 * (sign-out, logout, uninstall, unauthorize, delete, rotate, publish) run last, each on a user of its own.
 * fast-check's seed is fixed (APPREG_TEST_FC_SEED chooses another), so a run is repeatable.
 *
 * In the store matrix's PostgreSQL pass the routes, their validation and their inputs are the same as in the first
 * pass; only what reaches the store differs. That pass feeds each route a third as many inputs (10 with a body, 2 for
 * a GET), from the next seed, so that the two passes together try inputs the first did not (APPREG_TEST_FC_RUNS sets
 * both counts).
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import type tap from 'tap';
import { onPostgres, startTestDaemon, type TestDaemon } from './daemon.js';
import { platformClient, sdkUploadFile, PLATFORM_SCOPES } from './platform-client.js';
import { authorize, createApp, secondUser } from '../fixtures/redirects-flow.js';
import { ROOT } from './cli.js';
import { NO_RATE_LIMITS, routesOf, type Route } from './routes.js';
import { must } from '../../src/must.js';

type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

const SEED = Number(process.env.APPREG_TEST_FC_SEED ?? 26) + (onPostgres() ? 1 : 0);
/** Inputs per route: more for those that take a body (there is more to get wrong); a third on PostgreSQL. */
const RUNS = Number(process.env.APPREG_TEST_FC_RUNS ?? (onPostgres() ? 10 : 30));

/** What a request acts on: a user of its own, their app installed, records of each kind. */
interface World {
  workspaceId: string;
  userId: string;
  authtoken: string;
  mgmt: string;
  appId: string;
  appKey: string;
  clientSecret: string;
  userToken: string;
  botToken: string;
  cookie: string;
  csrf: string;
  /** Real values for path parameters, by name. */
  valid: Record<string, string[]>;
}

const SCOPES = [...PLATFORM_SCOPES, 'files:write'];
const HOME = {
  enabled: true,
  blocks: [
    { type: 'rich_text', elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'Home' }] }] },
  ],
};

async function world(d: TestDaemon): Promise<World> {
  const u = await secondUser(d);
  const dead = 'http://127.0.0.1:9';
  const app = await createApp(
    d,
    {
      scopes: { botScopes: SCOPES, userScopes: SCOPES },
      slashCommands: [{ command: '/fuzz', url: `${dead}/slash`, description: 'Fuzz' }],
      shortcuts: [
        { shortcutType: 'GLOBAL', url: `${dead}/shortcut`, name: 'go', displayName: 'Go' },
        { shortcutType: 'ON_MESSAGE', url: `${dead}/shortcut`, name: 'msg', displayName: 'Msg' },
      ],
      blockInteraction: { url: `${dead}/block` },
      viewAction: { url: `${dead}/view` },
      dynamicMenus: [{ url: `${dead}/menu`, onAction: 'pick' }],
      defaultHomeView: HOME,
      eventSubscriptions: { url: `${dead}/events`, events: ['NEW_MESSAGE'] },
    },
    u.token,
    u.mgmt,
  );
  const scopes = [...SCOPES, ...SCOPES.map((s) => `bot:${s}`)].join(',');
  const tokens = await authorize(d, app, { scopes, token: u.token, mgmt: u.mgmt });
  const user = platformClient(d.url, tokens.accessToken, app.appKey);
  const bot = platformClient(d.url, must(tokens.botToken), app.appKey);
  const general = (await user.listChannels()).body.find((x: any) => x.channel.name === 'general').channel.id as string;
  const appMessage = (
    await bot.postMessageToChannel(general, 'from the app', {
      blocks: [
        {
          type: 'actions',
          elements: [{ type: 'button', onAction: 'click', value: 'v', text: { type: 'plain_text', text: 'Click' } }],
        },
      ],
    })
  ).body.id as string;
  const userMessage = (await user.postMessageToChannel(general, 'from the user')).body.id as string;
  const scheduled = (
    await user.createScheduledMessage({ channelId: general, text: 'later', sendAt: Date.now() + 3_600_000 })
  ).body.id as string;
  const file = (await sdkUploadFile(bot, Buffer.from('hello'), 'a.txt', 'text/plain')).body.id as string;
  const trigger = await d.api(`${u.mgmt}/deliveries`, {
    method: 'POST',
    json: { appId: app.id, kind: 'slash-command', command: '/fuzz' },
    headers: { authtoken: u.token },
  });
  const delivery = ((await trigger.json()) as { id: string }).id;
  const link = (
    (await (
      await d.api(`${u.mgmt}/web/sign-in-links`, { method: 'POST', json: {}, headers: { authtoken: u.token } })
    ).json()) as { url: string }
  ).url;
  const cookie = must(
    must(
      (await fetch(link, { redirect: 'manual' })).headers.getSetCookie().find((c) => c.startsWith('appreg_session=')),
    ).split(';')[0],
  );
  const csrf = must(
    must(
      /<meta name="csrf" content="([^"]+)">/.exec(await (await fetch(`${d.url}/`, { headers: { cookie } })).text()),
    )[1],
  );
  for (const [what, v] of Object.entries({ general, appMessage, userMessage, scheduled, file, delivery }))
    if (typeof v !== 'string') throw new Error(`world: no ${what}`);
  const bots = (await user.listWorkspaceUsers()).body as Array<{ id: string }>;
  const messages = [appMessage, userMessage];
  return {
    workspaceId: d.workspaceId,
    userId: u.id,
    authtoken: u.token,
    mgmt: u.mgmt,
    appId: app.id,
    appKey: app.appKey,
    clientSecret: app.clientSecret,
    userToken: tokens.accessToken,
    botToken: must(tokens.botToken),
    cookie,
    csrf,
    valid: {
      workspaceId: [d.workspaceId],
      installWorkspaceId: [d.workspaceId],
      workspaceUserId: [u.id],
      userId: [u.id, ...bots.map((b) => b.id)],
      appId: [app.id],
      channelId: [general],
      channel: [general],
      messageId: [appMessage, ...messages],
      rootId: messages,
      id: [scheduled],
      fileId: [file],
      deliveryId: [delivery],
      viewId: ['view_none'],
    },
  };
}

/**
 * Field names to build bodies from: those the routes and services read (scraped from the source, so
 * a field added later is used too) with a few every API has, and, less often, the manifest schema's.
 */
function fieldNames(): { read: string[]; schema: string[] } {
  const read = new Set([
    'text',
    'blocks',
    'attachments',
    'files',
    'channelId',
    'userId',
    'userIds',
    'participantIds',
    'name',
    'type',
    'description',
    'from',
    'in',
    'code',
    'csrf',
    'act',
    'token',
    'threadRootId',
    'sendAt',
    'ephemeral',
    'manifest',
    'path',
    'email',
    'password',
    'client-id',
    'client-secret',
  ]);
  const scan = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) scan(p);
      else if (e.name.endsWith('.ts'))
        for (const m of fs
          .readFileSync(p, 'utf8')
          .matchAll(/\b(?:b|body|input|req\.body|req\.query|q)\.([a-zA-Z][a-zA-Z0-9_]{1,30})\b/g))
          read.add(must(m[1]));
    }
  };
  scan(path.join(ROOT, 'src/server/routes'));
  scan(path.join(ROOT, 'src/services'));
  const schema = new Set<string>();
  for (const m of fs
    .readFileSync(path.join(ROOT, 'schemas/app-manifest.schema.json'), 'utf8')
    .matchAll(/"([a-zA-Z][a-zA-Z0-9]{1,30})"\s*:\s*\{/g))
    if (!read.has(must(m[1]))) schema.add(must(m[1]));
  for (const skip of ['length', 'map', 'filter', 'trim', 'slice', 'toString', 'properties', 'definitions', 'items'])
    schema.delete(skip);
  return { read: [...read].sort(), schema: [...schema].sort() };
}

type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'form'; fields: Record<string, string> }
  | { kind: 'raw'; type: string; text: string };
interface Input {
  params: Record<string, string>;
  query: Record<string, string>;
  body: Body;
  /** Which token of the app a platform call carries. */
  asBot: boolean;
}

const isConsole = (r: Route) => r.path === '/' || r.path.startsWith('/console') || r.path.startsWith('/web/');
/** Routes that end what later calls need: run last, each on a user of its own. */
const ends = (r: Route) =>
  r.method === 'DELETE' ||
  /sign-out|logout|rotate|delete|uninstall|publish|\/v1\/app\/(authorization|installation)$/.test(r.path);

function inputOf(route: Route, w: World, fields: ReturnType<typeof fieldNames>): fc.Arbitrary<Input> {
  const names = [...route.path.matchAll(/:(\w+)/g)].map((m) => must(m[1]));
  const anyString = fc.string({ minLength: 1, maxLength: 24 });
  const param = (n: string) =>
    w.valid[n]?.length
      ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...must(w.valid[n])) }, { weight: 1, arbitrary: anyString })
      : anyString;
  // strings that trip code and stores: NUL (PostgreSQL's jsonb refuses it), a lone surrogate, long, empty
  const nasty = fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x'.repeat(5000),
    '',
    ' ',
    '..',
    '%',
    '%00',
    '<b>',
    '__proto__',
    'constructor',
  );
  const value = fc.oneof({ weight: 5, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: nasty });
  const field = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...fields.read) },
    { weight: 1, arbitrary: fc.constantFrom(...fields.schema) },
  );
  // every field a route or service reads, each there or missing, each of any JSON type: a handler
  // that trusts one field's type fails whatever the others hold (validators look at each)
  const everyField = fc.record(Object.fromEntries(fields.read.map((f) => [f, value])), { requiredKeys: [] });
  const named = fc.dictionary(field, value, { maxKeys: 5 });
  const extra = fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 2 });
  const json: fc.Arbitrary<Body> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.tuple(everyField, extra).map(([a, b]) => ({ kind: 'json' as const, value: { ...b, ...a } })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(named, extra).map(([a, b]) => ({ kind: 'json' as const, value: { ...b, ...a } })),
    },
    { weight: 1, arbitrary: value.map((v) => ({ kind: 'json' as const, value: v })) },
  );
  // a form's fields are strings: JSON of any type (a field the handler parses), ids, anything
  const confusing = fc.constantFrom(
    'null',
    'true',
    '0',
    '-1',
    '1e309',
    '[]',
    '{}',
    '""',
    '[null]',
    '{"onAction":null,"type":null}',
    '{"appId":null,"name":1}',
  );
  const formValue = fc.oneof(
    { weight: 3, arbitrary: confusing },
    { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
    { weight: 1, arbitrary: nasty },
    { weight: 1, arbitrary: value.map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: fc.constantFrom(...Object.values(w.valid).flat()) },
  );
  const everyFormField = fc.record(Object.fromEntries(fields.read.map((f) => [f, formValue])), { requiredKeys: [] });
  const form: fc.Arbitrary<Body> = fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: everyFormField },
        { weight: 1, arbitrary: fc.dictionary(field, formValue, { maxKeys: 6 }) },
      ),
      fc.nat(9),
    )
    .map(([fieldsOf, n]) => ({
      kind: 'form' as const,
      fields: { ...(fieldsOf as Record<string, string>), ...(n > 0 ? { csrf: w.csrf } : {}) },
    }));
  const raw: fc.Arbitrary<Body> = fc.constantFrom<Body>(
    {
      kind: 'raw',
      type: 'multipart/form-data; boundary=x',
      text: '--x\r\nContent-Disposition: form-data; name="csrf"\r\n\r\nx',
    },
    { kind: 'raw', type: 'multipart/form-data', text: 'no boundary' },
    { kind: 'raw', type: 'text/plain', text: 'plain text' },
    { kind: 'raw', type: 'application/json', text: '{"cut": ' },
    { kind: 'raw', type: 'application/x-www-form-urlencoded', text: '%%%=%' },
  );
  const body: fc.Arbitrary<Body> =
    route.method === 'GET'
      ? fc.constant({ kind: 'none' })
      : isConsole(route) || route.path === '/oauth2/access' || route.path.startsWith('/access-request')
        ? fc.oneof(
            { weight: 6, arbitrary: form },
            { weight: 1, arbitrary: json },
            { weight: 1, arbitrary: raw },
            { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
          )
        : fc.oneof(
            { weight: 6, arbitrary: json },
            { weight: 1, arbitrary: raw },
            { weight: 1, arbitrary: form },
            { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
          );
  return fc.record({
    params: fc.record(Object.fromEntries(names.map((n) => [n, param(n)]))) as fc.Arbitrary<Record<string, string>>,
    query: fc.dictionary(
      field,
      fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom(...Object.values(w.valid).flat())),
      { maxKeys: 3 },
    ),
    body,
    asBot: fc.boolean(),
  });
}

/** Send one input to one route; the status (a live stream is cut once its headers are in). */
async function send(d: TestDaemon, w: World, route: Route, input: Input): Promise<number> {
  const filled = route.path.replace(/:(\w+)/g, (_m, n: string) => encodeURIComponent(input.params[n] ?? 'x'));
  const url = new URL(d.url + filled);
  for (const [k, v] of Object.entries(input.query)) url.searchParams.set(k, v);
  // every credential on every request (each route takes its own); the console's token as a header too, which it must
  // not take
  const headers: Record<string, string> = {
    cookie: w.cookie,
    authtoken: w.authtoken,
    token: input.asBot ? w.botToken : w.userToken,
    'x-app-token': w.appKey,
    'x-csrf-token': w.csrf,
  };
  let body: string | undefined;
  const b = input.body;
  if (b.kind === 'json') [headers['content-type'], body] = ['application/json', JSON.stringify(b.value)];
  else if (b.kind === 'form')
    [headers['content-type'], body] = ['application/x-www-form-urlencoded', new URLSearchParams(b.fields).toString()];
  else if (b.kind === 'raw') [headers['content-type'], body] = [b.type, b.text];
  const ac = new AbortController();
  const res = await fetch(url, {
    method: route.method,
    headers,
    body: route.method === 'GET' ? undefined : body,
    redirect: 'manual',
    signal: ac.signal,
  });
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) ac.abort();
  else await res.arrayBuffer();
  return res.status;
}

/** The parts the routes are fed in (one test file each); every route is in exactly one. */
export const PARTS = {
  platform: (r: Route) => /^\/(v1|oauth2\/me|upload|files)(\/|$)/.test(r.path),
  console: (r: Route) => isConsole(r),
  rest: (r: Route) => !PARTS.platform(r) && !PARTS.console(r),
} as const;

/** Feed every route of `part`: fails on any 5xx, naming the route and the input. */
export async function feedEveryRoute(t: TapTest, part: keyof typeof PARTS, mustInclude: string[]): Promise<void> {
  const d = await startTestDaemon({ config: NO_RATE_LIMITS });
  t.teardown(() => d.stop());
  const all = routesOf(d);
  t.ok(all.length >= 100, `${all.length} routes read from the daemon's router`);
  const routes = all.filter(PARTS[part]);
  for (const must of mustInclude)
    t.ok(
      routes.some((r) => `${r.method} ${r.path}` === must),
      `${must} is among them`,
    );
  const fields = fieldNames();
  const failures: string[] = [];
  let requests = 0;
  const shared = await world(d);
  const ordered = [...routes.filter((r) => !ends(r)), ...routes.filter(ends)];
  for (const route of ordered) {
    const w = ends(route) ? await world(d) : shared;
    const statuses = new Map<number, number>();
    const out = await fc.check(
      fc.asyncProperty(inputOf(route, w, fields), async (input) => {
        const status = await send(d, w, route, input);
        requests++;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        return status < 500;
      }),
      { numRuns: route.method === 'GET' ? Math.ceil(RUNS / 5) : RUNS, seed: SEED, endOnFailure: false },
    );
    if (out.failed)
      failures.push(
        `${route.method} ${route.path}: ${fc.stringify(out.counterexample)}${out.errorInstance ? ` (${String(out.errorInstance)})` : ''}`,
      );
    t.comment(
      `${route.method} ${route.path}: ${[...statuses]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`,
    );
  }
  t.comment(`${requests} requests to ${routes.length} routes, seed ${SEED}`);
  t.same(failures, [], 'no route answered a 5xx');
  t.notMatch(d.logs(), /"level":"error","msg":"request failed"/, 'no request logged as an internal error');
}
