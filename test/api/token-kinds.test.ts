/**
 * Every token kind against every route (docs/security.md, "Every token kind against every route"):
 * each route the daemon serves (read from its router, test/helpers/routes.ts, so a route added
 * later shows up as a row the table lacks) is called once with each kind of credential alone, and
 * the answer is allowed (anything but 401/403) or refused (401 or 403). The table this measures must
 * equal the one in docs/security.md, row for row; APPREG_WRITE_TOKEN_TABLE=1 writes it there instead.
 * An act-as token refused where the owner's own token is allowed must be refused for being act-as.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { installPlatformApp, PLATFORM_SCOPES } from '../helpers/platform-client.js';
import { secondUser } from '../fixtures/redirects-flow.js';
import { NO_RATE_LIMITS, routesOf, type Route } from '../helpers/routes.js';
import { ROOT } from '../helpers/cli.js';
import { must } from '../../src/must.js';

const KINDS = ['none', 'management', 'CLI login', 'act-as', 'console session', 'bot', 'user'] as const;
type Kind = (typeof KINDS)[number];

const DOC = path.join(ROOT, 'docs/security.md');
const START = '<!-- token-table:start (written by test/api/token-kinds.test.ts) -->';
const END = '<!-- token-table:end -->';

/** A credential of one kind, the workspace user it acts as (for the management base path), a session's form token. */
interface Credential {
  headers: Record<string, string>;
  self: { workspaceId: string; workspaceUserId: string };
  csrf?: string;
}

const json = async (res: Response) => (await res.json()) as Record<string, any>;

/** The official CLI's login of the owner (docs/protocol.md §2.7), the code read as the owner: its access token. */
async function cliLogin(d: TestDaemon, ownerToken: string): Promise<string> {
  const post = (p: string, body: unknown) => d.api(p, { method: 'POST', json: body, noAuth: true }).then(json);
  const email = 'owner@appreg.test';
  const lead = await post('/lead', { email });
  const code = (await json(await d.api(`${d.mgmt}/login-codes?email=${email}`, { headers: { authtoken: ownerToken } })))
    .code as string;
  await post('/lead/activate', { email, code, leadId: lead.id });
  const item = (await post('/lead/login', { leadId: lead.id })).items[0];
  const tokens = await post(`/workspaces/${item.workspace.id}/exchange`, { exchangeToken: item.exchangeToken });
  return must(tokens.token as string | undefined);
}

/** A fresh credential of `kind`: the owner's, or an act-as token of `member`; an app of the owner's installed. */
async function credential(d: TestDaemon, member: { id: string }, kind: Kind): Promise<Credential> {
  const self = { workspaceId: d.workspaceId, workspaceUserId: d.workspaceUserId };
  const owner = must(await d.parts.identity.userRecord(d.workspaceUserId));
  const fresh = async () => (await d.parts.identity.issueToken(owner)).authToken;
  switch (kind) {
    case 'none':
      return { headers: {}, self };
    case 'management':
      return { headers: { authtoken: await fresh() }, self };
    case 'CLI login':
      return { headers: { authtoken: await cliLogin(d, await fresh()) }, self };
    case 'act-as': {
      const issued = await json(await d.api(`${d.mgmt}/act-as`, { method: 'POST', json: { user: member.id } }));
      return {
        headers: { authtoken: issued.authToken as string },
        self: { workspaceId: d.workspaceId, workspaceUserId: member.id },
      };
    }
    case 'console session': {
      const link = await json(
        await d.api(`${d.mgmt}/web/sign-in-links`, { method: 'POST', json: {}, headers: { authtoken: await fresh() } }),
      );
      const landed = await fetch(link.url as string, { redirect: 'manual' });
      const cookie = must(
        must(landed.headers.getSetCookie().find((c) => c.startsWith('appreg_session='))).split(';')[0],
      );
      const home = await (await fetch(`${d.url}/`, { headers: { cookie } })).text();
      return { headers: { cookie }, self, csrf: must(must(/<meta name="csrf" content="([^"]+)">/.exec(home))[1]) };
    }
    case 'bot':
    case 'user': {
      const scopes = [...PLATFORM_SCOPES, 'files:write'];
      const { app, tokens } = await installPlatformApp(d, { userScopes: scopes, botScopes: scopes });
      const token = kind === 'bot' ? must(tokens.botToken) : tokens.accessToken;
      return { headers: { token, 'x-app-token': app.appKey }, self };
    }
  }
}

/** Calls that end the credential they are made with: each call gets a fresh one, after all the others. */
const ends = (r: Route) => /logout|sign-out|\/v1\/app\/(authorization|installation)$/.test(r.path);

const takesForms = (r: Route) => r.path === '/' || /^\/(console|web|access-request)(\/|$)/.test(r.path);

/** One call of `route` with `kind`'s credential alone: its status and, for a JSON answer, its message. */
async function call(
  d: TestDaemon,
  route: Route,
  cred: Credential,
  csrf: string,
): Promise<{ status: number; message?: string }> {
  const self = cred.self;
  const filled = route.path.replace(/:(\w+)/g, (_m, n: string) =>
    n === 'workspaceId' || n === 'installWorkspaceId'
      ? self.workspaceId
      : n === 'workspaceUserId'
        ? self.workspaceUserId
        : 'x',
  );
  const headers: Record<string, string> = { ...cred.headers };
  let body: string | undefined;
  if (route.method !== 'GET') {
    // the same body whoever calls: the browser's pages take forms (with the session's console token,
    // which is no credential without its cookie), the API a JSON object
    if (takesForms(route))
      [headers['content-type'], body] = [
        'application/x-www-form-urlencoded',
        `csrf=${encodeURIComponent(cred.csrf ?? csrf)}`,
      ];
    else [headers['content-type'], body] = ['application/json', '{}'];
  }
  const ac = new AbortController();
  const res = await fetch(d.url + filled, {
    method: route.method,
    headers,
    body,
    redirect: 'manual',
    signal: ac.signal,
  });
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    ac.abort();
    return { status: res.status };
  }
  const text = await res.text();
  let message: string | undefined;
  if (type.startsWith('application/json') && text) message = (JSON.parse(text) as { message?: string }).message;
  return { status: res.status, message };
}

const mark = (status: number) => (status === 401 || status === 403 ? '✗' : '✓');
const rowOf = (r: Route, marks: string[]) => `| \`${r.method} ${r.path}\` | ${marks.join(' | ')} |`;

t.test('every token kind against every route: the table in docs/security.md', async (t) => {
  const d = await startTestDaemon({ config: NO_RATE_LIMITS });
  t.teardown(() => d.stop());
  const member = await secondUser(d);
  const routes = routesOf(d).sort((a, b) =>
    a.path === b.path ? (a.method < b.method ? -1 : 1) : a.path < b.path ? -1 : 1,
  );
  t.ok(routes.length >= 100, `${routes.length} routes read from the daemon's router`);
  const shared = new Map<Kind, Credential>();
  for (const kind of KINDS) shared.set(kind, await credential(d, member, kind));
  const csrf = must(must(shared.get('console session')).csrf);
  const rows = new Map<Route, string[]>();
  const actAsWhy: string[] = [];
  /** Every kind's answer to `route`: side by side on shared credentials; one by one on fresh ones if it ends them. */
  const answersOf = async (route: Route) => {
    const answers = new Map<Kind, { status: number; message?: string }>();
    if (ends(route))
      for (const kind of KINDS) answers.set(kind, await call(d, route, await credential(d, member, kind), csrf));
    else
      await Promise.all(
        KINDS.map(async (kind) => answers.set(kind, await call(d, route, must(shared.get(kind)), csrf))),
      );
    return answers;
  };
  const measuredAll = new Map<Route, Map<Kind, { status: number; message?: string }>>();
  const plain = routes.filter((r) => !ends(r));
  // a few routes at a time (none of them ends a credential), then those that do
  for (let i = 0; i < plain.length; i += 4)
    await Promise.all(plain.slice(i, i + 4).map(async (r) => measuredAll.set(r, await answersOf(r))));
  for (const r of routes.filter(ends)) measuredAll.set(r, await answersOf(r));
  for (const [route, answers] of measuredAll) {
    rows.set(
      route,
      KINDS.map((k) => mark(must(answers.get(k)).status)),
    );
    const asActAs = must(answers.get('act-as'));
    if (
      mark(must(answers.get('management')).status) === '✓' &&
      mark(asActAs.status) === '✗' &&
      !/act-as token/.test(asActAs.message ?? '')
    )
      actAsWhy.push(`${route.method} ${route.path}: ${asActAs.status} ${asActAs.message ?? ''}`);
  }
  t.same(actAsWhy, [], 'an act-as token is refused for being one where the owner’s token is allowed');

  const measured = routes.map((r) => rowOf(r, must(rows.get(r))));
  const table = [`| route | ${KINDS.join(' | ')} |`, `|---|${KINDS.map(() => ':-:').join('|')}|`, ...measured].join(
    '\n',
  );
  const doc = fs.readFileSync(DOC, 'utf8');
  const at = doc.indexOf(START);
  const end = doc.indexOf(END);
  t.ok(at >= 0 && end > at, 'docs/security.md holds the table between its markers');
  if (process.env.APPREG_WRITE_TOKEN_TABLE === '1') {
    fs.writeFileSync(DOC, `${doc.slice(0, at + START.length)}\n${table}\n${doc.slice(end)}`);
    t.pass('the table was written to docs/security.md');
    return;
  }
  const documented = doc
    .slice(at + START.length, end)
    .split('\n')
    .filter((l) => l.startsWith('| `'));
  const missing = measured.filter((l) => !documented.includes(l));
  const stale = documented.filter((l) => !measured.includes(l));
  t.same(
    { missing, stale },
    { missing: [], stale: [] },
    'docs/security.md matches what the daemon does (APPREG_WRITE_TOKEN_TABLE=1 writes what it measured)',
  );

  // the act-as column is exactly the list AS1 gives, beside the calls that need no token at all
  const allowed = [...rows]
    .filter(([, marks]) => marks[KINDS.indexOf('act-as')] === '✓' && marks[KINDS.indexOf('none')] === '✗')
    .map(([r]) => `${r.method} ${r.path}`);
  t.same(
    allowed.sort(),
    [
      'GET /auth/whoami',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/apps/authorizations',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/channels',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/channels/:channel/messages',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/channels/:channel/messages/:messageId/replies',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/oauth2/grant',
      'GET /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/users',
      'POST /auth/logout',
      'POST /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/channels/:channel/messages',
      'POST /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/messages/:messageId/reactions',
      'POST /workspaces/:workspaceId/workspaceUsers/:workspaceUserId/oauth2/code-state',
    ].sort(),
    'an act-as token is allowed only the calls AS1 lists (beside those that take no token)',
  );
});
